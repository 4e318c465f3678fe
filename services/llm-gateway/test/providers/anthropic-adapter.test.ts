import {
  anthropicInputTokens,
  countSimulatorTokens,
  type ProviderSimulator,
  startProviderSimulator,
  waitFor,
} from '@platform/testkit';
import {
  type ChatCompletionChunk,
  type ChatCompletionRequest,
  createProviderAdapter,
  type ProviderCall,
  ProviderError,
  ProviderTimeoutError,
  ProviderUnsupportedError,
} from '../../src/providers';
import { finishReason, JSON_RESPONSE_TOOL } from '../../src/providers/anthropic/anthropic-translate';
import { collect, providerCall } from '../provider-fixtures';

let sim: ProviderSimulator;
beforeAll(async () => {
  sim = await startProviderSimulator({ apiKey: 'sk-ant' });
});
afterAll(() => sim.close());
beforeEach(() => sim.reset());

const clock = { now: () => new Date('2026-03-01T00:00:00Z') };
const claude = (baseUrl = sim.anthropicBaseUrl) =>
  createProviderAdapter(
    {
      name: 'anthropic',
      type: 'anthropic',
      baseUrl,
      apiKey: 'sk-ant',
      headers: { 'anthropic-beta': 'tools-2024' },
    },
    { clock },
  );
const call = (over: Partial<ProviderCall> = {}) => providerCall('claude-sim', over);
const weatherTool = {
  type: 'function' as const,
  function: {
    name: 'get_weather',
    description: 'Weather by city',
    parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  },
};

const sent = () => sim.requests().at(-1)!.body as Record<string, unknown>;

