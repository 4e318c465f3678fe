import { clearOfMinuteEnd, waitFor } from '@platform/testkit';
import { APIError } from 'openai';
import { zodTextFormat } from 'openai/helpers/zod';
import type { ResponseInputItem, ResponseStreamEvent } from 'openai/resources/responses/responses';
import { z } from 'zod';
import { PARIS_WEATHER_ROUND_TRIP, WEATHER } from './responses-fixtures';
import {
  accessToken,
  type GatewayWorld,
  gauge,
  leaveStreamAfterFirstChunk,
  minuteNow,
  orgApiKey,
  recordCompletions,
  sseEvents,
  startGatewayWorld,
} from './support';

type Caller = { bearer: string } | { apiKey: string };

/**
 * OpenAI's Responses API as a user of the official `openai` SDK meets it through the edge: `responses.create`,
 * `responses.stream` and `responses.parse` on every kind of completion model (an OpenAI-protocol provider, an
 * Anthropic one, the built-in mock), served by the gateway's chat path with its governance, quotas, budget cut
 * and accounting (decision 0106).
 */
describe('the Responses API through the edge', () => {
  let w: GatewayWorld;
  let owner: { userId: string; token: string };

  beforeAll(async () => {
    w = await startGatewayWorld();
    ({ owner } = await w.org('responses-e2e'));
  });
  afterAll(() => w?.stop());
  afterEach(() => w.sim.reset());

  /** POST /v1/responses with fetch: the raw answer */
  const post = (as: Caller, body: Record<string, unknown>) =>
    w.call('gateway', 'POST', '/v1/responses', as, body);

  it('answers a response object, with the instructions as a system message and metadata echoed, never sent', async () => {
    const client = w.client({ bearer: owner.token });
    const asked = Math.floor(Date.now() / 1000);
    const answer = await client.responses.create({
      model: 'sim/gpt',
      instructions: 'Be brief',
      input: 'Say hello to the gateway',
      max_output_tokens: 200,
      temperature: 0.5,
      metadata: { ticket: 'T-1' },
      store: true,
    });
    expect(answer).toMatchObject({
      id: expect.stringMatching(/^resp_/),
      object: 'response',
      status: 'completed',
      model: 'sim/gpt',
      error: null,
      incomplete_details: null,
      instructions: 'Be brief',
      metadata: { ticket: 'T-1' },
      max_output_tokens: 200,
      temperature: 0.5,
      tools: [],
      tool_choice: 'auto',
      parallel_tool_calls: true,
      text: { format: { type: 'text' } },
    });
    // the second it was made, between the question and the answer however long a loaded machine took
    expect(answer.created_at).toBeGreaterThanOrEqual(asked);
    expect(answer.created_at).toBeLessThanOrEqual(Date.now() / 1000);
    expect(answer.output).toEqual([
      {
        id: expect.stringMatching(/^msg_/),
        type: 'message',
        status: 'completed',
        role: 'assistant',
        content: [{ type: 'output_text', text: expect.any(String), annotations: [], logprobs: [] }],
      },
    ]);
    expect(answer.output_text.length).toBeGreaterThan(0);
    const usage = answer.usage as unknown as Record<string, number>;
    expect(usage).toMatchObject({
      input_tokens: expect.any(Number),
      input_tokens_details: { cached_tokens: 0 },
      output_tokens: expect.any(Number),
      output_tokens_details: { reasoning_tokens: 0 },
      duration_ms: expect.any(Number),
    });
    expect(usage.total_tokens).toBe(usage.input_tokens! + usage.output_tokens!);
    expect(usage.cost).toBeCloseTo((usage.input_tokens! * 2 + usage.output_tokens! * 8) / 1e6, 12);

    const sent = w.sim.requests().at(-1)!;
    expect(sent).toMatchObject({ api: 'openai', endpoint: 'chat', model: 'gpt-sim' });
    expect(sent.body).toEqual({
      model: 'gpt-sim',
      stream: false,
      messages: [
        { role: 'system', content: 'Be brief' },
        { role: 'user', content: 'Say hello to the gateway' },
      ],
      max_completion_tokens: 200,
      temperature: 0.5,
    });
  });

  it('streams the Responses events the SDK assembles, each with its sequence number', async () => {
    const client = w.client({ bearer: owner.token });
    const stream = client.responses.stream({ model: 'sim/gpt', input: 'Stream a few words please' });
    const seen: ResponseStreamEvent[] = [];
    for await (const event of stream) seen.push(event);
    const final = await stream.finalResponse();

    expect(seen.map((e) => e.sequence_number)).toEqual(seen.map((_, i) => i));
    const types = seen.map((e) => e.type);
    const deltas = types.filter((t) => t === 'response.output_text.delta').length;
    expect(deltas).toBeGreaterThan(1);
    expect(types).toEqual([
      'response.created',
      'response.in_progress',
      'response.output_item.added',
      'response.content_part.added',
      ...Array(deltas).fill('response.output_text.delta'),
      'response.output_text.done',
      'response.content_part.done',
      'response.output_item.done',
      'response.completed',
    ]);
    const text = seen
      .filter((e) => e.type === 'response.output_text.delta')
      .map((e) => (e as { delta: string }).delta)
      .join('');
    expect(final.status).toBe('completed');
    expect(final.output_text).toBe(text);
    expect(final.model).toBe('sim/gpt');
    expect(final.id).toBe((seen[0] as { response: { id: string } }).response.id);
    expect(final.usage).toMatchObject({
      input_tokens: expect.any(Number),
      output_tokens: expect.any(Number),
      cost: expect.any(Number),
    });

    // create({stream: true}) gives the same events, raw
    const raw = await client.responses.create({ model: 'mock/chat', input: 'Hello mock', stream: true });
    let streamed = '';
    let completed: { output_text?: string; output: unknown[] } | null = null;
    for await (const event of raw) {
      if (event.type === 'response.output_text.delta') streamed += event.delta;
      if (event.type === 'response.completed') completed = event.response;
    }
    const plain = await client.responses.create({ model: 'mock/chat', input: 'Hello mock' });
    expect(streamed).toBe(plain.output_text);
    expect(completed!.output).toHaveLength(1);
  });

  it('a function call round trip: the call as an output item, its output sent back with the conversation', async () => {
    const client = w.client({ bearer: owner.token });
    for (const model of ['sim/gpt', 'sim/claude', 'mock/chat']) {
      const ask = { role: 'user' as const, content: 'What is the weather in Paris? Use the tool.' };
      const first = await client.responses.create({ model, input: [ask], tools: [WEATHER] });
      expect(first.status).toBe('completed');
      const call = first.output.find((item) => item.type === 'function_call');
      expect({ model, call }).toEqual({
        model,
        call: {
          id: expect.stringMatching(/^fc_/),
          type: 'function_call',
          status: 'completed',
          call_id: expect.any(String),
          name: 'get_weather',
          arguments: expect.any(String),
        },
      });
      expect(JSON.parse(call!.type === 'function_call' ? call!.arguments : '')).toMatchObject({
        city: expect.any(String),
      });

      const second = await client.responses.create({
        model,
        tools: [WEATHER],
        input: [
          ask,
          // the SDK's types keep output and input items apart; the wire takes one answer's output as input
          ...(first.output as ResponseInputItem[]),
          {
            type: 'function_call_output',
            call_id: (call as { call_id: string }).call_id,
            output: 'Sunny, 21 C',
          },
        ],
      });
      expect(second.status).toBe('completed');
      expect(second.output.map((item) => item.type)).toEqual(['message']);
      expect(second.output_text.length).toBeGreaterThan(0);
    }
    // what the OpenAI-protocol provider was sent on the second turn: chat's own tool round trip
    const turns = w.sim.requests().filter((r) => r.api === 'openai');
    expect((turns.at(-1)!.body as { messages: unknown[] }).messages).toEqual(PARIS_WEATHER_ROUND_TRIP);
    expect((turns.at(-1)!.body as { tools: unknown }).tools).toEqual([
      {
        type: 'function',
        function: {
          name: 'get_weather',
          description: 'The weather in a city',
          parameters: WEATHER.parameters,
          strict: true,
        },
      },
    ]);

    // streamed: the call's arguments arrive as deltas and the final response holds the whole call
    const streamed = await client.responses
      .stream({ model: 'sim/gpt', input: [{ role: 'user', content: 'Weather in Oslo?' }], tools: [WEATHER] })
      .finalResponse();
    const item = streamed.output.find((o) => o.type === 'function_call') as {
      arguments: string;
      name: string;
    };
    expect(item.name).toBe('get_weather');
    expect(JSON.parse(item.arguments)).toEqual({ city: 'example city' });
  });

  it('text.format json_schema gives the SDK parsed output, on an Anthropic model (plain and streamed) and the mock', async () => {
    const City = z.object({ city: z.string(), population: z.number() });
    const client = w.client({ bearer: owner.token });
    const ask = {
      model: 'sim/claude',
      input: 'The biggest city of Norway?',
      text: { format: zodTextFormat(City, 'city') },
    };
    const plain = await client.responses.parse(ask);
    expect(plain.status).toBe('completed');
    expect(plain.output_parsed).toEqual({ city: 'example city', population: 1 });
    const sent = w.sim.requests().at(-1)!;
    expect(sent).toMatchObject({ api: 'anthropic', model: 'claude-sim' });
    expect(sent.body).toMatchObject({ tool_choice: { type: 'tool', name: 'platform_json_response' } });

    const streamed = await client.responses.stream(ask).finalResponse();
    expect(streamed.output_parsed).toEqual({ city: 'example city', population: 1 });

    const mock = await client.responses.parse({ ...ask, model: 'mock/chat' });
    expect(City.safeParse(mock.output_parsed).success).toBe(true);
  });

  it('an Anthropic model answers plain and streamed, its usage and price its own', async () => {
    const client = w.client({ bearer: owner.token });
    const plain = await client.responses.create({
      model: 'sim/claude',
      instructions: 'Be brief',
      input: [{ role: 'user', content: [{ type: 'input_text', text: 'Hello Claude' }] }],
    });
    expect(plain.output_text.length).toBeGreaterThan(0);
    const u = plain.usage as unknown as Record<string, number>;
    expect(u.cost).toBeCloseTo((u.input_tokens! * 3 + u.output_tokens! * 15) / 1e6, 12);
    expect(w.sim.requests().at(-1)!.body).toMatchObject({
      system: 'Be brief',
      messages: [{ role: 'user', content: [{ type: 'text', text: 'Hello Claude' }] }],
    });

    const final = await client.responses
      .stream({ model: 'sim/claude', input: 'Stream from Claude' })
      .finalResponse();
    expect(final.status).toBe('completed');
    expect(final.output_text.length).toBeGreaterThan(0);
    expect(final.usage?.total_tokens).toBeGreaterThan(0);
  });

  it('max_output_tokens reached: status incomplete with its reason, plain and streamed', async () => {
    const client = w.client({ bearer: owner.token });
    const ask = { model: 'sim/gpt', input: 'Tell me a long story about the sea', max_output_tokens: 2 };
    const plain = await client.responses.create(ask);
    expect(plain).toMatchObject({
      status: 'incomplete',
      incomplete_details: { reason: 'max_output_tokens' },
    });
    expect(plain.output[0]).toMatchObject({ type: 'message', status: 'incomplete' });
    const raw = await post({ bearer: owner.token }, { ...ask, stream: true });
    const last = sseEvents(raw.body as string).at(-1)!;
    expect(last.event).toBe('response.incomplete');
    expect(last.data.response).toMatchObject({
      status: 'incomplete',
      incomplete_details: { reason: 'max_output_tokens' },
    });
  });

  it('each response is counted once by llm-quota: /v1/quotas/usage shows exactly their tokens and cost', async () => {
    const { owner: counter } = await w.org('responses-count');
    const as = { bearer: counter.token };
    const client = w.client(as);
    const sentIn = minuteNow();
    let tokens = 0;
    let cost = 0;
    const add = (usage: unknown) => {
      const u = usage as Record<string, number>;
      tokens += u.total_tokens!;
      cost += u.cost!;
    };
    add((await client.responses.create({ model: 'sim/gpt', input: 'count me' })).usage);
    add(
      (await client.responses.stream({ model: 'sim/gpt', input: 'count me streamed' }).finalResponse()).usage,
    );
    add((await client.responses.create({ model: 'sim/claude', input: 'count me too' })).usage);
    const usage = await w.counted('responses-count', as, { requests: 3, tokens, sentIn });
    if (minuteNow() === sentIn) expect(gauge(usage, 'llm.rpm').used).toBe(3);
    expect(gauge(usage, 'llm.monthly_tokens').used).toBe(tokens);
    expect(gauge(usage, 'llm.monthly_cost').used).toBeCloseTo(cost, 9);
  });

  it('a hard_block stream is cut at the monthly token budget: response.failed, then the envelope the SDK raises', async () => {
    const long = Array.from({ length: 400 }, (_, i) => `word${i}`).join(' ');
    w.sim.script([{ match: { model: 'gpt-sim', stream: true }, reply: { content: long } }]);
    // the SDK raises the envelope, as it does a chat stream's error chunk
    const { owner: sdkUser } = await w.org('responses-cut-sdk', 'budget');
    const err = await w
      .client({ bearer: sdkUser.token })
      .responses.stream({ model: 'sim/gpt', input: 'long answer' })
      .finalResponse()
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(APIError);
    expect((err as APIError).error).toMatchObject({ code: 'MONTHLY_QUOTA_EXCEEDED', status: 429 });

    const { owner: budgeted } = await w.org('responses-cut', 'budget');
    const as = { bearer: budgeted.token };
    const sentIn = minuteNow();
    const raw = await post(as, { model: 'sim/gpt', input: 'long answer', stream: true });
    const seen = sseEvents(raw.body as string);
    const [failed, error] = seen.slice(-2);
    expect(failed!.event).toBe('response.failed');
    expect(failed!.data.response).toMatchObject({
      status: 'failed',
      error: { code: 'rate_limit_exceeded', message: expect.stringContaining('monthly token budget') },
      output: [{ type: 'message', status: 'incomplete' }],
    });
    expect(error).toMatchObject({
      event: 'error',
      data: {
        type: 'error',
        code: 'MONTHLY_QUOTA_EXCEEDED',
        error: { code: 'MONTHLY_QUOTA_EXCEEDED', details: { key: 'llm.monthly_tokens', limit: 400 } },
      },
    });
    expect(seen.map((e) => e.data.sequence_number)).toEqual(seen.map((_, i) => i));

    // the month's counter passes the budget by at most one chunk; the next request is refused
    const usage = await w.counted('responses-cut', as, { requests: 1, tokens: 401, sentIn });
    const used = gauge(usage, 'llm.monthly_tokens').used;
    expect(used).toBeGreaterThan(400);
    expect(used).toBeLessThan(440);
    const refused = await post(as, { model: 'sim/gpt', input: 'more', stream: true });
    expect(refused.status).toBe(429);
    expect(refused.body).toMatchObject({ code: 'MONTHLY_QUOTA_EXCEEDED' });
  });

  it('refuses what the translation cannot serve: 400 INVALID_BODY naming each field, before any provider call', async () => {
    const as = { bearer: owner.token };
    const refusals: Array<[Record<string, unknown>, string]> = [
      [{ conversation: 'conv_1', previous_response_id: 'resp_1' }, 'conversation'],
      [{ background: true }, 'background'],
      [{ tools: [{ type: 'web_search' }] }, 'tools.0.type'],
      [{ tools: [{ type: 'file_search', vector_store_ids: ['vs_1'] }] }, 'tools.0.type'],
      [{ tools: [{ type: 'code_interpreter', container: { type: 'auto' } }] }, 'tools.0.type'],
      [{ tool_choice: { type: 'web_search_preview' } }, 'tool_choice.type'],
      [{ include: ['reasoning.encrypted_content', 'message.output_text.logprobs'] }, 'include'],
      [{ truncation: 'auto' }, 'truncation'],
      [{ prompt: { id: 'pmpt_1' } }, 'prompt'],
      [{ top_logprobs: 2 }, 'top_logprobs'],
      [{ input: [{ type: 'item_reference', id: 'msg_1' }] }, 'input.0.type'],
      [
        { input: [{ role: 'user', content: [{ type: 'input_file', file_id: 'file_1' }] }] },
        'input.0.content.0.type',
      ],
      [{ input: [{ type: 'function_call_output', call_id: 'call_1', output: 'x' }] }, 'input.0.call_id'],
    ];
    const before = w.sim.requests().length;
    for (const [fields, field] of refusals) {
      const res = await post(as, { model: 'sim/gpt', input: 'hi', ...fields });
      expect({ fields, status: res.status, code: res.body.code }).toEqual({
        fields,
        status: 400,
        code: 'INVALID_BODY',
      });
      expect(res.body.details.issues).toContainEqual({ field, message: expect.stringContaining('not') });
      expect(res.body.requestId).toBe(res.headers.get('x-request-id'));
    }
    expect(w.sim.requests().length).toBe(before);

    const err = await w
      .client(as)
      .responses.create({ model: 'sim/gpt', input: 'hi', prompt: { id: 'pmpt_1' } })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(APIError);
    expect({ status: (err as APIError).status, error: (err as APIError).error }).toEqual({
      status: 400,
      error: 'INVALID_BODY',
    });
    // the defaults of those members are no request for anything
    const defaults = await post(as, {
      model: 'mock/chat',
      input: 'hi',
      previous_response_id: null,
      background: false,
      include: [],
      truncation: 'disabled',
      store: false,
    });
    expect(defaults.status).toBe(200);
    // what Codex CLI and the Agents SDK send without storing: the encrypted reasoning the answer carries (none: the
    // mock does not think; Claude's signed thinking is in responses-thinking.test.ts)
    const encryptedReasoning = await post(as, {
      model: 'mock/chat',
      input: 'hi',
      store: false,
      include: ['reasoning.encrypted_content'],
    });
    expect(encryptedReasoning.status).toBe(200);
    expect(encryptedReasoning.body.output.some((item: { type: string }) => item.type === 'reasoning')).toBe(
      false,
    );
  });

  it("errors are chat's: 404 MODEL_NOT_FOUND, 403 MODEL_NOT_ALLOWED, 502 from the provider, a cut stream failed", async () => {
    const { owner: governed } = await w.org('responses-errors');
    const as = { bearer: governed.token };
    const notFound = await post(as, { model: 'no/such-model', input: 'hi' });
    expect(notFound.status).toBe(404);
    expect(notFound.body).toMatchObject({ code: 'MODEL_NOT_FOUND', model: 'no/such-model' });

    const set = await w.call('gateway', 'PATCH', '/v1/quotas/settings', as, {
      models: { allowed: ['sim/gpt', 'mock/chat'] },
    });
    expect(set.status).toBe(200);
    const forbidden = await post(as, { model: 'sim/claude', input: 'hi' });
    expect(forbidden.status).toBe(403);
    expect(forbidden.body).toMatchObject({ code: 'MODEL_NOT_ALLOWED' });

    w.sim.script([{ match: { model: 'gpt-sim' }, error: { status: 400, message: 'bad request' } }]);
    const refused = await w
      .client(as)
      .responses.create({ model: 'sim/gpt', input: 'hi' })
      .catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(APIError);
    expect((refused as APIError).status).toBe(502);
    expect((refused as APIError).headers?.get('x-should-retry')).toBe('false');

    w.sim.script([
      {
        match: { model: 'gpt-sim', stream: true },
        streamFailure: { afterChunks: 3, mode: 'error-event', type: 'server_error' },
      },
    ]);
    const raw = await post(as, { model: 'sim/gpt', input: 'a stream that breaks', stream: true });
    expect(raw.status).toBe(200);
    const [failed, error] = sseEvents(raw.body as string).slice(-2);
    expect(failed!.data.response).toMatchObject({ status: 'failed', error: { code: 'server_error' } });
    expect(error!.data).toMatchObject({
      type: 'error',
      code: 'PROVIDER_ERROR',
      error: { code: 'PROVIDER_ERROR', provider: 'sim', model: 'sim/gpt' },
    });
  });

  it("quotas and resilience are chat's: one rpm window for both APIs, 429 with Retry-After, 504, failover, cancellation", async () => {
    const { owner: tight } = await w.org('responses-tight', 'tight');
    const as = { bearer: tight.token };
    // the user's 3 requests a minute (plan default), whichever API spends them; the four in one calendar minute
    await clearOfMinuteEnd(15_000);
    const chat = () =>
      w.call('gateway', 'POST', '/v1/chat/completions', as, {
        model: 'sim/cheap',
        messages: [{ role: 'user', content: 'hi' }],
      });
    expect((await chat()).status).toBe(200);
    expect((await post(as, { model: 'sim/cheap', input: 'hi' })).status).toBe(200);
    expect((await chat()).status).toBe(200);
    const limited = await post(as, { model: 'sim/cheap', input: 'hi' });
    expect(limited.status).toBe(429);
    expect(limited.body).toMatchObject({ code: 'RATE_LIMITED', details: { key: 'llm.rpm', scope: 'user' } });
    expect(limited.headers.get('retry-after')).toBe(String(limited.body.retryAfter));

    const mine = { bearer: owner.token };
    w.sim.script([{ match: { model: 'slow-sim' }, hang: true }]);
    const silent = await post(mine, { model: 'sim/slow', input: 'hi' });
    expect(silent.status).toBe(504);
    expect(silent.body).toMatchObject({ code: 'PROVIDER_NO_RESPONSE', provider: 'sim', model: 'sim/slow' });

    // a stream fails over before its first chunk
    w.sim.script([{ match: { model: 'stalling-sim' }, hang: true }]);
    const failedOver = await post(mine, { model: 'sim/stalling', input: 'hi', stream: true });
    expect(failedOver.status).toBe(200);
    expect(sseEvents(failedOver.body as string).at(-1)).toMatchObject({
      event: 'response.completed',
      data: { response: { model: 'sim/cheap', status: 'completed' } },
    });

    // a client that leaves cancels the provider call; the one event counts what was consumed
    const accounted = recordCompletions(w);
    try {
      await leaveStreamAfterFirstChunk(w, {
        path: '/v1/responses',
        token: owner.token,
        requestId: 'cancel-this-response',
        body: { model: 'sim/gpt', input: 'a long one', stream: true },
      });
      const event = await accounted.of('cancel-this-response');
      expect(event).toMatchObject({
        outcome: 'client_cancelled',
        endpoint: 'responses',
        stream: true,
      });
      expect(event.usage.completion_tokens).toBeLessThan(60);
      await waitFor(() => w.sim.requests().find((r) => r.model === 'gpt-sim' && r.clientClosed), {
        what: 'the provider call to be cancelled',
      });
      expect(accounted.events.filter((e) => e.requestId === 'cancel-this-response')).toHaveLength(1);
    } finally {
      accounted.stop();
    }
  });

  it('works with an `at:` access token and an org API key, and says when soft_downgrade chose another model', async () => {
    const at = await accessToken(w, { bearer: owner.token }, 'responses');
    const apiKey = await orgApiKey(w, { bearer: owner.token }, 'responses-e2e');
    for (const as of [{ bearer: at }, { apiKey }]) {
      const answer = await w.client(as).responses.create({ model: 'mock/chat', input: 'credential check' });
      expect(answer.output_text.length).toBeGreaterThan(0);
    }

    const { owner: downgraded } = await w.org('responses-downgrade');
    const as = { bearer: downgraded.token };
    await w.call('gateway', 'PATCH', '/v1/quotas/settings', as, {
      policy: 'soft_downgrade',
      models: { allowed: ['sim/cheap'], downgrade: { 'sim/gpt': 'sim/cheap' } },
    });
    const plain = await post(as, { model: 'sim/gpt', input: 'hi' });
    expect(plain.status).toBe(200);
    expect(plain.body.model).toBe('sim/cheap');
    expect(plain.headers.get('x-platform-model-downgraded')).toBe('sim/gpt -> sim/cheap');
    const streamed = await post(as, { model: 'sim/gpt', input: 'hi', stream: true });
    expect(streamed.headers.get('x-platform-model-downgraded')).toBe('sim/gpt -> sim/cheap');
    expect(sseEvents(streamed.body as string).at(-1)!.data.response).toMatchObject({ model: 'sim/cheap' });
  });
});
