import Anthropic, {
  APIError,
  BadRequestError,
  NotFoundError,
  PermissionDeniedError,
  RateLimitError,
} from '@anthropic-ai/sdk';
import type { MessageParam, Tool } from '@anthropic-ai/sdk/resources/messages';
import { clearOfMinuteEnd, waitFor } from '@platform/testkit';
import { AnthropicErrorSchema, AnthropicMessageSchema } from '../src/routes/anthropic-messages-openapi';
import { PARIS_WEATHER_ROUND_TRIP } from './responses-fixtures';
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

const WEATHER: Tool = {
  name: 'get_weather',
  description: 'The weather in a city',
  input_schema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
};

/**
 * Anthropic's Messages API as a user of the official `@anthropic-ai/sdk` (or Claude Code) meets it through the edge:
 * `messages.create`, `messages.stream(...).finalMessage()` and `messages.countTokens` on every kind of completion
 * model (an OpenAI-protocol provider, an Anthropic one, the built-in mock), served by the gateway's chat path with
 * its governance, quotas, budget cut and accounting (decision 0111).
 */
describe("Anthropic's Messages API through the edge", () => {
  let w: GatewayWorld;
  let owner: { userId: string; token: string };

  beforeAll(async () => {
    w = await startGatewayWorld();
    ({ owner } = await w.org('messages-e2e'));
  });
  afterAll(() => w?.stop());
  afterEach(() => w.sim.reset());

  /**
   * The SDK as Claude Code configures it: the gateway root as base URL, the platform credential as auth token. An
   * organization API key goes as `x-api-key`, as Claude Code and Anthropic's earlier SDKs send their key (this SDK
   * sends its `apiKey` as a Bearer token, which the edge takes with the same key in `x-api-key` or
   * `x-platform-api-key`: it is one credential sent twice).
   */
  const anthropic = (as: Caller) =>
    'bearer' in as
      ? new Anthropic({ baseURL: w.p.gatewayUrl, apiKey: null, authToken: as.bearer, maxRetries: 0 })
      : new Anthropic({
          baseURL: w.p.gatewayUrl,
          apiKey: null,
          authToken: null,
          defaultHeaders: { 'x-api-key': as.apiKey },
          maxRetries: 0,
        });
  const post = (as: Caller, body: unknown, path = '/v1/messages') =>
    w.call('gateway', 'POST', path, as, body);

  it('answers a message, with the system prompt first and the parameters in chat terms', async () => {
    // sampling parameters: this SDK's types no longer list them, and the API and the gateway still take them
    const sampling = { temperature: 0.5, top_p: 0.9, top_k: 40 } as object;
    const message = await anthropic({ bearer: owner.token }).messages.create({
      ...sampling,
      model: 'sim/gpt',
      max_tokens: 200,
      system: [
        { type: 'text', text: 'Be brief.', cache_control: { type: 'ephemeral' } },
        { type: 'text', text: 'Answer in English.' },
      ],
      messages: [{ role: 'user', content: 'Say hello to the gateway' }],
      stop_sequences: ['END'],
      metadata: { user_id: 'end-user-7' },
    });
    expect(message).toMatchObject({
      id: expect.stringMatching(/^msg_/),
      type: 'message',
      role: 'assistant',
      model: 'sim/gpt',
      content: [{ type: 'text', text: expect.any(String) }],
      stop_reason: 'end_turn',
      stop_sequence: null,
      usage: {
        input_tokens: expect.any(Number),
        output_tokens: expect.any(Number),
        cache_read_input_tokens: 0,
        cache_creation_input_tokens: 0,
      },
    });
    const usage = message.usage as unknown as Record<string, number>;
    expect(usage.cost).toBeCloseTo((usage.input_tokens! * 2 + usage.output_tokens! * 8) / 1e6, 12);

    expect(w.sim.requests().at(-1)!.body).toEqual({
      model: 'gpt-sim',
      stream: false,
      // the breakpoint ends a system message (for an Anthropic model, a system block: 0113); OpenAI's sees none
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'system', content: 'Answer in English.' },
        { role: 'user', content: 'Say hello to the gateway' },
      ],
      max_completion_tokens: 200,
      temperature: 0.5,
      top_p: 0.9,
      stop: ['END'],
      user: 'end-user-7',
    });
  });

  it('streams the events messages.stream() assembles, on an OpenAI-protocol model and the mock', async () => {
    const client = anthropic({ bearer: owner.token });
    for (const model of ['sim/gpt', 'mock/chat']) {
      const stream = client.messages.stream({
        model,
        max_tokens: 300,
        messages: [{ role: 'user', content: 'Stream a few words please' }],
      });
      const types: string[] = [];
      let text = '';
      for await (const event of stream) {
        types.push(event.type);
        if (event.type === 'content_block_delta' && event.delta.type === 'text_delta')
          text += event.delta.text;
      }
      const final = await stream.finalMessage();
      const deltas = types.filter((t) => t === 'content_block_delta').length;
      expect({ model, deltas: deltas > 1 }).toEqual({ model, deltas: true });
      expect(types).toEqual([
        'message_start',
        'content_block_start',
        ...Array(deltas).fill('content_block_delta'),
        'content_block_stop',
        'message_delta',
        'message_stop',
      ]);
      expect(final).toMatchObject({ model, stop_reason: 'end_turn', content: [{ type: 'text', text }] });
      expect(final.usage.input_tokens).toBeGreaterThan(0);
      expect(final.usage.output_tokens).toBeGreaterThan(0);
    }
    // the same question plain and streamed, on the deterministic mock
    const ask = {
      model: 'mock/chat',
      max_tokens: 300,
      messages: [{ role: 'user' as const, content: 'Hello mock' }],
    };
    const plain = await client.messages.create(ask);
    const streamed = await client.messages.stream(ask).finalMessage();
    expect(streamed.content).toEqual(plain.content);
  });

  it('a tool use round trip: tool_use, then the tool_result sent back, on every kind of model', async () => {
    const client = anthropic({ bearer: owner.token });
    for (const model of ['sim/gpt', 'sim/claude', 'mock/chat']) {
      const ask: MessageParam = { role: 'user', content: 'What is the weather in Paris? Use the tool.' };
      const first = await client.messages.create({
        model,
        max_tokens: 300,
        messages: [ask],
        tools: [WEATHER],
      });
      expect({ model, stop: first.stop_reason }).toEqual({ model, stop: 'tool_use' });
      const use = first.content.find((block) => block.type === 'tool_use');
      expect({ model, use }).toEqual({
        model,
        use: {
          type: 'tool_use',
          id: expect.any(String),
          name: 'get_weather',
          input: { city: expect.any(String) },
        },
      });

      const second = await client.messages.create({
        model,
        max_tokens: 300,
        tools: [WEATHER],
        messages: [
          ask,
          { role: 'assistant', content: first.content },
          {
            role: 'user',
            content: [
              {
                type: 'tool_result',
                tool_use_id: use!.type === 'tool_use' ? use!.id : '',
                content: 'Sunny, 21 C',
              },
            ],
          },
        ],
      });
      expect({ model, stop: second.stop_reason }).toEqual({ model, stop: 'end_turn' });
      expect(second.content).toEqual([{ type: 'text', text: expect.any(String) }]);
    }
    // what each provider was sent on the second turn: chat's tool round trip, and Anthropic's own blocks again
    const openai = w.sim
      .requests()
      .filter((r) => r.api === 'openai')
      .at(-1)!;
    expect((openai.body as { messages: unknown[] }).messages).toEqual(PARIS_WEATHER_ROUND_TRIP);
    expect((openai.body as { tools: unknown }).tools).toEqual([
      {
        type: 'function',
        function: {
          name: 'get_weather',
          description: 'The weather in a city',
          parameters: WEATHER.input_schema,
        },
      },
    ]);
    const claude = w.sim
      .requests()
      .filter((r) => r.api === 'anthropic')
      .at(-1)!;
    expect((claude.body as { messages: unknown[] }).messages.at(-1)).toEqual({
      role: 'user',
      content: [{ type: 'tool_result', tool_use_id: expect.any(String), content: 'Sunny, 21 C' }],
    });

    // streamed: the input arrives as input_json_delta events, and the final message holds it parsed
    const streamed = await client.messages
      .stream({
        model: 'sim/gpt',
        max_tokens: 300,
        messages: [{ role: 'user', content: 'Weather in Oslo?' }],
        tools: [WEATHER],
        tool_choice: { type: 'tool', name: 'get_weather' },
      })
      .finalMessage();
    expect(streamed.stop_reason).toBe('tool_use');
    expect(streamed.content).toEqual([
      {
        type: 'tool_use',
        id: expect.stringMatching(/^call_sim/),
        name: 'get_weather',
        input: { city: 'example city' },
      },
    ]);
    expect(w.sim.requests().at(-1)!.body).toMatchObject({
      tool_choice: { type: 'function', function: { name: 'get_weather' } },
    });
  });

  it('an Anthropic model answers plain and streamed, its usage and price its own', async () => {
    const client = anthropic({ bearer: owner.token });
    const plain = await client.messages.create({
      model: 'sim/claude',
      max_tokens: 100,
      system: 'Be brief',
      messages: [
        { role: 'user', content: [{ type: 'text', text: 'Hello Claude' }] },
        { role: 'assistant', content: [{ type: 'text', text: 'Hi.' }] },
        { role: 'user', content: 'How are you?' },
      ],
    });
    expect(plain.content[0]).toMatchObject({ type: 'text', text: expect.any(String) });
    const u = plain.usage as unknown as Record<string, number>;
    expect(u.cost).toBeCloseTo((u.input_tokens! * 3 + u.output_tokens! * 15) / 1e6, 12);
    expect(w.sim.requests().at(-1)).toMatchObject({ api: 'anthropic', model: 'claude-sim' });
    expect(w.sim.requests().at(-1)!.body).toMatchObject({
      system: 'Be brief',
      max_tokens: 100,
      messages: [
        { role: 'user', content: [{ type: 'text', text: 'Hello Claude' }] },
        { role: 'assistant', content: [{ type: 'text', text: 'Hi.' }] },
        { role: 'user', content: [{ type: 'text', text: 'How are you?' }] },
      ],
    });

    const final = await client.messages
      .stream({
        model: 'sim/claude',
        max_tokens: 100,
        messages: [{ role: 'user', content: 'Stream from Claude' }],
      })
      .finalMessage();
    expect(final.stop_reason).toBe('end_turn');
    expect(final.content[0]).toMatchObject({ type: 'text', text: expect.any(String) });
    expect(final.usage.output_tokens).toBeGreaterThan(0);
  });

  it("a reasoning model's thinking is answered as a thinking block when the request asks for thinking", async () => {
    w.sim.script([
      {
        match: { model: 'gpt-sim' },
        reply: { content: 'Paris.', reasoningContent: 'The capital of France.' },
      },
    ]);
    const client = anthropic({ bearer: owner.token });
    const ask = {
      model: 'sim/gpt',
      max_tokens: 2000,
      messages: [{ role: 'user' as const, content: 'Capital of France?' }],
    };
    const thinking = { type: 'enabled' as const, budget_tokens: 1024 };
    const expected = [
      { type: 'thinking', thinking: 'The capital of France.', signature: '' },
      { type: 'text', text: 'Paris.' },
    ];
    expect((await client.messages.create({ ...ask, thinking })).content).toEqual(expected);
    expect((await client.messages.stream({ ...ask, thinking }).finalMessage()).content).toEqual(expected);
    expect((await client.messages.create(ask)).content).toEqual([{ type: 'text', text: 'Paris.' }]);
    // the provider is never sent the member: chat has no form for it
    expect(w.sim.requests().every((r) => !('thinking' in (r.body as object)))).toBe(true);
  });

  it('answers what the OpenAPI document publishes, member for member: text, tool use, thinking, an error', async () => {
    const as = { bearer: owner.token };
    const ask = { model: 'sim/gpt', max_tokens: 300, messages: [{ role: 'user', content: 'Hello' }] };
    w.sim.script([
      { match: { model: 'gpt-sim' }, reply: { content: 'Hi.', reasoningContent: 'A greeting.' } },
    ]);
    const answers = [
      await post(as, ask),
      await post(as, { ...ask, thinking: { type: 'enabled', budget_tokens: 1024 } }),
      await post(as, {
        ...ask,
        model: 'mock/chat',
        tools: [WEATHER],
        messages: [{ role: 'user', content: 'Use the tool' }],
      }),
    ];
    for (const answer of answers) {
      expect(answer.status).toBe(200);
      // a parse keeps what the document lists and drops the rest: equal, the answer has nothing unlisted
      expect(AnthropicMessageSchema.parse(answer.body)).toEqual(answer.body);
    }
    expect(answers.map((a) => a.body.content[0].type)).toEqual(['text', 'thinking', 'tool_use']);
    const refused = await post(as, { ...ask, model: 'no/such-model' });
    expect(AnthropicErrorSchema.parse(refused.body)).toEqual(refused.body);
  });

  it('an answer ended by a stop sequence says which, plain and streamed, where the provider says it', async () => {
    w.sim.script(
      ['claude-sim', 'gpt-sim'].map((model) => ({
        match: { model },
        reply: { content: 'Paris. END of answer' },
      })),
    );
    const client = anthropic({ bearer: owner.token });
    const ask = {
      model: 'sim/claude',
      max_tokens: 100,
      stop_sequences: ['STOP', 'END'],
      messages: [{ role: 'user' as const, content: 'Capital of France?' }],
    };
    const ended = {
      stop_reason: 'stop_sequence',
      stop_sequence: 'END',
      content: [{ type: 'text', text: 'Paris. ' }],
    };
    expect(await client.messages.create(ask)).toMatchObject(ended);
    expect(await client.messages.stream(ask).finalMessage()).toMatchObject(ended);
    // chat says it on the choice, as vLLM does
    const chat = await w.client({ bearer: owner.token }).chat.completions.create({
      model: 'sim/claude',
      messages: ask.messages,
      stop: ['END'],
    });
    expect(chat.choices[0]).toMatchObject({
      finish_reason: 'stop',
      stop_reason: 'END',
      message: { content: 'Paris. ' },
    });
    // OpenAI does not say which sequence stopped an answer: end_turn
    expect(await client.messages.create({ ...ask, model: 'sim/gpt' })).toMatchObject({
      stop_reason: 'end_turn',
      stop_sequence: null,
      content: [{ type: 'text', text: 'Paris. ' }],
    });
  });

  it('max_tokens reached: stop_reason max_tokens, plain and streamed', async () => {
    const client = anthropic({ bearer: owner.token });
    const ask = {
      model: 'sim/gpt',
      max_tokens: 2,
      messages: [{ role: 'user' as const, content: 'Tell me a long story about the sea' }],
    };
    expect((await client.messages.create(ask)).stop_reason).toBe('max_tokens');
    expect((await client.messages.stream(ask).finalMessage()).stop_reason).toBe('max_tokens');
  });

  it('count_tokens answers the gateway tokenizer count, with no provider call and nothing counted', async () => {
    const { owner: counter } = await w.org('messages-count-tokens');
    const as = { bearer: counter.token };
    const client = anthropic(as);
    const short = await client.messages.countTokens({
      model: 'sim/claude',
      messages: [{ role: 'user', content: 'Hello' }],
    });
    const long = await client.messages.countTokens({
      model: 'sim/claude',
      system: 'You are a careful assistant who answers with the weather.',
      messages: [{ role: 'user', content: 'Hello, what is the weather like in Paris today?' }],
      tools: [WEATHER],
    });
    expect(short.input_tokens).toBeGreaterThan(0);
    expect(long.input_tokens).toBeGreaterThan(short.input_tokens + 20);
    expect(w.sim.requests()).toHaveLength(0);
    const usage = await w.call('gateway', 'GET', '/v1/quotas/usage', as);
    expect(gauge(usage, 'llm.rpm').used).toBe(0);
    expect(gauge(usage, 'llm.monthly_tokens').used).toBe(0);
  });

  it("count_tokens resolves the model as messages does: unknown is NotFoundError, outside the org's allowed list PermissionDeniedError", async () => {
    const { owner: counter } = await w.org('messages-count-governed');
    const as = { bearer: counter.token };
    const client = anthropic(as);
    const ask = { messages: [{ role: 'user' as const, content: 'Hello' }] };
    const unknown = await client.messages
      .countTokens({ ...ask, model: 'nonexistent/zzz' })
      .catch((e: unknown) => e);
    expect(unknown).toBeInstanceOf(NotFoundError);
    expect(unknown).toMatchObject({ status: 404, type: 'not_found_error', errorCode: 'MODEL_NOT_FOUND' });
    expect((unknown as NotFoundError).details).toMatchObject({ model: 'nonexistent/zzz' });
    expect(AnthropicErrorSchema.safeParse((unknown as NotFoundError).error).success).toBe(true);

    const set = await w.call('gateway', 'PATCH', '/v1/quotas/settings', as, {
      models: { allowed: ['mock/chat'] },
    });
    expect(set.status).toBe(200);
    const forbidden = await client.messages
      .countTokens({ ...ask, model: 'sim/claude' })
      .catch((e: unknown) => e);
    expect(forbidden).toBeInstanceOf(PermissionDeniedError);
    expect(forbidden).toMatchObject({
      status: 403,
      type: 'permission_error',
      errorCode: 'MODEL_NOT_ALLOWED',
    });
    // the allowed model is still counted, and nothing of it is billed or taken from a quota
    expect((await client.messages.countTokens({ ...ask, model: 'mock/chat' })).input_tokens).toBeGreaterThan(
      0,
    );
    expect(w.sim.requests()).toHaveLength(0);
    const usage = await w.call('gateway', 'GET', '/v1/quotas/usage', as);
    expect(gauge(usage, 'llm.rpm').used).toBe(0);
    expect(gauge(usage, 'llm.monthly_tokens').used).toBe(0);
    expect(gauge(usage, 'llm.monthly_cost').used).toBe(0);
  });

  it('each message is counted once by llm-quota: /v1/quotas/usage shows exactly their tokens and cost', async () => {
    const { owner: counter } = await w.org('messages-count');
    const as = { bearer: counter.token };
    const client = anthropic(as);
    const accounted = recordCompletions(w);
    try {
      const sentIn = minuteNow();
      let tokens = 0;
      let cost = 0;
      const add = (usage: unknown) => {
        const u = usage as Record<string, number>;
        tokens +=
          u.input_tokens! + u.cache_read_input_tokens! + u.cache_creation_input_tokens! + u.output_tokens!;
        cost += u.cost!;
      };
      const ask = (model: string) => ({
        model,
        max_tokens: 100,
        messages: [{ role: 'user' as const, content: 'count me' }],
      });
      add((await client.messages.create(ask('sim/gpt'))).usage);
      // a stream's figures are in its message_delta event (the SDK's final message keeps Anthropic's counters)
      const stream = client.messages.stream(ask('sim/gpt'));
      for await (const event of stream) if (event.type === 'message_delta') add(event.usage);
      add((await client.messages.create(ask('sim/claude'))).usage);
      const usage = await w.counted('messages-count', as, { requests: 3, tokens, sentIn });
      if (minuteNow() === sentIn) expect(gauge(usage, 'llm.rpm').used).toBe(3);
      expect(gauge(usage, 'llm.monthly_tokens').used).toBe(tokens);
      expect(gauge(usage, 'llm.monthly_cost').used).toBeCloseTo(cost, 9);
      // one event per request, naming the API the caller used
      const mine = accounted.events.filter((e) => e.orgSlug === 'messages-count');
      expect(mine).toHaveLength(3);
      expect(mine.every((e) => e.endpoint === 'messages')).toBe(true);
      expect(mine.map((e) => e.stream)).toEqual([false, true, false]);
    } finally {
      accounted.stop();
    }
  });

  it('refusals are typed SDK errors with their status: RateLimitError, NotFoundError, PermissionDeniedError, BadRequestError', async () => {
    const { owner: tight } = await w.org('messages-tight', 'tight');
    const client = anthropic({ bearer: tight.token });
    const ask = { model: 'sim/cheap', max_tokens: 50, messages: [{ role: 'user' as const, content: 'hi' }] };
    // the user's 3 requests a minute (plan default), the four in one calendar minute
    await clearOfMinuteEnd(15_000);
    for (let i = 0; i < 3; i++) await client.messages.create(ask);
    const limited = await client.messages.create(ask).catch((e: unknown) => e);
    expect(limited).toBeInstanceOf(RateLimitError);
    const rate = limited as RateLimitError;
    expect(rate.status).toBe(429);
    expect(rate.type).toBe('rate_limit_error');
    expect(rate.errorCode).toBe('RATE_LIMITED');
    expect(rate.details).toMatchObject({ key: 'llm.rpm', scope: 'user' });
    expect(rate.headers.get('retry-after')).toMatch(/^\d+$/);
    expect(rate.error).toMatchObject({ type: 'error', request_id: rate.headers.get('x-request-id') });

    const mine = anthropic({ bearer: owner.token });
    const notFound = await mine.messages.create({ ...ask, model: 'no/such-model' }).catch((e: unknown) => e);
    expect(notFound).toBeInstanceOf(NotFoundError);
    expect(notFound).toMatchObject({ status: 404, type: 'not_found_error', errorCode: 'MODEL_NOT_FOUND' });
    expect((notFound as NotFoundError).details).toMatchObject({ model: 'no/such-model' });

    const { owner: governed } = await w.org('messages-governed');
    const set = await w.call(
      'gateway',
      'PATCH',
      '/v1/quotas/settings',
      { bearer: governed.token },
      {
        models: { allowed: ['mock/chat'] },
      },
    );
    expect(set.status).toBe(200);
    const forbidden = await anthropic({ bearer: governed.token })
      .messages.create({ ...ask, model: 'sim/claude' })
      .catch((e: unknown) => e);
    expect(forbidden).toBeInstanceOf(PermissionDeniedError);
    expect(forbidden).toMatchObject({
      status: 403,
      type: 'permission_error',
      errorCode: 'MODEL_NOT_ALLOWED',
    });

    w.sim.script([{ match: { model: 'gpt-sim' }, error: { status: 400, message: 'bad request' } }]);
    const provider = await mine.messages.create({ ...ask, model: 'sim/gpt' }).catch((e: unknown) => e);
    expect(provider).toBeInstanceOf(APIError);
    expect(provider).toMatchObject({ status: 502, type: 'api_error', errorCode: 'PROVIDER_ERROR' });
    expect((provider as APIError).headers?.get('x-should-retry')).toBe('false');
  });

  it('refuses what it cannot serve with 400 naming the field, before any provider call', async () => {
    const as = { bearer: owner.token };
    const base = { model: 'sim/gpt', max_tokens: 50, messages: [{ role: 'user', content: 'hi' }] };
    const refusals: Array<[unknown, string]> = [
      [{ model: 'sim/gpt', messages: base.messages }, 'max_tokens'],
      [{ ...base, messages: [] }, 'messages'],
      [{ ...base, messages: [{ role: 'system', content: 'x' }] }, 'messages.0.role'],
      [{ ...base, tools: [{ type: 'web_search_20250305', name: 'web_search' }] }, 'tools.0.type'],
      [{ ...base, mcp_servers: [{ type: 'url', url: 'https://mcp.example', name: 'x' }] }, 'mcp_servers'],
      [{ ...base, frobnicate: true }, 'frobnicate'],
      [{ ...base, temperature: 1.5 }, 'temperature'],
      [
        {
          ...base,
          messages: [
            {
              role: 'user',
              content: [{ type: 'document', source: { type: 'text', media_type: 'text/plain', data: 'x' } }],
            },
          ],
        },
        'messages.0.content.0.type',
      ],
      [
        {
          ...base,
          messages: [{ role: 'user', content: [{ type: 'image', source: { type: 'file', file_id: 'f' } }] }],
        },
        'messages.0.content.0.source',
      ],
      [{ ...base, tool_choice: { type: 'tool' } }, 'tool_choice.name'],
      [{ ...base, tools: [WEATHER, WEATHER] }, 'tools.1.name'],
      // a tool result answers a tool use of the assistant turn just before it, not one of an earlier turn
      [
        {
          ...base,
          tools: [WEATHER],
          messages: [
            { role: 'user', content: 'the weather?' },
            {
              role: 'assistant',
              content: [{ type: 'tool_use', id: 'toolu_a', name: 'get_weather', input: {} }],
            },
            { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_a', content: 'sunny' }] },
            { role: 'assistant', content: 'Sunny.' },
            { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_a', content: 'sunny' }] },
          ],
        },
        'messages.4.content.0.tool_use_id',
      ],
    ];
    const before = w.sim.requests().length;
    for (const [body, field] of refusals) {
      const res = await post(as, body);
      expect({ field, status: res.status, type: res.body?.error?.type }).toEqual({
        field,
        status: 400,
        type: 'invalid_request_error',
      });
      expect(res.body).toMatchObject({
        type: 'error',
        error: { details: { error_code: 'INVALID_BODY' } },
        request_id: res.headers.get('x-request-id'),
      });
      expect(res.body.error.details.issues.map((i: { field: string }) => i.field)).toContain(field);
    }
    const notJson = await fetch(`${w.p.gatewayUrl}/v1/messages`, {
      method: 'POST',
      headers: { authorization: `Bearer ${owner.token}`, 'content-type': 'application/json' },
      body: '{"model": ',
    });
    expect(notJson.status).toBe(400);
    expect(w.sim.requests().length).toBe(before);

    const err = await anthropic(as)
      .messages.create({ ...base, messages: [{ role: 'user', content: 'hi' }], max_tokens: 0 })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(BadRequestError);
  });

  it('count_tokens refuses what messages refuses, with the same 400; generation-only members are ignored there', async () => {
    const { owner: counter } = await w.org('messages-count-refusals');
    const as = { bearer: counter.token };
    const base = { model: 'sim/gpt', max_tokens: 50, messages: [{ role: 'user', content: 'hi' }] };
    const bodies: unknown[] = [
      { ...base, messages: [] },
      { ...base, messages: [{ role: 'system', content: 'x' }] },
      { ...base, tools: [{ type: 'web_search_20250305', name: 'web_search' }] },
      { ...base, mcp_servers: [{ type: 'url', url: 'https://mcp.example', name: 'x' }] },
      { ...base, inference_geo: 'eu' },
      { ...base, frobnicate: true },
      { ...base, thinking: { type: 'enabled', budget_tokens: 0 } },
      { ...base, output_config: { format: { type: 'text' } } },
      { ...base, system: [{ type: 'text', text: 'x', cache_control: { type: 'forever' } }] },
      {
        ...base,
        messages: [
          { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_x', content: 'done' }] },
        ],
      },
      {
        ...base,
        messages: [{ role: 'user', content: [{ type: 'image', source: { type: 'file', file_id: 'f' } }] }],
      },
      { ...base, tool_choice: { type: 'tool' } },
      { ...base, tools: [WEATHER, WEATHER] },
      [base],
    ];
    for (const body of bodies) {
      const message = await post(as, body);
      const counted = await post(as, body, '/v1/messages/count_tokens');
      expect(message.status).toBe(400);
      expect({ status: counted.status, error: counted.body?.error }).toEqual({
        status: 400,
        error: message.body.error,
      });
    }
    // what only generation reads is not needed, nor checked, to count
    const { max_tokens: _, ...withoutMax } = base;
    const generation = { stop_sequences: ['END'], temperature: 1.5, top_k: 5, metadata: {}, stream: true };
    for (const body of [withoutMax, { ...base, ...generation }]) {
      const counted = await post(as, body, '/v1/messages/count_tokens');
      expect({ status: counted.status, tokens: counted.body.input_tokens }).toEqual({
        status: 200,
        tokens: expect.any(Number),
      });
    }
    expect(w.sim.requests()).toHaveLength(0);
  });

  it('a hard_block stream is cut at the monthly token budget with an Anthropic error event the SDK raises', async () => {
    const long = Array.from({ length: 400 }, (_, i) => `word${i}`).join(' ');
    w.sim.script([{ match: { model: 'gpt-sim', stream: true }, reply: { content: long } }]);
    const ask = {
      model: 'sim/gpt',
      max_tokens: 4000,
      stream: true,
      messages: [{ role: 'user' as const, content: 'long answer' }],
    };
    const { owner: sdkUser } = await w.org('messages-cut-sdk', 'budget');
    const err = await anthropic({ bearer: sdkUser.token })
      .messages.stream(ask)
      .finalMessage()
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(APIError);
    expect(err).toMatchObject({ type: 'rate_limit_error', errorCode: 'MONTHLY_QUOTA_EXCEEDED' });

    const { owner: budgeted } = await w.org('messages-cut', 'budget');
    const as = { bearer: budgeted.token };
    const sentIn = minuteNow();
    const raw = await post(as, ask);
    expect(raw.status).toBe(200);
    const seen = sseEvents(raw.body as string);
    expect(seen[0]!.event).toBe('message_start');
    expect(seen.at(-1)).toEqual({
      event: 'error',
      data: {
        type: 'error',
        error: {
          type: 'rate_limit_error',
          message: expect.stringContaining('monthly token budget'),
          details: {
            error_code: 'MONTHLY_QUOTA_EXCEEDED',
            key: 'llm.monthly_tokens',
            // whose budget: the organization's (an API key with its own budget reads `api_key`, decision 0117)
            scope: 'org',
            limit: 400,
            window: 'month',
            retryAfter: 0,
          },
        },
        request_id: raw.headers.get('x-request-id'),
      },
    });
    expect(seen.map((e) => e.event)).not.toContain('message_stop');
    const usage = await w.counted('messages-cut', as, { requests: 1, tokens: 401, sentIn });
    expect(gauge(usage, 'llm.monthly_tokens').used).toBeLessThan(440);
    const refused = await post(as, ask);
    expect(refused.status).toBe(429);
    expect(refused.body.error).toMatchObject({
      type: 'rate_limit_error',
      details: { error_code: 'MONTHLY_QUOTA_EXCEEDED' },
    });
  });

  it('works with an at: token as authToken and an organization API key in x-api-key', async () => {
    const at = await accessToken(w, { bearer: owner.token }, 'messages');
    const apiKey = await orgApiKey(w, { bearer: owner.token }, 'messages-e2e');
    const clients = [
      anthropic({ bearer: at }),
      anthropic({ apiKey }),
      // this SDK's own apiKey (a Bearer token) with the same key in the platform's header
      new Anthropic({
        baseURL: w.p.gatewayUrl,
        apiKey,
        defaultHeaders: { 'x-platform-api-key': apiKey },
        maxRetries: 0,
      }),
    ];
    for (const client of clients) {
      const message = await client.messages.create({
        model: 'mock/chat',
        max_tokens: 50,
        messages: [{ role: 'user', content: 'credential check' }],
      });
      expect(message.content[0]).toMatchObject({ type: 'text' });
      const counted = await client.messages.countTokens({
        model: 'mock/chat',
        messages: [{ role: 'user', content: 'credential check' }],
      });
      expect(counted.input_tokens).toBeGreaterThan(0);
    }
    // the key went no further than the edge
    await anthropic({ apiKey }).messages.create({
      model: 'sim/gpt',
      max_tokens: 50,
      messages: [{ role: 'user', content: 'who sent this' }],
    });
    expect(JSON.stringify(w.sim.requests().at(-1)!.headers)).not.toContain(apiKey);
    // an API key of the organization is no credential as x-api-key on chat completions
    const chat = await fetch(`${w.p.gatewayUrl}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'x-api-key': apiKey, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'mock/chat', messages: [{ role: 'user', content: 'hi' }] }),
    });
    expect(chat.status).toBe(401);
  });

  it("resilience is chat's: a stream fails over before its first chunk, and a provider failure midway is an error event", async () => {
    const client = anthropic({ bearer: owner.token });
    w.sim.script([{ match: { model: 'stalling-sim' }, hang: true }]);
    const failedOver = await client.messages
      .stream({ model: 'sim/stalling', max_tokens: 100, messages: [{ role: 'user', content: 'hi' }] })
      .finalMessage();
    expect(failedOver).toMatchObject({ model: 'sim/cheap', stop_reason: 'end_turn' });

    w.sim.script([
      {
        match: { model: 'gpt-sim', stream: true },
        streamFailure: { afterChunks: 3, mode: 'error-event', type: 'server_error' },
      },
    ]);
    const broken = await client.messages
      .stream({
        model: 'sim/gpt',
        max_tokens: 100,
        messages: [{ role: 'user', content: 'a stream that breaks' }],
      })
      .finalMessage()
      .catch((e: unknown) => e);
    expect(broken).toBeInstanceOf(APIError);
    expect(broken).toMatchObject({ type: 'api_error', errorCode: 'PROVIDER_ERROR' });
    expect((broken as APIError).details).toMatchObject({ provider: 'sim', model: 'sim/gpt' });
  });

  it('a client that leaves cancels the provider call; the one usage event counts what was consumed', async () => {
    const accounted = recordCompletions(w);
    try {
      await leaveStreamAfterFirstChunk(w, {
        path: '/v1/messages',
        token: owner.token,
        requestId: 'cancel-this-message',
        body: {
          model: 'sim/gpt',
          max_tokens: 1000,
          stream: true,
          messages: [{ role: 'user', content: 'a long one' }],
        },
      });
      const event = await accounted.of('cancel-this-message');
      expect(event).toMatchObject({
        outcome: 'client_cancelled',
        endpoint: 'messages',
        stream: true,
      });
      await waitFor(() => w.sim.requests().find((r) => r.model === 'gpt-sim' && r.clientClosed), {
        what: 'the provider call to be cancelled',
      });
      expect(accounted.events.filter((e) => e.requestId === 'cancel-this-message')).toHaveLength(1);
    } finally {
      accounted.stop();
    }
  });
});
