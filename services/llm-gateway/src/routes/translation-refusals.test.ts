import { createInProcessBus } from '@platform/bus';
import { createEmbeddedStore } from '@platform/store';
import { type ProviderSimulator, startProviderSimulator } from '@platform/testkit';
import request from 'supertest';
import { fakeQuota, orgSettings, ownerHeaders, startGatewayService } from '../../test/gateway-instance';

/**
 * Requests the translations of the Responses API and the Messages API cannot send a provider as they are, through
 * the gateway's routes against the provider simulator: each is the caller's 400, in the route's own error shape,
 * before any provider call, never a provider's refusal answered as a 502.
 */
describe('what the Responses and Messages translations refuse before any provider call', () => {
  let sim: ProviderSimulator;
  let gateway: Awaited<ReturnType<typeof startGatewayService>>;
  const bus = createInProcessBus();
  const file = {
    providers: [
      { name: 'sim', type: 'openai', baseUrl: '', apiKey: 'sk-sim' },
      { name: 'claude', type: 'anthropic', baseUrl: '', apiKey: 'sk-ant' },
    ],
    models: [
      { model_id: 'chat/sim', type: 'completion', deployments: [{ provider: 'sim', model: 'gpt-x' }] },
      {
        model_id: 'chat/claude',
        type: 'completion',
        deployments: [{ provider: 'claude', model: 'claude-x' }],
      },
    ],
  };

  beforeAll(async () => {
    sim = await startProviderSimulator({ port: 0 });
    for (const p of file.providers)
      p.baseUrl = p.type === 'openai' ? sim.openaiBaseUrl : sim.anthropicBaseUrl;
    gateway = await startGatewayService({
      file,
      store: createEmbeddedStore(),
      bus,
      fetch: fakeQuota((slug) => orgSettings(slug)),
      env: { LLM_GATEWAY_RETRY_BASE_MS: '1' },
    });
  }, 30_000);
  afterAll(async () => {
    await gateway?.stop();
    await bus.close();
    await sim?.close();
  });
  beforeEach(() => sim.reset());

  const post = (route: string, body: Record<string, unknown>) =>
    request(gateway.service.handler).post(route).set(ownerHeaders('acme')).send(body);

  it('a tool_result answering no earlier tool_use is an invalid_request_error naming it, before any provider call', async () => {
    for (const model of ['chat/sim', 'chat/claude']) {
      const res = await post('/v1/messages', {
        model,
        max_tokens: 50,
        messages: [
          { role: 'user', content: 'What is the weather?' },
          { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_1', name: 'weather', input: {} }] },
          {
            role: 'user',
            content: [
              { type: 'tool_result', tool_use_id: 'toolu_1', content: 'sunny' },
              { type: 'tool_result', tool_use_id: 'toolu_unknown', content: 'rain' },
            ],
          },
        ],
      });
      expect(res.status).toBe(400);
      expect(res.body).toMatchObject({
        type: 'error',
        error: {
          type: 'invalid_request_error',
          details: {
            error_code: 'INVALID_BODY',
            issues: [{ field: 'messages.2.content.1.tool_use_id', message: expect.any(String) }],
          },
        },
      });
    }
    // count_tokens reads the conversation as messages does
    const counted = await post('/v1/messages/count_tokens', {
      model: 'chat/sim',
      messages: [{ role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_x', content: 'r' }] }],
    });
    expect(counted.status).toBe(400);
    expect(counted.body.error.type).toBe('invalid_request_error');
    expect(sim.requests()).toHaveLength(0);
  });

  it('a message with no content block is an invalid_request_error, but for a last assistant turn (a prefill)', async () => {
    for (const model of ['chat/sim', 'chat/claude']) {
      const res = await post('/v1/messages', {
        model,
        max_tokens: 50,
        messages: [
          { role: 'user', content: [] },
          { role: 'assistant', content: 'ok' },
          { role: 'user', content: 'again' },
        ],
      });
      expect(res.status).toBe(400);
      expect(res.body.error).toMatchObject({
        type: 'invalid_request_error',
        details: { error_code: 'INVALID_BODY', issues: [{ field: 'messages.0.content' }] },
      });
    }
    expect(sim.requests()).toHaveLength(0);
    const prefill = await post('/v1/messages', {
      model: 'chat/sim',
      max_tokens: 50,
      messages: [
        { role: 'user', content: 'hello' },
        { role: 'assistant', content: [] },
      ],
    });
    expect(prefill.status).toBe(200);
  });

  it('an input that gives the model nothing to read (reasoning items alone) is a 400 naming it, never a 502', async () => {
    for (const model of ['chat/sim', 'chat/claude']) {
      const res = await post('/v1/responses', {
        model,
        input: [{ type: 'reasoning', id: 'rs_1', summary: [] }],
      });
      expect(res.status).toBe(400);
      expect(res.body).toMatchObject({ code: 'INVALID_BODY', details: { issues: [{ field: 'input' }] } });
    }
    expect(sim.requests()).toHaveLength(0);
    // the instructions alone are something to read
    const instructed = await post('/v1/responses', {
      model: 'chat/sim',
      instructions: 'Say hello',
      input: [{ type: 'reasoning', id: 'rs_1', summary: [] }],
    });
    expect(instructed.status).toBe(200);
  });

  it("an input holding one item id twice is a 400 (OpenAI's duplicate item): its input_items pages would loop", async () => {
    const msg = (id: string, text: string) => ({ id, type: 'message', role: 'user', content: text });
    const res = await post('/v1/responses', {
      model: 'chat/sim',
      input: [msg('a', 'one'), msg('x', 'two'), msg('b', 'three'), msg('x', 'four'), msg('c', 'five')],
    });
    // stored, its input_items listed by 2 from the last (desc) would answer [b, x] after x again and again
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({
      code: 'INVALID_BODY',
      details: { issues: [{ field: 'input', message: expect.stringContaining('x') }] },
    });
    expect(sim.requests()).toHaveLength(0);
  });

  it('an input item id a conversation could not keep (over 200 characters, not a string) is a 400 naming it', async () => {
    for (const id of ['x'.repeat(201), 42]) {
      const res = await post('/v1/responses', {
        model: 'chat/sim',
        input: [{ type: 'message', role: 'user', content: 'hello', id }],
      });
      expect(res.status).toBe(400);
      expect(res.body).toMatchObject({
        status: 400,
        details: { issues: [expect.objectContaining({ field: 'input.0.id' })] },
      });
    }
    expect(sim.requests()).toHaveLength(0);
  });
  it('a function_call whose arguments are not a string is a 400 naming them, never sent as empty arguments', async () => {
    for (const model of ['chat/sim', 'chat/claude']) {
      for (const args of [5, { city: 'Paris' }, null]) {
        const res = await post('/v1/responses', {
          model,
          input: [
            { type: 'message', role: 'user', content: 'What is the weather?' },
            { type: 'function_call', call_id: 'call_1', name: 'weather', arguments: args },
            { type: 'function_call_output', call_id: 'call_1', output: 'sunny' },
          ],
        });
        expect([model, args, res.status]).toEqual([model, args, 400]);
        expect(res.body).toMatchObject({
          code: 'INVALID_BODY',
          details: { issues: [{ field: 'input.1.arguments', message: expect.stringContaining('string') }] },
        });
      }
    }
    expect(sim.requests()).toHaveLength(0);
  });

  it('a tool_choice no tool answers is a 400 naming it on both translations, never the provider’s 502', async () => {
    const responses: Array<[Record<string, unknown>, string]> = [
      [
        { tools: [{ type: 'function', name: 'f' }], tool_choice: { type: 'function', name: 'g' } },
        'tool_choice.name',
      ],
      [{ tool_choice: { type: 'function', name: 'f' } }, 'tool_choice.name'],
      [{ tool_choice: 'required' }, 'tool_choice'],
    ];
    const messages: Array<[Record<string, unknown>, string]> = [
      [
        {
          tools: [{ name: 'f', input_schema: { type: 'object' } }],
          tool_choice: { type: 'tool', name: 'g' },
        },
        'tool_choice.name',
      ],
      [{ tool_choice: { type: 'tool', name: 'f' } }, 'tool_choice.name'],
      [{ tool_choice: { type: 'any' } }, 'tool_choice'],
    ];
    for (const model of ['chat/sim', 'chat/claude']) {
      for (const [extra, field] of responses) {
        const res = await post('/v1/responses', { model, input: 'hello', ...extra });
        expect([model, extra, res.status]).toEqual([model, extra, 400]);
        expect(res.body).toMatchObject({ code: 'INVALID_BODY', details: { issues: [{ field }] } });
      }
      for (const [extra, field] of messages) {
        const res = await post('/v1/messages', {
          model,
          max_tokens: 50,
          messages: [{ role: 'user', content: 'hello' }],
          ...extra,
        });
        expect([model, extra, res.status]).toEqual([model, extra, 400]);
        expect(res.body.error).toMatchObject({
          type: 'invalid_request_error',
          details: { error_code: 'INVALID_BODY', issues: [{ field }] },
        });
      }
    }
    expect(sim.requests()).toHaveLength(0);
  });
});
