import { type LlmCompletionEvent, Subjects } from '@platform/contracts';
import { countSimulatorTokens, openaiTextPromptTokens, waitFor } from '@platform/testkit';
import OpenAI, { APIError } from 'openai';
import { startTestPlatform, type TestPlatform } from '../../../test/harness';
import { countText } from '../src/inference/prompt-tokens';
import { countTextPromptTokens } from '../src/inference/text-completion';
import { mockTokens } from '../src/providers/mock/mock-model';
import {
  type GatewayWorld,
  gauge,
  leaveStreamAtFinish,
  minuteNow,
  type Reply,
  startGatewayWorld,
} from './support';

type Usage = Record<string, number>;

/**
 * OpenAI's legacy text completions (`POST {gateway_url}/v1/completions`, decision 0115) as code-completion clients
 * meet them through the edge: the official `openai` SDK's `completions.create`, plain and streamed, on the
 * simulator's OpenAI and Azure faces and on the mock provider, with chat's governance, quotas, budget cut, retries,
 * failover and accounting (the usage event names the endpoint `completions`).
 */
describe('text completions through the edge', () => {
  let w: GatewayWorld;
  const events: LlmCompletionEvent[] = [];
  let unsubscribe: () => void;

  beforeAll(async () => {
    w = await startGatewayWorld({
      file: (base) => ({
        ...base,
        providers: [
          ...base.providers,
          {
            name: 'azure',
            type: 'openai',
            baseUrl: base.providers[0]!.baseUrl!.replace(/\/v1$/, ''),
            apiKey: 'az-secret',
            azure: { apiVersion: '2024-10-21' },
          },
        ],
        models: [
          ...base.models,
          {
            model_id: 'azure/gpt',
            type: 'completion',
            provider_config: { provider: 'azure', model: 'gpt-deployment' },
            pricing: { input_per_million: 1, output_per_million: 1 },
          },
          {
            // one model on Anthropic and on an OpenAI-protocol server: text completions go to the latter alone
            model_id: 'mixed/code',
            type: 'completion',
            deployments: [
              { provider: 'claude', model: 'claude-sim' },
              { provider: 'sim', model: 'code-sim' },
            ],
            pricing: { input_per_million: 1, output_per_million: 1 },
          },
        ],
      }),
    });
    unsubscribe = w.p.bus.subscribe(Subjects.llmCompletion, (e) => {
      events.push(e as LlmCompletionEvent);
    });
  });
  afterEach(() => w.sim.script([]));
  afterAll(async () => {
    unsubscribe?.();
    await w?.stop();
  });

  const eventOf = (requestId: string) =>
    waitFor(() => events.find((e) => e.requestId === requestId), { what: `the usage event of ${requestId}` });
  const complete = (
    as: { bearer: string },
    body: Record<string, unknown>,
    headers?: Record<string, string>,
  ) => w.call('gateway', 'POST', '/v1/completions', as, body, headers);
  /** the simulator's text completion calls so far */
  const completionCalls = () => w.sim.requests().filter((r) => r.endpoint === 'completions');
  const frames = (body: string) => body.split('\n\n').filter(Boolean);
  const expectEnvelope = (reply: Reply, status: number, code: string) => {
    expect({ status: reply.status, code: reply.body?.code }).toEqual({ status, code });
    expect(reply.body).toMatchObject({ error: expect.any(String), message: expect.any(String), status });
    expect(reply.body.requestId).toBe(reply.headers.get('x-request-id'));
  };

  it('the openai SDK, plain and streamed with include_usage; usage then shows exactly their tokens and cost', async () => {
    const { owner } = await w.org('text-sdk');
    const as = { bearer: owner.token };
    const client = w.client(as);
    const run = Math.random().toString(36).slice(2);
    const sentIn = minuteNow();

    const plain = await client.completions.create(
      { model: 'sim/gpt', prompt: 'def fibonacci(n):', max_tokens: 32 },
      { headers: { 'x-request-id': `text-plain-${run}` } },
    );
    expect(plain.object).toBe('text_completion');
    expect(plain.model).toBe('sim/gpt');
    expect(plain.choices).toEqual([
      { text: 'Simulated answer to: def fibonacci(n):', index: 0, logprobs: null, finish_reason: 'stop' },
    ]);
    const u = plain.usage as unknown as Usage;
    const promptTokens = openaiTextPromptTokens({ prompt: 'def fibonacci(n):' });
    const completionTokens = countSimulatorTokens('Simulated answer to: def fibonacci(n):');
    expect(u).toMatchObject({
      prompt_tokens: promptTokens,
      completion_tokens: completionTokens,
      total_tokens: promptTokens + completionTokens,
      duration_ms: expect.any(Number),
      carbon: { energy_kwh: expect.any(Number), gwp_kgco2eq: expect.any(Number) },
    });
    expect(u.cost).toBeCloseTo((promptTokens * 2 + completionTokens * 8) / 1e6, 12);
    // the provider got its own model name
    expect(completionCalls().at(-1)).toMatchObject({ path: '/v1/completions', model: 'gpt-sim' });

    const stream = await client.completions.create(
      { model: 'sim/gpt', prompt: 'SELECT name FROM', stream: true, stream_options: { include_usage: true } },
      { headers: { 'x-request-id': `text-stream-${run}` } },
    );
    let text = '';
    let chunks = 0;
    let streamUsage: Usage | null = null;
    for await (const chunk of stream) {
      chunks++;
      expect(chunk.model).toBe('sim/gpt');
      expect(chunk.object).toBe('text_completion');
      text += chunk.choices[0]?.text ?? '';
      if (chunk.usage) streamUsage = chunk.usage as unknown as Usage;
    }
    expect(chunks).toBeGreaterThan(3);
    expect(text).toBe('Simulated answer to: SELECT name FROM');
    expect(streamUsage).toMatchObject({
      prompt_tokens: openaiTextPromptTokens({ prompt: 'SELECT name FROM' }),
      completion_tokens: countSimulatorTokens(text),
      cost: expect.any(Number),
      duration_ms: expect.any(Number),
    });
    // the provider is asked for its usage, as chat asks it
    expect(completionCalls().at(-1)!.body).toMatchObject({
      stream: true,
      stream_options: { include_usage: true },
    });

    const tokens = u.total_tokens! + streamUsage!.total_tokens!;
    const cost = u.cost! + streamUsage!.cost!;
    const usage = await w.counted('text-sdk', as, { requests: 2, tokens, cost, sentIn });
    expect(gauge(usage, 'llm.monthly_tokens').used).toBe(tokens);
    expect(gauge(usage, 'llm.monthly_cost').used).toBeCloseTo(cost, 9);

    const [plainEvent, streamEvent] = await Promise.all([
      eventOf(`text-plain-${run}`),
      eventOf(`text-stream-${run}`),
    ]);
    expect(plainEvent).toMatchObject({
      endpoint: 'completions',
      stream: false,
      outcome: 'success',
      usageSource: 'provider',
      model: 'sim/gpt',
    });
    expect(streamEvent).toMatchObject({ endpoint: 'completions', stream: true, outcome: 'success' });
  });

  it('a fill-in-the-middle request reaches the provider as sent, with the provider model name', async () => {
    const { owner } = await w.org('text-fim');
    const as = { bearer: owner.token };
    const sent = {
      prompt: 'def add(a, b):\n    ',
      suffix: '\n\nprint(add(1, 2))',
      max_tokens: 24,
      temperature: 0.2,
      top_p: 0.9,
      stop: ['\n\n', '\ndef '],
      echo: false,
      logprobs: 2,
      n: 1,
      best_of: 1,
      user: 'editor-42',
      seed: 7,
      top_k: 20, // a server's own member (vLLM), passed through
    };
    const reply = await complete(as, { model: 'sim/gpt', ...sent });
    expect(reply.status).toBe(200);
    expect(completionCalls().at(-1)!.body).toEqual({ ...sent, model: 'gpt-sim', stream: false });
    // the suffix is part of the prompt the provider bills
    expect(reply.body.usage.prompt_tokens).toBe(openaiTextPromptTokens(sent));

    // Azure OpenAI: its deployment path, api-version and api-key, as chat's
    const azure = await complete(as, { model: 'azure/gpt', ...sent });
    expect(azure.status).toBe(200);
    expect(azure.body.model).toBe('azure/gpt');
    const call = completionCalls().at(-1)!;
    expect(call.path).toBe('/openai/deployments/gpt-deployment/completions');
    expect(call.query['api-version']).toBe('2024-10-21');
    expect(call.headers['api-key']).toBe('az-secret');
    expect(call.body).toEqual({ ...sent, model: 'gpt-deployment', stream: false });
  });

  it('every prompt shape: strings, token ids, token-id arrays; counted by the tokenizer when the provider reports no usage', async () => {
    const { owner } = await w.org('text-shapes');
    const as = { bearer: owner.token };
    const many = await complete(as, { model: 'sim/gpt', prompt: ['first prompt', 'second prompt'], n: 2 });
    expect(many.status).toBe(200);
    expect(many.body.choices).toHaveLength(4);
    const ids = await complete(as, { model: 'sim/gpt', prompt: [101, 2023, 3] });
    expect(ids.body.usage.prompt_tokens).toBe(3);
    const arrays = await complete(as, {
      model: 'sim/gpt',
      prompt: [
        [101, 2023, 3],
        [7, 8],
      ],
    });
    expect([arrays.body.choices.length, arrays.body.usage.prompt_tokens]).toEqual([2, 5]);

    w.sim.script([{ match: { endpoint: 'completions' }, reply: { omitUsage: true, omitStreamUsage: true } }]);
    const run = Math.random().toString(36).slice(2);
    const body = { model: 'sim/gpt', prompt: 'const answer = ', suffix: ';\nexport default answer;' };
    const counted = await complete(as, body, { 'x-request-id': `text-tokenizer-${run}` });
    expect(counted.status).toBe(200);
    const prompt = countTextPromptTokens(body);
    const completion = countText(counted.body.choices[0].text);
    expect(counted.body.usage).toMatchObject({
      prompt_tokens: prompt,
      completion_tokens: completion,
      total_tokens: prompt + completion,
    });
    expect(await eventOf(`text-tokenizer-${run}`)).toMatchObject({
      endpoint: 'completions',
      usageSource: 'tokenizer',
      usage: { prompt_tokens: prompt, completion_tokens: completion },
    });
  });

  it('the mock model answers deterministically, plain and streamed, with usage', async () => {
    const { owner } = await w.org('text-mock');
    const client = w.client({ bearer: owner.token });
    const prompt = 'function greet(name) {';
    const a = await client.completions.create({ model: 'mock/chat', prompt, max_tokens: 50 });
    const b = await client.completions.create({ model: 'mock/chat', prompt, max_tokens: 50 });
    expect(a.choices).toEqual(b.choices);
    expect(a.choices[0]).toMatchObject({
      text: 'Mock completion of: function greet(name) {',
      finish_reason: 'stop',
    });
    expect(a.model).toBe('mock/chat');
    const completionTokens = mockTokens(a.choices[0]!.text);
    expect(a.usage).toMatchObject({
      prompt_tokens: mockTokens(prompt),
      completion_tokens: completionTokens,
      total_tokens: mockTokens(prompt) + completionTokens,
    });
    const cut = await client.completions.create({ model: 'mock/chat', prompt, max_tokens: 2 });
    expect(cut.choices[0]).toMatchObject({ text: 'Mock completion', finish_reason: 'length' });

    const stream = await client.completions.create({
      model: 'mock/chat',
      prompt,
      max_tokens: 50,
      stream: true,
      stream_options: { include_usage: true },
    });
    let text = '';
    let usage: Usage | null = null;
    let finish: string | null = null;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.text ?? '';
      finish = chunk.choices[0]?.finish_reason ?? finish;
      if (chunk.usage) usage = chunk.usage as unknown as Usage;
    }
    expect([text, finish]).toEqual([a.choices[0]!.text, 'stop']);
    expect(usage).toMatchObject({
      prompt_tokens: a.usage!.prompt_tokens,
      completion_tokens: a.usage!.completion_tokens,
    });

    // the mock answers in the gateway's own process: at most 2048 choices (prompts × n); a load test's 2048 prompts
    // × n = 128 (262,144 choices) streamed did not end in 30 s
    const many = Array.from({ length: 17 }, (_, i) => `prompt ${i}`);
    for (const stream of [false, true]) {
      const refused = await client.completions
        .create({ model: 'mock/chat', prompt: many, n: 128, stream })
        .catch((err: unknown) => err);
      expect([stream, (refused as APIError).status]).toEqual([stream, 400]);
      const body = (
        await w.call(
          'gateway',
          'POST',
          '/v1/completions',
          { bearer: owner.token },
          {
            model: 'mock/chat',
            prompt: many,
            n: 128,
            stream,
          },
        )
      ).body;
      expect(body).toMatchObject({
        code: 'INVALID_BODY',
        message:
          'The provider mock cannot take this request for mock/chat: the mock answers at most 2048 choices a request (prompts × n), here 2176',
      });
    }
  });

  it('a model served only by Anthropic is refused clearly before any call; a mixed model is served by its other deployment', async () => {
    const { owner } = await w.org('text-anthropic');
    const as = { bearer: owner.token };
    const run = Math.random().toString(36).slice(2);
    const before = w.sim.requests().length;
    for (const stream of [false, true]) {
      const reply = await complete(as, { model: 'sim/claude', prompt: 'hello', stream });
      expectEnvelope(reply, 400, 'INVALID_BODY');
      expect(reply.body.message).toBe('The provider of sim/claude has no text completions endpoint');
      expect(reply.body.details).toEqual({ provider: 'claude' });
    }
    const err = await w
      .client(as)
      .completions.create({ model: 'sim/claude', prompt: 'hello' })
      .catch((e: unknown) => e);
    expect((err as APIError).status).toBe(400);
    expect(w.sim.requests().length).toBe(before);

    for (let i = 0; i < 4; i++) {
      const served = await complete(
        as,
        { model: 'mixed/code', prompt: 'x = ' },
        { 'x-request-id': `mixed-${run}-${i}` },
      );
      expect(served.status).toBe(200);
      expect(served.body.model).toBe('mixed/code');
    }
    expect(
      w.sim
        .requests()
        .slice(before)
        .map((r) => [r.endpoint, r.model]),
    ).toEqual(Array.from({ length: 4 }, () => ['completions', 'code-sim']));
  });

  it('bad input is 400 INVALID_BODY naming the field, before any call; another method is 405', async () => {
    const { owner } = await w.org('text-invalid');
    const as = { bearer: owner.token };
    const before = w.sim.requests().length;
    for (const [body, field] of [
      [{ model: 'sim/gpt' }, 'prompt'],
      [{ model: 'sim/gpt', prompt: 5 }, 'prompt'],
      [{ model: 'sim/gpt', prompt: [] }, 'prompt'],
      [{ model: 'sim/gpt', prompt: ['a', 7] }, 'prompt.1'],
      // one issue saying how many, not one per prompt saying it is not a number
      [{ model: 'sim/gpt', prompt: Array.from({ length: 2049 }, () => 'x') }, 'prompt'],
      [{ model: 'sim/gpt', prompt: Array.from({ length: 2049 }, () => [1]) }, 'prompt'],
      [{ model: 'sim/gpt', prompt: 'x', suffix: 3 }, 'suffix'],
      [{ model: 'sim/gpt', prompt: 'x', max_tokens: -1 }, 'max_tokens'],
      [{ model: 'sim/gpt', prompt: 'x', stream: 'yes' }, 'stream'],
      // OpenAI refuses fewer candidates than choices: a 400 the caller would get as our 502
      [{ model: 'sim/gpt', prompt: 'x', n: 3, best_of: 2 }, 'best_of'],
    ] as const) {
      const reply = await complete(as, body);
      expectEnvelope(reply, 400, 'INVALID_BODY');
      expect([field, reply.body.details.issues.map((i: { field: string }) => i.field)]).toEqual([
        field,
        [field],
      ]);
    }
    const many = await complete(as, { model: 'sim/gpt', prompt: Array.from({ length: 3000 }, () => 'x') });
    expect(many.body.message).toBe('Invalid body: prompt: at most 2048 texts or token-id arrays');
    expect((await complete(as, { model: 'sim/gpt', prompt: 5 })).body.message).toMatch(
      /prompt: a string, or an array of 1 to 2048 strings/,
    );
    const err = await w
      .client(as)
      .completions.create({ model: 'sim/gpt', prompt: 5 as unknown as string })
      .catch((e: unknown) => e);
    expect((err as APIError).status).toBe(400);
    expect(w.sim.requests().length).toBe(before);

    const get = await w.call('gateway', 'GET', '/v1/completions', as);
    expect(get.status).toBe(405);
    expect(get.headers.get('allow')).toBe('POST');
  });

  it('governance: MODEL_NOT_ALLOWED under hard_block, the org default without a model, before any call', async () => {
    const { owner } = await w.org('text-governance');
    const as = { bearer: owner.token };
    const set = await w.call('gateway', 'PATCH', '/v1/quotas/settings', as, {
      models: { allowed: ['sim/cheap'], defaults: { completions: 'sim/cheap' } },
    });
    expect(set.status).toBe(200);
    const before = w.sim.requests().length;
    expectEnvelope(await complete(as, { model: 'sim/gpt', prompt: 'hi' }), 403, 'MODEL_NOT_ALLOWED');
    const err = await w
      .client(as)
      .completions.create({ model: 'sim/gpt', prompt: 'hi' })
      .catch((e: unknown) => e);
    expect([(err as APIError).status, (err as APIError).error]).toEqual([403, 'MODEL_NOT_ALLOWED']);
    expect(w.sim.requests().length).toBe(before);

    const byDefault = await complete(as, { prompt: 'hi' });
    expect(byDefault.status).toBe(200);
    expect(byDefault.body.model).toBe('sim/cheap');
    expect(completionCalls().at(-1)!.model).toBe('cheap-sim');
  });

  it('a hard_block stream is cut at the monthly token budget, at most one chunk over', async () => {
    const { owner } = await w.org('text-cut', 'budget');
    const as = { bearer: owner.token };
    const run = Math.random().toString(36).slice(2);
    const sentIn = minuteNow();
    w.sim.script([
      {
        match: { endpoint: 'completions', model: 'gpt-sim', stream: true },
        reply: { content: Array.from({ length: 400 }, (_, i) => `word${i}`).join(' ') },
      },
    ]);
    const res = await fetch(`${w.p.gatewayUrl}/v1/completions`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${owner.token}`,
        'content-type': 'application/json',
        'x-request-id': `text-cut-${run}`,
      },
      body: JSON.stringify({ model: 'sim/gpt', stream: true, prompt: 'long answer' }),
    });
    const all = frames(await res.text());
    expect(all.at(-1)).toBe('data: [DONE]');
    const error = JSON.parse(all.at(-2)!.slice(6));
    expect(error.error).toMatchObject({ code: 'MONTHLY_QUOTA_EXCEEDED' });
    expect(JSON.parse(all[0]!.slice(6))).toMatchObject({ object: 'text_completion', model: 'sim/gpt' });

    const usage = await w.counted('text-cut', as, { requests: 1, tokens: 401, sentIn });
    const used = gauge(usage, 'llm.monthly_tokens').used;
    expect(used).toBeGreaterThan(400);
    // one simulator chunk holds one word: far fewer than 40 tokens
    expect(used).toBeLessThan(440);
    expect(await eventOf(`text-cut-${run}`)).toMatchObject({
      endpoint: 'completions',
      outcome: 'budget_cut',
    });
  });

  it('provider failures as chat: 429 and 5xx retried, failover to the next model, an error chunk mid-stream', async () => {
    const { owner } = await w.org('text-failures');
    const as = { bearer: owner.token };
    const calls = (model: string) => completionCalls().filter((r) => r.model === model).length;
    const before = { gpt: calls('gpt-sim'), flaky: calls('flaky-sim'), cheap: calls('cheap-sim') };

    w.sim.script([
      { match: { model: 'gpt-sim' }, times: 1, error: { status: 429, retryAfterSeconds: 0 } },
      { match: { model: 'gpt-sim' }, times: 1, error: { status: 503 } },
    ]);
    const retried = await complete(as, { model: 'sim/gpt', prompt: 'retry me' });
    expect(retried.status).toBe(200);
    expect(calls('gpt-sim') - before.gpt).toBe(3);

    w.sim.script([{ match: { model: 'flaky-sim' }, error: { status: 500 } }]);
    const failedOver = await complete(as, { model: 'sim/flaky', prompt: 'fail over' });
    expect(failedOver.status).toBe(200);
    expect(failedOver.body.model).toBe('sim/cheap');
    expect(calls('flaky-sim') - before.flaky).toBe(3);
    expect(calls('cheap-sim') - before.cheap).toBe(1);

    const run = Math.random().toString(36).slice(2);
    w.sim.script([
      {
        match: { model: 'gpt-sim', stream: true },
        streamFailure: { afterChunks: 2, mode: 'error-event', type: 'server_error' },
      },
    ]);
    const res = await fetch(`${w.p.gatewayUrl}/v1/completions`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${owner.token}`,
        'content-type': 'application/json',
        'x-request-id': `text-midstream-${run}`,
      },
      body: JSON.stringify({ model: 'sim/gpt', stream: true, prompt: 'a stream that fails' }),
    });
    const all = frames(await res.text());
    expect(all.at(-1)).toBe('data: [DONE]');
    expect(JSON.parse(all.at(-2)!.slice(6)).error).toMatchObject({
      code: 'PROVIDER_ERROR',
      provider: 'sim',
      model: 'sim/gpt',
    });
    expect(await eventOf(`text-midstream-${run}`)).toMatchObject({
      endpoint: 'completions',
      outcome: 'provider_error',
    });
  });

  it('with n > 1, a client that leaves after the first choice cancels the provider call; counted once, as consumed', async () => {
    const { owner } = await w.org('text-leave-choices');
    const as = { bearer: owner.token };
    const requestId = `text-leave-choices-${Math.random().toString(36).slice(2)}`;
    // two choices one after the other, then a usage report counting 1,000 hidden tokens: the provider generates on
    w.sim.script([
      {
        match: { endpoint: 'completions', model: 'gpt-sim', stream: true },
        chunkDelayMs: 300,
        reply: { content: 'short', usage: { prompt_tokens: 12, completion_tokens: 1_002 } },
      },
    ]);
    await leaveStreamAtFinish(w, {
      path: '/v1/completions',
      token: owner.token,
      requestId,
      body: { model: 'sim/gpt', stream: true, n: 2, prompt: 'two answers' },
    });
    // the second choice was not waited for: what was streamed is counted by the tokenizer, not the provider's report
    const event = await eventOf(requestId);
    expect({ outcome: event.outcome, source: event.usageSource }).toEqual({
      outcome: 'client_cancelled',
      source: 'tokenizer',
    });
    expect(event.usage.completion_tokens).toBeLessThan(10);
    const total = event.usage.prompt_tokens + event.usage.completion_tokens;
    const counted = await w.counted('text-leave-choices', as, { requests: 1, tokens: total });
    expect(gauge(counted, 'llm.monthly_tokens').used).toBe(total);
    expect(events.filter((e) => e.requestId === requestId)).toHaveLength(1);
  });

  it("with n > 1 and vLLM's usage on every chunk, the stream shows and bills the usage chunk's report of every choice", async () => {
    const { owner } = await w.org('text-continuous-usage');
    const requestId = `text-continuous-${Math.random().toString(36).slice(2)}`;
    // each chunk carries its own choice's usage so far (vLLM's continuous_usage_stats), the usage chunk both choices'
    w.sim.script([
      { match: { endpoint: 'completions', model: 'gpt-sim' }, reply: { continuousUsage: true } },
    ]);
    const client = w.client({ bearer: owner.token });
    const stream = await client.completions.create(
      {
        model: 'sim/gpt',
        prompt: 'two answers',
        n: 2,
        stream: true,
        stream_options: { include_usage: true },
      },
      { headers: { 'x-request-id': requestId } },
    );
    let streamUsage: Usage | undefined;
    for await (const chunk of stream) if (chunk.usage) streamUsage = chunk.usage as unknown as Usage;
    const promptTokens = openaiTextPromptTokens({ prompt: 'two answers' });
    const completionTokens = 2 * countSimulatorTokens('Simulated answer to: two answers');
    const whole = { prompt_tokens: promptTokens, completion_tokens: completionTokens };
    expect(streamUsage).toMatchObject(whole);
    const event = await eventOf(requestId);
    expect({ outcome: event.outcome, source: event.usageSource, usage: event.usage }).toEqual({
      outcome: 'success',
      source: 'provider',
      usage: expect.objectContaining(whole),
    });
  });
});

