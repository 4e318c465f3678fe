import { type GatewayWorld, startGatewayWorld } from './support';

/**
 * `model: "auto"` (decision 0120): the organization's routing chooses the model of each request, by rules on the
 * request or by the cheapest model that can serve it, within everything governance allows the caller; through the
 * edge, as an application calls it.
 */
describe('model routing (model: "auto"), through the edge', () => {
  let w: GatewayWorld;
  beforeAll(async () => {
    w = await startGatewayWorld({
      models: [
        {
          model_id: 'sim/tiny',
          type: 'completion',
          provider_config: { provider: 'sim', model: 'tiny-sim' },
          pricing: { input_per_million: 0.01, output_per_million: 0.01 },
          capabilities: { vision: false, tools: false },
          limits: { context_window: 60 },
        },
      ],
    });
  });
  afterAll(() => w?.stop());

  const patch = (as: { bearer: string }, models: unknown) =>
    w.call('gateway', 'PATCH', '/v1/quotas/settings', as, { models });
  const ask = (as: { bearer: string } | { apiKey: string }, extra: Record<string, unknown> = {}) =>
    w.call('gateway', 'POST', '/v1/chat/completions', as, {
      model: 'auto',
      messages: [{ role: 'user', content: 'hello' }],
      ...extra,
    });
  const served = (reply: Awaited<ReturnType<typeof ask>>) => ({
    status: reply.status,
    model: reply.body.model,
    routed: reply.headers.get('x-platform-model-routed'),
  });

  it('cost_optimized: the cheapest model the caller may use that can serve what the request uses', async () => {
    const { owner } = await w.org('routing-cost');
    const as = { bearer: owner.token };
    expect((await patch(as, { routing: { strategy: 'cost_optimized' } })).body.models.routing).toEqual({
      strategy: 'cost_optimized',
    });
    expect(served(await ask(as))).toEqual({ status: 200, model: 'sim/tiny', routed: 'auto -> sim/tiny' });
    expect(w.sim.requests().at(-1)?.model).toBe('tiny-sim');

    // what the cheapest cannot serve goes to the next cheapest: images, tools, a prompt over its context window
    const image = {
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'what is this?' },
            { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0KGgo=' } },
          ],
        },
      ],
    };
    expect(served(await ask(as, image)).model).toBe('sim/cheap');
    const tools = {
      tools: [{ type: 'function', function: { name: 'lookup', parameters: { type: 'object' } } }],
    };
    expect(served(await ask(as, tools)).model).toBe('sim/cheap');
    const long = { messages: [{ role: 'user', content: 'word '.repeat(200) }] };
    expect(served(await ask(as, long)).model).toBe('sim/cheap');

    // within the organization's allowed models, and an API key's own list
    await patch(as, { allowed: ['sim/cheap', 'sim/gpt', 'sim/tiny'] });
    const key = await w.orgKey(owner, 'routing-cost', 'app');
    await patch(as, { by_api_key: { [key.id]: ['sim/gpt'] } });
    expect(served(await ask({ apiKey: key.apiKey }))).toEqual({
      status: 200,
      model: 'sim/gpt',
      routed: 'auto -> sim/gpt',
    });

    // streamed, with the official SDK: the stream names the routed model
    const stream = await w
      .client({ bearer: owner.token })
      .chat.completions.create({ model: 'auto', messages: [{ role: 'user', content: 'hi' }], stream: true });
    const models = new Set<string>();
    for await (const chunk of stream) models.add(chunk.model);
    expect([...models]).toEqual(['sim/tiny']);
  });

  it('rules: the first matching rule, else the default; a rule the caller may not use gives the default', async () => {
    const { owner } = await w.org('routing-rules');
    const as = { bearer: owner.token };
    const set = await patch(as, {
      defaults: { completions: 'sim/cheap' },
      routing: {
        strategy: 'rules',
        rules: [
          { condition: 'messages_count', operator: '>=', threshold: 3, model: 'sim/gpt' },
          { condition: 'prompt_tokens', operator: '>', threshold: 100, model: 'sim/claude' },
        ],
      },
    });
    expect(set.status).toBe(200);
    expect(served(await ask(as))).toEqual({ status: 200, model: 'sim/cheap', routed: 'auto -> sim/cheap' });
    const conversation = {
      messages: [
        { role: 'user', content: 'hello' },
        { role: 'assistant', content: 'hi' },
        { role: 'user', content: 'and now?' },
      ],
    };
    expect(served(await ask(as, conversation)).model).toBe('sim/gpt');
    expect(served(await ask(as, { messages: [{ role: 'user', content: 'word '.repeat(200) }] })).model).toBe(
      'sim/claude',
    );
    // the rule's model outside allowed: the default serves it, as Prisme.ai's gateway does
    await patch(as, { allowed: ['sim/cheap', 'sim/claude'] });
    expect(served(await ask(as, conversation))).toEqual({
      status: 200,
      model: 'sim/cheap',
      routed: 'auto -> sim/cheap',
    });
    // text completions route alike (one message)
    const text = await w.call('gateway', 'POST', '/v1/completions', as, {
      model: 'auto',
      prompt: 'def f():',
    });
    expect(text.headers.get('x-platform-model-routed')).toBe('auto -> sim/cheap');
  });

  it('auto is the default without routing, and only for completions; routing settings are checked', async () => {
    const { owner } = await w.org('routing-none');
    const as = { bearer: owner.token };
    // neither routing nor a default: the refusal says what `auto` lacks, not that the caller gave no model
    const unrouted = await ask(as);
    expect(unrouted.body).toMatchObject({
      status: 400,
      code: 'INVALID_BODY',
      message:
        "model 'auto' has no model to serve it: the organization has no routing configured, and no default completions model is set (PATCH /v1/quotas/settings models.routing or models.defaults)",
      details: { issues: [{ field: 'model', message: expect.stringContaining('auto') }] },
    });
    await patch(as, { defaults: { completions: 'sim/gpt' } });
    expect(served(await ask(as))).toEqual({ status: 200, model: 'sim/gpt', routed: 'auto -> sim/gpt' });
    const embedding = await w.call('gateway', 'POST', '/v1/embeddings', as, { model: 'auto', input: 'x' });
    expect(embedding.body).toMatchObject({ status: 404, code: 'MODEL_NOT_FOUND' });

    for (const routing of [
      { strategy: 'magic' },
      {
        strategy: 'rules',
        rules: [{ condition: 'messages_count', operator: '!=', threshold: 1, model: 'x' }],
      },
      { strategy: 'rules', rules: [{ condition: 'mood', operator: '>', threshold: 1, model: 'x' }] },
      {
        strategy: 'rules',
        rules: [{ condition: 'prompt_tokens', operator: '>', threshold: -1, model: 'x' }],
      },
    ]) {
      const refused = await patch(as, { routing });
      expect(refused.status).toBe(400);
      expect(refused.body.details.issues[0].field).toContain('models.routing');
    }
    await patch(as, { routing: { strategy: 'cost_optimized' } });
    expect((await patch(as, { routing: null })).body.models.routing).toBeNull();

    // a catalogue model may not take a name requests give
    const admin = { bearer: (await w.platformAdmin()).token };
    const named = await w.call('gateway', 'POST', '/v1/models', admin, {
      model_id: 'auto',
      type: 'completion',
      provider_config: { provider: 'sim', model: 'x' },
    });
    expect(named.status).toBe(400);
  });

  const patchSettings = (as: { bearer: string }, body: unknown) =>
    w.call('gateway', 'PATCH', '/v1/quotas/settings', as, body);
  const hello = [{ role: 'user', content: 'hello' }];

  it("counts an auto request's tokens as its message is served: routed, not refused for want of a default", async () => {
    const { owner } = await w.org('route-count');
    const as = { bearer: owner.token };
    expect((await patchSettings(as, { models: { routing: { strategy: 'cost_optimized' } } })).status).toBe(
      200,
    );
    const message = await w.call('gateway', 'POST', '/v1/messages', as, {
      model: 'auto',
      max_tokens: 50,
      messages: hello,
    });
    expect(message.status).toBe(200);
    expect(message.body.model).toBe('sim/tiny');
    const counted = await w.call('gateway', 'POST', '/v1/messages/count_tokens', as, {
      model: 'auto',
      messages: hello,
    });
    expect(counted.status).toBe(200);
    expect(counted.body.input_tokens).toBeGreaterThan(0);
    // a rule naming a model the caller may not use: the default, which the organization does not have
    await patchSettings(as, {
      models: {
        allowed: ['sim/tiny'],
        routing: {
          strategy: 'rules',
          rules: [{ condition: 'messages_count', operator: '>=', threshold: 1, model: 'sim/gpt' }],
        },
      },
    });
    const refused = await w.call('gateway', 'POST', '/v1/messages/count_tokens', as, {
      model: 'auto',
      messages: hello,
    });
    expect(refused.status).toBe(400);
    expect(refused.body.error.type).toBe('invalid_request_error');
  });

  it('names the model routing chose in x-platform-model-routed, and the downgrade that followed apart', async () => {
    const { owner } = await w.org('route-downgrade');
    const as = { bearer: owner.token };
    await patchSettings(as, {
      policy: 'soft_downgrade',
      models: {
        defaults: { completions: 'sim/gpt' },
        allowed: ['sim/cheap'],
        downgrade: { 'sim/gpt': 'sim/cheap' },
      },
    });
    const answer = await w.call('gateway', 'POST', '/v1/chat/completions', as, {
      model: 'auto',
      messages: hello,
    });
    expect(answer.status).toBe(200);
    expect(answer.body.model).toBe('sim/cheap');
    expect(answer.headers.get('x-platform-model-routed')).toBe('auto -> sim/gpt');
    expect(answer.headers.get('x-platform-model-downgraded')).toBe('sim/gpt -> sim/cheap');
  });

  it("takes a rerank's auto as the organization's default, and says so", async () => {
    const { owner } = await w.org('route-rerank');
    const as = { bearer: owner.token };
    await patchSettings(as, {
      models: { defaults: { completions: 'sim/cheap' }, routing: { strategy: 'cost_optimized' } },
    });
    const ranked = await w.call('gateway', 'POST', '/v1/rerank', as, {
      model: 'auto',
      query: 'capital of France',
      documents: ['Paris', 'Berlin'],
    });
    expect(ranked.status).toBe(200);
    expect(ranked.body.model).toBe('sim/cheap');
    expect(ranked.headers.get('x-platform-model-routed')).toBe('auto -> sim/cheap');
  });
});
