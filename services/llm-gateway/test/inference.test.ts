import { APIError } from 'openai';
import { zodResponseFormat } from 'openai/helpers/zod';
import { z } from 'zod';
import {
  accessToken,
  type GatewayWorld,
  gauge,
  minuteNow,
  orgApiKey,
  recordCompletions,
  startGatewayWorld,
} from './support';

/**
 * The gateway as a new user meets it: the official `openai` SDK pointed at `{gateway_url}/v1`
 * through the real edge, with a session JWT, answered by the provider simulator; then the quota
 * endpoint reports exactly the tokens and cost of those calls.
 */
describe('OpenAI-compatible inference through the edge', () => {
  let w: GatewayWorld;
  let owner: { userId: string; token: string };

  beforeAll(async () => {
    w = await startGatewayWorld();
    ({ owner } = await w.org('infer-e2e'));
  });
  afterAll(() => w?.stop());

  it('chat, stream, embeddings and rerank with the openai SDK; usage then shows exactly their tokens and cost', async () => {
    const sentIn = minuteNow();
    const client = w.client({ bearer: owner.token });
    let tokens = 0;
    let cost = 0;

    const plain = await client.chat.completions.create({
      model: 'sim/gpt',
      messages: [{ role: 'user', content: 'Say hello to the gateway' }],
    });
    expect(plain.choices[0]?.message.content).toEqual(expect.any(String));
    expect(plain.model).toBe('sim/gpt');
    const u = plain.usage as unknown as Record<string, number>;
    expect(u.total_tokens).toBe(u.prompt_tokens! + u.completion_tokens!);
    expect(u.cost).toBeCloseTo((u.prompt_tokens! * 2 + u.completion_tokens! * 8) / 1e6, 12);
    expect(u.duration_ms).toBeGreaterThan(0);
    expect(plain.usage).toMatchObject({
      carbon: { energy_kwh: expect.any(Number), gwp_kgco2eq: expect.any(Number) },
    });
    tokens += u.total_tokens!;
    cost += u.cost!;

    const stream = await client.chat.completions.create({
      model: 'sim/gpt',
      messages: [{ role: 'user', content: 'Stream a few words please' }],
      stream: true,
      stream_options: { include_usage: true },
    });
    let text = '';
    let streamUsage: Record<string, number> | null = null;
    let chunks = 0;
    for await (const chunk of stream) {
      chunks++;
      text += chunk.choices[0]?.delta?.content ?? '';
      if (chunk.usage) streamUsage = chunk.usage as unknown as Record<string, number>;
    }
    expect(chunks).toBeGreaterThan(2);
    expect(text.length).toBeGreaterThan(0);
    expect(streamUsage).toMatchObject({ prompt_tokens: expect.any(Number), cost: expect.any(Number) });
    tokens += streamUsage!.total_tokens!;
    cost += streamUsage!.cost!;

    const embeddings = await client.embeddings.create({
      model: 'sim/embed',
      input: ['first text', 'second text'],
      dimensions: 64,
    });
    expect(embeddings.data).toHaveLength(2);
    expect(embeddings.data[0]?.embedding).toHaveLength(64);
    const eu = embeddings.usage as unknown as Record<string, number>;
    tokens += eu.total_tokens!;
    cost += eu.cost!;

    const ranked = (await client.post('/rerank', {
      body: {
        model: 'sim/rerank',
        query: 'capital of France',
        documents: ['Berlin is in Germany', 'Paris is the capital of France', 'bananas'],
      },
    })) as { results: Array<{ index: number; relevance_score: number }>; usage: Record<string, number> };
    expect(ranked.results).toHaveLength(3);
    const scores = ranked.results.map((r) => r.relevance_score);
    expect(scores).toEqual([...scores].sort((a, b) => b - a));
    tokens += ranked.usage.total_tokens!;
    cost += ranked.usage.cost!;

    const usage = await w.counted('infer-e2e', { bearer: owner.token }, { requests: 4, tokens, sentIn });
    if (minuteNow() === sentIn) expect(gauge(usage, 'llm.rpm').used).toBe(4); // while the requests' minute lasts
    expect(gauge(usage, 'llm.monthly_tokens').used).toBe(tokens);
    expect(gauge(usage, 'llm.monthly_cost').used).toBeCloseTo(cost, 9);
  });

  it('a stream without include_usage carries no usage chunk and still ends with [DONE]', async () => {
    const res = await fetch(`${w.p.gatewayUrl}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${owner.token}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        model: 'sim/gpt',
        stream: true,
        messages: [{ role: 'user', content: 'hi there' }],
      }),
    });
    expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const body = await res.text();
    const frames = body.split('\n\n').filter(Boolean);
    expect(frames.at(-1)).toBe('data: [DONE]');
    for (const frame of frames.slice(0, -1)) expect(JSON.parse(frame.slice(6)).usage ?? null).toBeNull();
  });

  it('415 for a body sent as anything but JSON (curl -d), on every inference route', async () => {
    for (const route of ['/v1/chat/completions', '/v1/embeddings', '/v1/rerank', '/v1/images/generations']) {
      const res = await fetch(`${w.p.gatewayUrl}${route}`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${owner.token}`,
          'content-type': 'application/x-www-form-urlencoded',
        },
        body: JSON.stringify({ model: 'sim/gpt', messages: [{ role: 'user', content: 'hi' }] }),
      });
      expect([route, res.status]).toEqual([route, 415]);
      expect(await res.json()).toMatchObject({ code: 'UNSUPPORTED_MEDIA_TYPE', status: 415 });
    }
  });

  it('INVALID_DIMENSIONS for a dimensions value the model does not support', async () => {
    const err = await w
      .client({ bearer: owner.token })
      .embeddings.create({ model: 'sim/embed', input: 'x', dimensions: 100 })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(APIError);
    // the SDK reads the envelope's `error` member (spec 2.3: a string identifier)
    expect((err as APIError).status).toBe(400);
    expect((err as APIError).error).toBe('INVALID_DIMENSIONS');
    const raw = await w.call(
      'gateway',
      'POST',
      '/v1/embeddings',
      { bearer: owner.token },
      {
        model: 'sim/embed',
        input: 'x',
        dimensions: 100,
      },
    );
    expect(raw.body).toMatchObject({
      code: 'INVALID_DIMENSIONS',
      status: 400,
      details: { dimensions: 100, supported_dimensions: [64, 256] },
    });
  });

  it('rerank refuses more than 200 documents with INVALID_BODY', async () => {
    const res = await w.call(
      'gateway',
      'POST',
      '/v1/rerank',
      { bearer: owner.token },
      {
        model: 'sim/rerank',
        query: 'q',
        documents: Array.from({ length: 201 }, (_, i) => `doc ${i}`),
      },
    );
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ code: 'INVALID_BODY', status: 400, requestId: expect.any(String) });
  });

  it('rerank refuses empty and whitespace-only documents (naming each) and queries with INVALID_BODY, before any scoring or billing', async () => {
    const calls = w.sim.requests().length;
    const message = 'a document must not be empty or only whitespace';
    // natively ranked (sim/rerank) or scored through chat (sim/gpt): a blank chunk of the caller's own pipeline
    for (const model of ['sim/rerank', 'sim/gpt']) {
      const res = await w.call(
        'gateway',
        'POST',
        '/v1/rerank',
        { bearer: owner.token },
        {
          model,
          query: 'q',
          documents: ['a document', '', ' \n\t ', { text: '  ' }, { text: '' }, 'another'],
        },
      );
      expect([model, res.status]).toEqual([model, 400]);
      expect(res.body).toMatchObject({
        code: 'INVALID_BODY',
        details: {
          issues: [
            { field: 'documents.1', message },
            { field: 'documents.2', message },
            { field: 'documents.3.text', message },
            { field: 'documents.4.text', message },
          ],
        },
      });
    }
    // nor a blank query, against which every document would be scored and billed
    const blank = await w.call(
      'gateway',
      'POST',
      '/v1/rerank',
      { bearer: owner.token },
      { model: 'sim/rerank', query: ' \n ', documents: ['a document'] },
    );
    expect(blank.status).toBe(400);
    expect(blank.body).toMatchObject({
      code: 'INVALID_BODY',
      details: { issues: [{ field: 'query', message: 'the query must not be empty or only whitespace' }] },
    });
    expect(w.sim.requests().length).toBe(calls);
  });

  /** POST /v1/chat/completions as the organization's owner */
  const chat = (body: Record<string, unknown>) =>
    w.call('gateway', 'POST', '/v1/chat/completions', { bearer: owner.token }, body);

  it('chat refuses malformed tools, tool choices, tool calls and content with INVALID_BODY, on every model', async () => {
    const ask = [{ role: 'user', content: 'use a tool' }];
    const malformed: Array<Record<string, unknown>> = [
      { tools: [[1]] },
      { tools: [{ type: 'function' }] },
      { tools: [{ type: 'function', function: { name: 7 } }] },
      { tools: [{ type: 'function', function: { name: 'f', parameters: 'x' } }] },
      { tools: [{ type: 'function', function: { name: 'f' } }], tool_choice: { type: 'function' } },
      // a choice no tool answers: the providers refuse it (Anthropic's refusal was a 502 that did not say why)
      {
        tools: [{ type: 'function', function: { name: 'f' } }],
        tool_choice: { type: 'function', function: { name: 'g' } },
      },
      { tool_choice: { type: 'function', function: { name: 'f' } } },
      { tool_choice: 'required' },
      { tool_choice: null },
      { messages: [{ role: 'user', content: 5 }] },
      { messages: [{ role: 'user', content: [1] }] },
      { messages: [...ask, { role: 'assistant', tool_calls: [{}] }] },
      { messages: [{ role: 'tool', tool_call_id: 3, content: 'x' }] },
      { stop: [1] },
      { n: 0 },
      { response_format: 'json' },
      { response_format: { type: 'json_schema' } },
      { response_format: { type: 'json_schema', json_schema: { name: 'x', schema: [] } } },
    ];
    for (const model of ['mock/chat', 'sim/gpt', 'sim/claude'])
      for (const fields of malformed) {
        const res = await chat({ model, messages: ask, ...fields });
        expect({ model, fields, status: res.status, code: res.body.code }).toEqual({
          model,
          fields,
          status: 400,
          code: 'INVALID_BODY',
        });
      }
  });

  it('passes tool types other than functions on to an OpenAI provider; Anthropic refuses them with a 400 naming why', async () => {
    const custom = { type: 'custom', custom: { name: 'grammar_tool' } };
    const history = [
      { role: 'user', content: 'hi' },
      {
        role: 'assistant',
        tool_calls: [{ id: 'c1', type: 'custom', custom: { name: 'grammar_tool', input: 'x' } }],
      },
      { role: 'tool', tool_call_id: 'c1', content: 'done' },
    ];
    const openai = await chat({ model: 'sim/gpt', messages: history, tools: [custom] });
    expect(openai.status).toBe(200);
    expect(w.sim.requests().at(-1)!.body).toMatchObject({ tools: [custom], messages: history });
    const claudeHistory = await chat({ model: 'sim/claude', messages: history });
    expect(claudeHistory.status).toBe(400);
    expect(claudeHistory.body).toMatchObject({
      code: 'INVALID_BODY',
      provider: 'claude',
      model: 'sim/claude',
      message: expect.stringContaining("Anthropic does not accept tool calls of type 'custom'"),
    });
    const mock = await chat({
      model: 'mock/chat',
      messages: [{ role: 'user', content: 'a tool please' }],
      tools: [custom],
    });
    expect(mock.status).toBe(200);
    expect(mock.body.choices[0].finish_reason).toBe('stop');
    const anthropic = await chat({
      model: 'sim/claude',
      messages: [{ role: 'user', content: 'hi' }],
      tools: [custom],
    });
    expect(anthropic.status).toBe(400);
    expect(anthropic.body).toMatchObject({
      error: 'INVALID_BODY',
      code: 'INVALID_BODY',
      provider: 'claude',
      model: 'sim/claude',
      message: expect.stringContaining("Anthropic does not accept tools of type 'custom'"),
    });
  });

  it('405 METHOD_NOT_ALLOWED with Allow for a wrong method', async () => {
    const res = await w.call('gateway', 'GET', '/v1/chat/completions', { bearer: owner.token });
    expect(res.status).toBe(405);
    expect(res.headers.get('allow')).toBe('POST');
    expect(res.body).toMatchObject({ error: 'METHOD_NOT_ALLOWED', code: 'METHOD_NOT_ALLOWED', status: 405 });
  });

  it('lists the models the organization may use, never a provider key', async () => {
    const list = await w.client({ bearer: owner.token }).models.list();
    const ids = list.data.map((m) => m.id);
    expect(ids).toEqual(expect.arrayContaining(['sim/gpt', 'sim/embed', 'mock/chat']));
    expect(JSON.stringify(list.data)).not.toContain('sk-sim-secret');
  });

  it('provider requests carry only the allow-listed client headers, never the caller credentials', async () => {
    await w
      .client({ bearer: owner.token })
      .chat.completions.create(
        { model: 'sim/gpt', messages: [{ role: 'user', content: 'header check' }] },
        { headers: { 'x-trace-id': 'trace-1', 'x-secret-thing': 'nope' } },
      );
    const seen = w.sim.requests().at(-1)!;
    expect(seen.headers['x-trace-id']).toBe('trace-1');
    expect(seen.headers['x-secret-thing']).toBeUndefined();
    expect(seen.headers.authorization).toBe('Bearer sk-sim-secret');
    expect(JSON.stringify(seen.headers)).not.toContain(owner.token);
  });

  it('an Anthropic model answers the OpenAI wire format, plain, streamed and with a tool call', async () => {
    const client = w.client({ bearer: owner.token });
    const plain = await client.chat.completions.create({
      model: 'sim/claude',
      messages: [
        { role: 'system', content: 'Be brief' },
        { role: 'user', content: 'Hello Claude' },
      ],
    });
    expect(plain.choices[0]?.message.content).toEqual(expect.any(String));
    const u = plain.usage as unknown as Record<string, number>;
    expect(u.cost).toBeCloseTo((u.prompt_tokens! * 3 + u.completion_tokens! * 15) / 1e6, 12);
    const sent = w.sim.requests().at(-1)!;
    expect(sent).toMatchObject({ api: 'anthropic', model: 'claude-sim' });
    expect(sent.headers['x-api-key']).toBe('sk-ant-secret');

    let text = '';
    let usage: Record<string, number> | null = null;
    const stream = await client.chat.completions.create({
      model: 'sim/claude',
      messages: [{ role: 'user', content: 'Stream from Claude' }],
      stream: true,
      stream_options: { include_usage: true },
    });
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta?.content ?? '';
      if (chunk.usage) usage = chunk.usage as unknown as Record<string, number>;
    }
    expect(text.length).toBeGreaterThan(0);
    expect(usage?.total_tokens).toBeGreaterThan(0);

    w.sim.script([
      {
        match: { api: 'anthropic' },
        reply: { toolCalls: [{ name: 'get_weather', arguments: { city: 'Paris' } }] },
      },
    ]);
    try {
      const tool = await client.chat.completions.create({
        model: 'sim/claude',
        messages: [{ role: 'user', content: 'Weather in Paris?' }],
        tools: [
          {
            type: 'function',
            function: {
              name: 'get_weather',
              parameters: { type: 'object', properties: { city: { type: 'string' } } },
            },
          },
        ],
      });
      const call = tool.choices[0]?.message.tool_calls?.[0];
      expect(call).toMatchObject({ type: 'function', function: { name: 'get_weather' } });
      expect(JSON.parse((call as { function: { arguments: string } }).function.arguments)).toEqual({
        city: 'Paris',
      });
    } finally {
      w.sim.reset();
    }
  });

  it("the SDK's structured outputs work on an Anthropic model, plain and streamed", async () => {
    const City = z.object({ city: z.string(), population: z.number() });
    const client = w.client({ bearer: owner.token });
    const ask = {
      model: 'sim/claude',
      messages: [{ role: 'user' as const, content: 'The biggest city of Norway?' }],
      response_format: zodResponseFormat(City, 'city'),
    };
    const plain = await client.chat.completions.parse(ask);
    expect(plain.choices[0]!.finish_reason).toBe('stop');
    expect(plain.choices[0]!.message.parsed).toEqual({ city: 'example city', population: 1 });
    expect(plain.choices[0]!.message.tool_calls ?? []).toEqual([]);

    const streamed = await client.chat.completions.stream(ask).finalChatCompletion();
    expect(streamed.choices[0]!.message.parsed).toEqual({ city: 'example city', population: 1 });
    expect(streamed.choices[0]!.finish_reason).toBe('stop');
  });

  it('the usage chunk belongs to the streamed completion: its id, created and fingerprint, the provider details', async () => {
    const details = {
      prompt_tokens_details: { cached_tokens: 2, audio_tokens: 0 },
      completion_tokens_details: { reasoning_tokens: 3, audio_tokens: 0 },
    };
    w.sim.script([{ match: { api: 'openai' }, reply: { usage: details } }]);
    try {
      const final = await w
        .client({ bearer: owner.token })
        .chat.completions.stream({
          model: 'sim/gpt',
          messages: [{ role: 'user', content: 'Stream and count' }],
          stream_options: { include_usage: true },
        })
        .finalChatCompletion();
      expect(final.id).toMatch(/^chatcmpl-sim/);
      expect(final.system_fingerprint).toBe('fp_simulator');
      expect(final.model).toBe('sim/gpt');
      expect(final.usage).toMatchObject({
        ...details,
        cost: expect.any(Number),
        duration_ms: expect.any(Number),
      });

      const res = await chat({
        model: 'sim/gpt',
        stream: true,
        stream_options: { include_usage: true },
        messages: [{ role: 'user', content: 'Stream and count again' }],
      });
      const chunks = (res.body as string)
        .split('\n\n')
        .filter((f) => f.startsWith('data: {'))
        .map((f) => JSON.parse(f.slice(6)));
      const usageChunk = chunks.at(-1);
      expect(usageChunk.choices).toEqual([]);
      expect(usageChunk).toMatchObject({
        id: chunks[0].id,
        created: chunks[0].created,
        model: 'sim/gpt',
        system_fingerprint: 'fp_simulator',
        usage: details,
      });
    } finally {
      w.sim.reset();
    }
  });

  it('the SDK works with an `at:` access token and with an org API key in defaultHeaders', async () => {
    const at = await accessToken(w, { bearer: owner.token }, 'sdk');
    expect(at).toMatch(/^at:/);
    const apiKey = await orgApiKey(w, { bearer: owner.token }, 'infer-e2e');
    for (const as of [{ bearer: at }, { apiKey }]) {
      const answer = await w.client(as).chat.completions.create({
        model: 'mock/chat',
        messages: [{ role: 'user', content: 'credential check' }],
      });
      expect(answer.choices[0]?.message.content).toEqual(expect.any(String));
    }
  });

  it('a streamed tool call is counted as its name and arguments: under hard_block it is not cut, without usage not overbilled', async () => {
    // arguments of 800 characters, streamed as the simulator does in pieces of 8, one delta each
    const toolCall = { name: 'search', arguments: { query: 'a long argument '.repeat(50) } };
    const tools = [
      { type: 'function' as const, function: { name: 'search', parameters: { type: 'object' } } },
    ];
    const messages = [{ role: 'user' as const, content: 'search for me' }];
    const completions = recordCompletions(w);
    try {
      // 400 tokens a month: each delta's JSON counted as the model's words was several times the answer
      const { owner: budgeted } = await w.org('infer-tool-budget', 'budget');
      w.sim.script([{ match: { model: 'gpt-sim' }, reply: { toolCalls: [toolCall] } }]);
      const stream = await w.client({ bearer: budgeted.token }).chat.completions.create({
        model: 'sim/gpt',
        stream: true,
        stream_options: { include_usage: true },
        tools,
        messages,
      });
      let args = '';
      let usage: { completion_tokens: number } | undefined;
      for await (const chunk of stream) {
        args += chunk.choices[0]?.delta.tool_calls?.[0]?.function?.arguments ?? '';
        usage = chunk.usage ?? usage;
      }
      expect(JSON.parse(args)).toEqual(toolCall.arguments);
      expect(usage?.completion_tokens).toBeGreaterThan(100);

      // a provider that reports no usage: the tokenizer counts the streamed call about as the same call answered
      // plain (the simulator's pieces of 8 characters split a few tokens more)
      w.sim.script([
        {
          match: { model: 'gpt-sim' },
          reply: { toolCalls: [toolCall], omitUsage: true, omitStreamUsage: true },
        },
      ]);
      const counted = async (requestId: string, stream: boolean) => {
        const res = await w.call(
          'gateway',
          'POST',
          '/v1/chat/completions',
          { bearer: owner.token },
          { model: 'sim/gpt', stream, tools, messages },
          { 'x-request-id': requestId },
        );
        expect(res.status).toBe(200);
        const event = await completions.of(requestId);
        expect(event).toMatchObject({ usageSource: 'tokenizer', outcome: 'success' });
        return event.usage.completion_tokens;
      };
      const run = Math.random().toString(36).slice(2);
      const plain = await counted(`tool-plain-${run}`, false);
      const streamed = await counted(`tool-stream-${run}`, true);
      expect(plain).toBeGreaterThan(100);
      expect(streamed).toBeLessThan(plain * 2);
    } finally {
      completions.stop();
      w.sim.script([]);
    }
  });

  it('a body nested thousands of levels deep is 400 INVALID_BODY on every route, never a 500, and reaches no provider', async () => {
    // JSON.parse reads it; sending it on to the provider or the store (JSON.stringify) overflowed the stack
    const deep = `${'['.repeat(10_000)}${']'.repeat(10_000)}`;
    const bodies: Array<[string, string]> = [
      [
        '/v1/chat/completions',
        `{"model":"sim/gpt","messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object","x":${deep}}}}]}`,
      ],
      [
        '/v1/responses',
        `{"model":"sim/gpt","input":"hi","tools":[{"type":"function","name":"f","parameters":${deep}}]}`,
      ],
      [
        '/v1/messages',
        `{"model":"sim/claude","max_tokens":10,"messages":[{"role":"user","content":"hi"}],"tools":[{"name":"f","input_schema":{"type":"object","x":${deep}}}]}`,
      ],
      [
        '/v1/conversations',
        `{"items":[{"type":"message","role":"user","content":[{"type":"input_text","text":"hi","x":${deep}}]}]}`,
      ],
    ];
    const sent = w.sim.requests().length;
    for (const [path, body] of bodies) {
      const res = await fetch(`${w.p.gatewayUrl}${path}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${owner.token}`, 'content-type': 'application/json' },
        body,
      });
      const answer = (await res.json()) as { message?: string; error: { message?: string } };
      const message = path === '/v1/messages' ? answer.error.message : answer.message;
      expect([path, res.status, message]).toEqual([
        path,
        400,
        'Invalid body: nested more than 128 levels deep',
      ]);
    }
    expect(w.sim.requests().length).toBe(sent);
  });
});