/** `pnpm start` as a newcomer finds it: no LLM_GATEWAY_CONFIG, and `mock/chat` completes text too. */
describe('text completions on the built-in mock models', () => {
  let p: TestPlatform;
  beforeAll(async () => {
    p = await startTestPlatform();
  });
  afterAll(() => p?.stop());

  it('mock/chat, the default completions model, answers plain and streamed', async () => {
    const { token } = (await (await fetch(`${p.baseUrl}/v2/login/anonymous`, { method: 'POST' })).json()) as {
      token: string;
    };
    await fetch(`${p.baseUrl}/v2/orgs`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ slug: 'text-newcomer', name: 'Text newcomer' }),
    });
    const client = new OpenAI({ baseURL: `${p.gatewayUrl}/v1`, apiKey: token, maxRetries: 0 });
    // no model: the platform's default completions model
    const plain = await client.completions.create({ model: 'default', prompt: 'import numpy as' });
    expect(plain.model).toBe('mock/chat');
    expect(plain.choices[0]!.text).toBe('Mock completion of: import numpy as');
    let text = '';
    for await (const chunk of await client.completions.create({
      model: 'mock/chat',
      prompt: 'import numpy as',
      stream: true,
    }))
      text += chunk.choices[0]?.text ?? '';
    expect(text).toBe(plain.choices[0]!.text);
  });
});