describe('Anthropic Messages adapter', () => {
  it('translates a chat: system messages to `system`, image parts to sources, its key and version headers', async () => {
    const body: ChatCompletionRequest = {
      model: 'catalogue/claude',
      temperature: 1.5,
      stop: 'END',
      messages: [
        { role: 'system', content: 'You are terse.' },
        { role: 'developer', content: 'Answer in English.' },
        {
          role: 'user',
          content: [
            { type: 'text', text: 'What is in these pictures?' },
            { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0KGgo=' } },
            { type: 'image_url', image_url: { url: 'https://example.com/cat.jpg' } },
          ],
        },
      ],
    };
    const { body: answer, usage } = await claude().chat(body, call());
    expect(sent()).toEqual({
      model: 'claude-sim',
      max_tokens: 4096,
      system: 'You are terse.\n\nAnswer in English.',
      temperature: 1,
      stop_sequences: ['END'],
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'What is in these pictures?' },
            { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'iVBORw0KGgo=' } },
            { type: 'image', source: { type: 'url', url: 'https://example.com/cat.jpg' } },
          ],
        },
      ],
    });
    const headers = sim.requests()[0]!.headers;
    expect(headers['x-api-key']).toBe('sk-ant');
    expect(headers['anthropic-version']).toBe('2023-06-01');
    expect(headers['anthropic-beta']).toBe('tools-2024');
    expect(headers.authorization).toBeUndefined();
    const text = 'Simulated answer to: What is in these pictures?';
    expect(answer).toMatchObject({
      object: 'chat.completion',
      created: Date.parse('2026-03-01T00:00:00Z') / 1000,
      choices: [{ index: 0, message: { role: 'assistant', content: text }, finish_reason: 'stop' }],
    });
    const input = anthropicInputTokens(sent() as never);
    expect(usage).toEqual({
      prompt_tokens: input,
      completion_tokens: countSimulatorTokens(text),
      total_tokens: input + countSimulatorTokens(text),
    });
  });

  it('translates tools and tool_choice, and a tool_use answer into OpenAI tool_calls', async () => {
    const { body } = await claude().chat(
      {
        model: 'x',
        tools: [weatherTool],
        tool_choice: { type: 'function', function: { name: 'get_weather' } },
        parallel_tool_calls: false,
        messages: [{ role: 'user', content: 'Weather in Oslo?' }],
      },
      call(),
    );
    expect(sent().tools).toEqual([
      { name: 'get_weather', description: 'Weather by city', input_schema: weatherTool.function.parameters },
    ]);
    expect(sent().tool_choice).toEqual({
      type: 'tool',
      name: 'get_weather',
      disable_parallel_tool_use: true,
    });
    const choice = body.choices[0]!;
    expect(choice.finish_reason).toBe('tool_calls');
    expect(choice.message.content).toBeNull();
    expect(choice.message.tool_calls).toEqual([
      {
        id: expect.stringMatching(/^toolu_/),
        type: 'function',
        function: { name: 'get_weather', arguments: '{"city":"example city"}' },
      },
    ]);
  });

  it('translates tool calls and tool results in the history, merging consecutive results into one user turn', async () => {
    const { body } = await claude().chat(
      {
        model: 'x',
        tools: [weatherTool],
        tool_choice: 'required',
        messages: [
          { role: 'user', content: 'Weather in Oslo and Rome?' },
          {
            role: 'assistant',
            content: '',
            tool_calls: [
              {
                id: 'call_1',
                type: 'function',
                function: { name: 'get_weather', arguments: '{"city":"Oslo"}' },
              },
              {
                id: 'call_2',
                type: 'function',
                function: { name: 'get_weather', arguments: '{"city":"Rome"}' },
              },
            ],
          },
          { role: 'tool', tool_call_id: 'call_1', content: 'snow' },
          { role: 'tool', tool_call_id: 'call_2', content: [{ type: 'text', text: 'sun' }] },
        ],
      },
      call(),
    );
    expect(sent().tool_choice).toEqual({ type: 'any' });
    expect(sent().messages).toEqual([
      { role: 'user', content: [{ type: 'text', text: 'Weather in Oslo and Rome?' }] },
      {
        role: 'assistant',
        content: [
          { type: 'tool_use', id: 'call_1', name: 'get_weather', input: { city: 'Oslo' } },
          { type: 'tool_use', id: 'call_2', name: 'get_weather', input: { city: 'Rome' } },
        ],
      },
      {
        role: 'user',
        content: [
          { type: 'tool_result', tool_use_id: 'call_1', content: 'snow' },
          { type: 'tool_result', tool_use_id: 'call_2', content: 'sun' },
        ],
      },
    ]);
    expect(body.choices[0]!.finish_reason).toBe('stop');
  });

  it('maps max_tokens to finish_reason length', async () => {
    const { body, usage } = await claude().chat(
      { model: 'x', max_tokens: 2, messages: [{ role: 'user', content: 'Hi there' }] },
      call(),
    );
    expect(sent().max_tokens).toBe(2);
    expect(body.choices[0]!.finish_reason).toBe('length');
    expect(usage!.completion_tokens).toBe(2);
  });

  it('refuses, without calling the provider, what Anthropic cannot take', async () => {
    const error = await claude()
      .chat(
        { model: 'x', messages: [{ role: 'user', content: [{ type: 'input_audio', input_audio: {} }] }] },
        call(),
      )
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ProviderError);
    expect(error).toMatchObject({ providerErrorType: 'invalid_request_error', retryable: false });
    expect(sim.requests()).toHaveLength(0);
    await expect(
      claude().chat({ model: 'x', n: 2, messages: [{ role: 'user', content: 'Hi' }] }, call()),
    ).rejects.toMatchObject({
      providerErrorType: 'invalid_request_error',
      message: expect.stringMatching(/n must be 1/),
    });
    await expect(
      claude().chat(
        {
          model: 'x',
          messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'ftp://x/y.png' } }] }],
        },
        call(),
      ),
    ).rejects.toMatchObject({ providerErrorType: 'invalid_request_error' });
    // two tools of one name: Anthropic's 400, which OpenAI does not give
    await expect(
      claude().chat(
        { model: 'x', messages: [{ role: 'user', content: 'Hi' }], tools: [weatherTool, weatherTool] },
        call(),
      ),
    ).rejects.toMatchObject({
      providerErrorType: 'invalid_request_error',
      message: expect.stringMatching(/two tools are named 'get_weather'/),
    });
    expect(sim.requests()).toHaveLength(0);
  });

  it('refuses parameters asking for what Anthropic cannot give, naming them, without calling it', async () => {
    const ask = { model: 'x', messages: [{ role: 'user' as const, content: 'Hi' }] };
    for (const [extra, named] of [
      [{ logprobs: true }, 'logprobs'],
      [{ top_logprobs: 2 }, 'top_logprobs'],
      [{ logit_bias: { '50256': -100 } }, 'logit_bias'],
      [{ modalities: ['text', 'audio'] }, 'modalities'],
      [{ audio: { voice: 'alloy', format: 'wav' } }, 'audio'],
    ] as const) {
      const error = await claude()
        .chat({ ...ask, ...extra }, call())
        .catch((e: unknown) => e);
      expect(error).toMatchObject({
        providerErrorType: 'invalid_request_error',
        refusedByGateway: true,
        message: expect.stringContaining(named),
      });
    }
    expect(sim.requests()).toHaveLength(0);
    // what asks for nothing is no reason to refuse
    await claude().chat({ ...ask, logprobs: false, logit_bias: {}, modalities: ['text'], seed: 7 }, call());
    expect(sent()).not.toHaveProperty('logit_bias');
  });

  it('maps model_context_window_exceeded to finish_reason length', () => {
    expect(finishReason('model_context_window_exceeded')).toBe('length');
  });

  it('asks for a json_schema response_format with a forced tool, and answers its input as the content', async () => {
    const schema = {
      type: 'object',
      properties: { city: { type: 'string' }, population: { type: 'integer' } },
      required: ['city', 'population'],
      additionalProperties: false,
    };
    const { body } = await claude().chat(
      {
        model: 'x',
        messages: [{ role: 'user', content: 'The biggest city of Norway?' }],
        response_format: { type: 'json_schema', json_schema: { name: 'city', schema, strict: true } },
      },
      call(),
    );
    expect(sent().tools).toEqual([
      { name: JSON_RESPONSE_TOOL, description: expect.any(String), input_schema: schema },
    ]);
    expect(sent().tool_choice).toEqual({ type: 'tool', name: JSON_RESPONSE_TOOL });
    const choice = body.choices[0]!;
    expect(choice.finish_reason).toBe('stop');
    expect(choice.message.tool_calls).toBeUndefined();
    expect(JSON.parse(choice.message.content!)).toEqual({ city: 'example city', population: 1 });
  });

  it('json_object asks for any object; text asks for nothing', async () => {
    sim.script([{ times: 1, reply: { toolCalls: [{ name: JSON_RESPONSE_TOOL, arguments: { ok: true } }] } }]);
    const { body } = await claude().chat(
      {
        model: 'x',
        messages: [{ role: 'user', content: 'JSON please' }],
        response_format: { type: 'json_object' },
      },
      call(),
    );
    expect(sent().tools).toEqual([
      { name: JSON_RESPONSE_TOOL, description: expect.any(String), input_schema: { type: 'object' } },
    ]);
    expect(body.choices[0]).toMatchObject({ message: { content: '{"ok":true}' }, finish_reason: 'stop' });
    await claude().chat(
      { model: 'x', messages: [{ role: 'user', content: 'Hi' }], response_format: { type: 'text' } },
      call(),
    );
    expect(sent()).not.toHaveProperty('tools');
    expect(sent()).not.toHaveProperty('tool_choice');
  });

  it('refuses response_format with tools (the forced tool would stop them), and a tool named like the JSON tool', async () => {
    const json = { type: 'json_object' };
    const ask = { model: 'x', messages: [{ role: 'user' as const, content: 'Hi' }] };
    await expect(
      claude().chat({ ...ask, tools: [weatherTool], response_format: json }, call()),
    ).rejects.toMatchObject({
      refusedByGateway: true,
      message: expect.stringMatching(/response_format together with tools/),
    });
    const impostor = { ...weatherTool, function: { ...weatherTool.function, name: JSON_RESPONSE_TOOL } };
    await expect(claude().chat({ ...ask, tools: [impostor] }, call())).rejects.toMatchObject({
      refusedByGateway: true,
      message: expect.stringContaining(JSON_RESPONSE_TOOL),
    });
    expect(sim.requests()).toHaveLength(0);
  });

  it('streams a JSON answer as content deltas, without tool_calls, finishing with stop', async () => {
    sim.script([
      { reply: { toolCalls: [{ name: JSON_RESPONSE_TOOL, arguments: { city: 'Oslo', rank: 1 } }] } },
    ]);
    const chunks = await collect(
      claude().chatStream(
        {
          model: 'x',
          stream: true,
          messages: [{ role: 'user', content: 'The biggest city of Norway?' }],
          response_format: {
            type: 'json_schema',
            json_schema: {
              name: 'city',
              schema: { type: 'object', properties: { city: { type: 'string' } } },
            },
          },
        },
        call(),
      ),
    );
    expect(chunks[0]!.choices[0]!.delta.role).toBe('assistant');
    expect(chunks.filter((c) => c.choices[0]?.delta.content).length).toBeGreaterThan(1);
    expect(JSON.parse(chunks.map((c) => c.choices[0]?.delta.content ?? '').join(''))).toEqual({
      city: 'Oslo',
      rank: 1,
    });
    expect(chunks.some((c) => c.choices[0]?.delta.tool_calls)).toBe(false);
    expect(chunks.at(-2)!.choices[0]!.finish_reason).toBe('stop');
  });

  it('streams text deltas as chunks, the stop reason as finish_reason and the usage as a final chunk', async () => {
    sim.script([{ splitFramesBytes: 7 }]);
    const chunks = await collect(
      claude().chatStream(
        { model: 'x', stream: true, messages: [{ role: 'user', content: 'Count to three' }] },
        call(),
      ),
    );
    expect(sent().stream).toBe(true);
    expect(chunks[0]!.choices[0]!.delta.role).toBe('assistant');
    expect(chunks[0]!.id).toMatch(/^msg_/);
    const text = chunks.map((c) => c.choices[0]?.delta.content ?? '').join('');
    expect(text).toBe('Simulated answer to: Count to three');
    expect(chunks.at(-2)!.choices[0]!.finish_reason).toBe('stop');
    expect(chunks.at(-1)).toMatchObject({
      choices: [],
      usage: {
        prompt_tokens: anthropicInputTokens(sent() as never),
        completion_tokens: countSimulatorTokens(text),
      },
    });
  });

  it('leaves the connection open for the next call after message_stop', async () => {
    const ask = { model: 'x', messages: [{ role: 'user' as const, content: 'Hi' }] };
    sim.script([{ endDelayMs: 30 }]); // the body ends a little after its last event
    await collect(claude().chatStream(ask, call()));
    const [stream] = sim.requests();
    await claude().chat(ask, call()); // a full round trip: a torn-down socket would be gone by now
    expect(sim.openConnections()).toContain(stream!.remotePort);
  });

  it('streams tool_use blocks as indexed tool_calls deltas built from input_json_delta', async () => {
    sim.script([
      {
        reply: {
          content: 'Let me check.',
          toolCalls: [
            { name: 'get_weather', arguments: { city: 'Oslo' } },
            { name: 'get_weather', arguments: { city: 'Rome' } },
          ],
        },
      },
    ]);
    const chunks = await collect(
      claude().chatStream(
        { model: 'x', tools: [weatherTool], messages: [{ role: 'user', content: 'Weather?' }] },
        call(),
      ),
    );
    expect(chunks.map((c) => c.choices[0]?.delta.content ?? '').join('')).toBe('Let me check.');
    const deltas = chunks.flatMap((c) => c.choices[0]?.delta.tool_calls ?? []);
    const starts = deltas.filter((d) => d.id);
    expect(starts.map((d) => [d.index, d.function?.name])).toEqual([
      [0, 'get_weather'],
      [1, 'get_weather'],
    ]);
    const args = (index: number) =>
      JSON.parse(
        deltas
          .filter((d) => d.index === index)
          .map((d) => d.function?.arguments ?? '')
          .join(''),
      );
    expect(args(0)).toEqual({ city: 'Oslo' });
    expect(args(1)).toEqual({ city: 'Rome' });
    expect(chunks.at(-2)!.choices[0]!.finish_reason).toBe('tool_calls');
  });

  it('maps Anthropic error answers: overloaded_error and rate_limit_error retryable with Retry-After', async () => {
    sim.script([
      { times: 1, error: { status: 529 } },
      { times: 1, error: { status: 429, retryAfterSeconds: 12 } },
      { times: 1, error: { status: 400 } },
    ]);
    const a = claude();
    const ask = { model: 'x', messages: [{ role: 'user' as const, content: 'hi' }] };
    await expect(a.chat(ask, call())).rejects.toMatchObject({
      upstreamStatus: 529,
      providerErrorType: 'overloaded_error',
      retryable: true,
    });
    await expect(a.chat(ask, call())).rejects.toMatchObject({
      upstreamStatus: 429,
      providerErrorType: 'rate_limit_error',
      retryable: true,
      retryAfterSeconds: 12,
    });
    await expect(a.chat(ask, call())).rejects.toMatchObject({
      upstreamStatus: 400,
      providerErrorType: 'invalid_request_error',
      retryable: false,
    });
    sim.script([{ times: 1, error: { status: 500, headers: { 'x-should-retry': 'false' } } }]);
    await expect(a.chat(ask, call())).rejects.toMatchObject({ upstreamStatus: 500, retryable: false });
    const wrongKey = createProviderAdapter(
      { name: 'anthropic', type: 'anthropic', baseUrl: sim.anthropicBaseUrl, apiKey: 'nope' },
      { clock },
    );
    await expect(wrongKey.chat(ask, call())).rejects.toMatchObject({
      upstreamStatus: 401,
      providerErrorType: 'authentication_error',
    });
  });

  it('throws the in-stream error event after the chunks already yielded', async () => {
    sim.script([
      {
        streamFailure: {
          afterChunks: 5,
          mode: 'error-event',
          type: 'overloaded_error',
          message: 'Overloaded',
        },
      },
    ]);
    const seen: ChatCompletionChunk[] = [];
    const error = await (async () => {
      for await (const chunk of claude().chatStream(
        { model: 'x', messages: [{ role: 'user', content: 'Tell me more' }] },
        call(),
      ))
        seen.push(chunk);
    })().catch((e: unknown) => e);
    expect(seen.length).toBeGreaterThan(0);
    expect(error).toBeInstanceOf(ProviderError);
    expect(error).toMatchObject({
      providerErrorType: 'overloaded_error',
      upstreamStatus: null,
      retryable: false,
      message: 'Overloaded',
    });
  });

  it('an error event before any content is retryable: nothing reached the caller', async () => {
    sim.script([{ streamFailure: { afterChunks: 1, mode: 'error-event', type: 'overloaded_error' } }]);
    const seen: ChatCompletionChunk[] = [];
    const error = await (async () => {
      for await (const chunk of claude().chatStream(
        { model: 'x', messages: [{ role: 'user', content: 'Hi' }] },
        call(),
      ))
        seen.push(chunk);
    })().catch((e: unknown) => e);
    expect(seen).toHaveLength(0);
    expect(error).toMatchObject({ providerErrorType: 'overloaded_error', retryable: true });
  });

  it('a stream cut before message_stop is an incomplete_stream error', async () => {
    sim.script([{ streamFailure: { afterChunks: 4, mode: 'disconnect' } }]);
    await expect(
      collect(
        claude().chatStream({ model: 'x', messages: [{ role: 'user', content: 'Hi there friend' }] }, call()),
      ),
    ).rejects.toBeInstanceOf(ProviderError);
  });

  it('times out a hanging provider and closes the request', async () => {
    sim.script([{ hang: true }]);
    await expect(
      collect(
        claude().chatStream(
          { model: 'x', messages: [{ role: 'user', content: 'Hi' }] },
          call({ timeoutMs: 120 }),
        ),
      ),
    ).rejects.toBeInstanceOf(ProviderTimeoutError);
    await waitFor(() => sim.requests()[0]?.clientClosed, { what: 'upstream closed' });
  });

  it('accepts a base URL that already ends in /v1', async () => {
    await claude(`${sim.anthropicBaseUrl}/v1`).chat(
      { model: 'x', messages: [{ role: 'user', content: 'Hi' }] },
      call(),
    );
    expect(sim.requests()[0]!.path).toBe('/v1/messages');
  });

  it('has no embeddings: a typed, non-retryable error without a request', async () => {
    const error = await claude()
      .embeddings({ model: 'x', input: 'hi' }, call())
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ProviderUnsupportedError);
    expect(error).toMatchObject({
      operation: 'embeddings',
      retryable: false,
      providerErrorType: 'unsupported_operation',
    });
    expect(sim.requests()).toHaveLength(0);
    expect(claude().rerank).toBeUndefined();
  });

  it("a tool without parameters streams '{}' as its arguments, as the plain answer gives them", async () => {
    // Anthropic streams such a tool_use block with no input_json_delta (or an empty one)
    const nowTool = { type: 'function' as const, function: { name: 'now', description: 'The time' } };
    const reply = {
      reply: {
        toolCalls: [
          { name: 'now', arguments: '' },
          { name: 'now', arguments: '{"tz":"UTC"}' },
        ],
      },
    };
    sim.script([reply]);
    const ask = { model: 'x', tools: [nowTool], messages: [{ role: 'user' as const, content: 'Time?' }] };
    const chunks = await collect(claude().chatStream({ ...ask, stream: true }, call()));
    const deltas = chunks.flatMap((c) => c.choices[0]?.delta.tool_calls ?? []);
    const args = (index: number) =>
      deltas
        .filter((d) => d.index === index)
        .map((d) => d.function?.arguments ?? '')
        .join('');
    expect([args(0), args(1)]).toEqual(['{}', '{"tz":"UTC"}']);

    sim.script([reply]);
    const plain = await claude().chat(ask, call());
    const calls = (
      plain.body.choices[0]!.message as { tool_calls: Array<{ function: { arguments: string } }> }
    ).tool_calls;
    expect(calls.map((c) => c.function.arguments)).toEqual(['{}', '{"tz":"UTC"}']);
  });
});
