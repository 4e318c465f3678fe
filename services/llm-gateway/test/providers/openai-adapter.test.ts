import {
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
} from '../../src/providers';
import { collect, providerCall } from '../provider-fixtures';

let sim: ProviderSimulator;
beforeAll(async () => {
  sim = await startProviderSimulator({ apiKey: 'sk-test' });
});
afterAll(() => sim.close());
beforeEach(() => sim.reset());

const clock = { now: () => new Date('2026-03-01T00:00:00Z') };
const adapter = () =>
  createProviderAdapter(
    {
      name: 'oai',
      type: 'openai',
      baseUrl: sim.openaiBaseUrl,
      apiKey: 'sk-test',
      headers: { 'x-team': 'search' },
    },
    { clock },
  );
const call = (over: Partial<ProviderCall> = {}) => providerCall('gpt-sim', over);
const ask: ChatCompletionRequest = {
  model: 'catalogue/chat',
  messages: [{ role: 'user', content: 'Name three rivers in Europe' }],
};

const textOf = (chunks: ChatCompletionChunk[]) =>
  chunks.map((c) => c.choices[0]?.delta.content ?? '').join('');
const expectedAnswer = 'Simulated answer to: Name three rivers in Europe';

describe('OpenAI-protocol adapter', () => {
  it('sends the provider model, its key and the extra and per-request headers; returns body and usage', async () => {
    const { body, usage } = await adapter().chat(
      ask,
      call({
        headers: {
          'x-user-id': 'u1',
          Authorization: 'Bearer stolen',
          'Content-Type': 'text/plain',
          Connection: 'close',
          'content-length': '1',
        },
      }),
    );
    expect(body.choices[0]!.message.content).toBe(expectedAnswer);
    expect(usage).toEqual(body.usage);
    expect(usage!.completion_tokens).toBe(countSimulatorTokens(expectedAnswer));
    const [seen] = sim.requests();
    expect(seen!.model).toBe('gpt-sim');
    expect(seen!.headers.authorization).toBe('Bearer sk-test');
    expect(seen!.headers['x-team']).toBe('search');
    expect(seen!.headers['x-user-id']).toBe('u1');
    expect(seen!.headers['content-type']).toBe('application/json');
    expect(seen!.headers.connection).toBe('keep-alive');
    expect((seen!.body as { stream: boolean }).stream).toBe(false);
  });

  it('streams chunks and always asks for usage, which arrives as a final chunk with no choices', async () => {
    const chunks = await collect(
      adapter().chatStream({ ...ask, stream: true, stream_options: { include_usage: false } }, call()),
    );
    expect(textOf(chunks)).toBe(expectedAnswer);
    expect((sim.requests()[0]!.body as { stream_options: unknown }).stream_options).toEqual({
      include_usage: true,
    });
    const last = chunks.at(-1)!;
    expect(last.choices).toEqual([]);
    expect(last.usage!.completion_tokens).toBe(countSimulatorTokens(expectedAnswer));
    expect(chunks.slice(0, -1).every((c) => !('usage' in c))).toBe(true);
    expect(chunks.at(-2)!.choices[0]!.finish_reason).toBe('stop');
  });

  it('leaves the connection open for the next call once a stream is complete', async () => {
    sim.script([{ endDelayMs: 30 }]); // the body ends a little after its last event
    await collect(adapter().chatStream(ask, call()));
    const [stream] = sim.requests();
    await adapter().chat(ask, call()); // a full round trip: a torn-down socket would be gone by now
    expect(sim.openConnections()).toContain(stream!.remotePort);
  });

  it('yields no usage chunk when the provider reports none (the gateway then counts itself)', async () => {
    sim.script([{ reply: { omitStreamUsage: true } }]);
    const chunks = await collect(adapter().chatStream(ask, call()));
    expect(textOf(chunks)).toBe(expectedAnswer);
    expect(chunks.at(-1)!.choices[0]!.finish_reason).toBe('stop');
    expect(chunks.some((c) => c.usage)).toBe(false);
  });

  it("keeps the provider's token details in the usage chunk, as a plain answer keeps them", async () => {
    const details = {
      prompt_tokens_details: { cached_tokens: 4 },
      completion_tokens_details: { reasoning_tokens: 2 },
    };
    sim.script([{ reply: { usage: details } }]);
    const chunks = await collect(adapter().chatStream(ask, call()));
    expect(chunks.at(-1)!.usage).toMatchObject({ ...details, total_tokens: expect.any(Number) });
  });

  it('parses frames split across TCP reads with comments between them', async () => {
    sim.script([{ splitFramesBytes: 5, sseComments: true }]);
    const chunks = await collect(adapter().chatStream(ask, call()));
    expect(textOf(chunks)).toBe(expectedAnswer);
    expect(chunks.at(-1)!.usage).not.toBeNull();
  });

  it('passes tool call deltas through with their index', async () => {
    const tools = [
      {
        type: 'function' as const,
        function: { name: 'lookup', parameters: { type: 'object', properties: { q: { type: 'string' } } } },
      },
    ];
    const chunks = await collect(adapter().chatStream({ ...ask, tools }, call()));
    const deltas = chunks.flatMap((c) => c.choices[0]?.delta.tool_calls ?? []);
    expect(deltas[0]).toMatchObject({ index: 0, function: { name: 'lookup' } });
    expect(JSON.parse(deltas.map((d) => d.function?.arguments ?? '').join(''))).toEqual({ q: 'example q' });
  });

  it('throws a ProviderError from the iterator when the provider reports an error mid-stream', async () => {
    sim.script([
      { streamFailure: { afterChunks: 3, mode: 'error-event', type: 'server_error', message: 'boom' } },
    ]);
    const seen: ChatCompletionChunk[] = [];
    const error = await (async () => {
      for await (const chunk of adapter().chatStream(ask, call())) seen.push(chunk);
    })().catch((e: unknown) => e);
    expect(seen).toHaveLength(3);
    expect(error).toBeInstanceOf(ProviderError);
    expect(error).toMatchObject({
      providerErrorType: 'server_error',
      retryable: false,
      provider: 'oai',
      model: 'gpt-sim',
    });
  });

  it('throws a connection ProviderError when the provider drops the stream midway', async () => {
    sim.script([{ streamFailure: { afterChunks: 2, mode: 'disconnect' } }]);
    const error = await collect(adapter().chatStream(ask, call())).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ProviderError);
    expect(error).toMatchObject({
      providerErrorType: 'connection_error',
      retryable: false,
      upstreamStatus: null,
    });
  });

  it('times out when the provider never answers, and cancels the request', async () => {
    sim.script([{ hang: true }]);
    const error = await adapter()
      .chat(ask, call({ timeoutMs: 150 }))
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ProviderTimeoutError);
    expect(error).toMatchObject({ provider: 'oai', model: 'gpt-sim', midStream: false });
    await waitFor(() => sim.requests()[0]?.clientClosed, { what: 'the upstream request to be closed' });
  });

  it('times out a stream that sends no first chunk, and one that goes silent midway', async () => {
    sim.script([
      { times: 1, streamFailure: { afterChunks: 0, mode: 'hang' } },
      { streamFailure: { afterChunks: 2, mode: 'hang' } },
    ]);
    const first = await collect(adapter().chatStream(ask, call({ timeoutMs: 150 }))).catch((e: unknown) => e);
    expect(first).toBeInstanceOf(ProviderTimeoutError);
    expect(first).toMatchObject({ midStream: false });
    const second = await collect(adapter().chatStream(ask, call({ timeoutMs: 150 }))).catch(
      (e: unknown) => e,
    );
    expect(second).toMatchObject({ name: 'ProviderTimeoutError', midStream: true });
  });

  it('a slow provider within the timeout is not a timeout', async () => {
    sim.script([{ latencyMs: 50, chunkDelayMs: 10 }]);
    expect(textOf(await collect(adapter().chatStream(ask, call())))).toBe(expectedAnswer);
  });

  it('aborting the signal cancels the upstream socket, before the answer and in the middle of a stream', async () => {
    sim.script([{ hang: true }]);
    const controller = new AbortController();
    const pending = adapter().chat(ask, call({ signal: controller.signal }));
    await waitFor(() => sim.requests().length === 1);
    controller.abort(new Error('client disconnected'));
    await expect(pending).rejects.toThrow('client disconnected');
    await waitFor(() => sim.requests()[0]!.clientClosed, { what: 'upstream closed' });

    sim.reset();
    sim.script([{ chunkDelayMs: 30 }]);
    const midway = new AbortController();
    const chunks: ChatCompletionChunk[] = [];
    const streaming = (async () => {
      for await (const chunk of adapter().chatStream(ask, call({ signal: midway.signal }))) {
        chunks.push(chunk);
        if (chunks.length === 2) midway.abort(new Error('client went away'));
      }
    })();
    await expect(streaming).rejects.toThrow('client went away');
    await waitFor(() => sim.requests()[0]!.clientClosed, { what: 'upstream closed' });
  });

  it('closes the upstream stream when the caller stops reading early', async () => {
    sim.script([{ chunkDelayMs: 20 }]);
    for await (const chunk of adapter().chatStream(ask, call())) {
      if (chunk.choices[0]?.delta.content) break;
    }
    await waitFor(() => sim.requests()[0]!.clientClosed, { what: 'upstream closed' });
  });

  it('maps error answers: provider type, retryable for 429/5xx, Retry-After in seconds or as a date', async () => {
    sim.script([
      { times: 1, error: { status: 429, retryAfterSeconds: 7 } },
      { times: 1, error: { status: 503 } },
      {
        times: 1,
        error: {
          status: 400,
          type: 'invalid_request_error',
          code: 'context_length_exceeded',
          message: 'too long',
        },
      },
      { times: 1, error: { status: 502, rawBody: '<html>Bad gateway</html>' } },
    ]);
    const a = adapter();
    await expect(a.chat(ask, call())).rejects.toMatchObject({
      upstreamStatus: 429,
      providerErrorType: 'rate_limit_exceeded',
      retryable: true,
      retryAfterSeconds: 7,
    });
    await expect(a.chat(ask, call())).rejects.toMatchObject({
      upstreamStatus: 503,
      providerErrorType: 'server_error',
      retryable: true,
    });
    await expect(a.chat(ask, call())).rejects.toMatchObject({
      upstreamStatus: 400,
      providerErrorType: 'context_length_exceeded',
      retryable: false,
      message: 'too long',
    });
    await expect(a.chat(ask, call())).rejects.toMatchObject({
      upstreamStatus: 502,
      providerErrorType: 'http_502',
    });
    // a stream's error answer is the same error, before any chunk
    sim.script([{ error: { status: 429, retryAfterSeconds: 3 } }]);
    await expect(collect(a.chatStream(ask, call()))).rejects.toMatchObject({
      upstreamStatus: 429,
      retryAfterSeconds: 3,
    });
  });

  it('reads Retry-After given as an HTTP date against the injected clock', async () => {
    const fakeFetch: typeof fetch = async () =>
      new Response('{"error":{"type":"requests","code":"rate_limit_exceeded","message":"slow down"}}', {
        status: 429,
        headers: { 'retry-after': 'Sun, 01 Mar 2026 00:00:30 GMT', 'content-type': 'application/json' },
      });
    const a = createProviderAdapter(
      { name: 'oai', type: 'openai', baseUrl: 'http://unused/v1' },
      { clock, fetch: fakeFetch },
    );
    await expect(a.chat(ask, call())).rejects.toMatchObject({ retryAfterSeconds: 30 });
  });

  it('a provider that cannot be reached is a retryable connection error', async () => {
    const closed = await startProviderSimulator();
    const url = closed.openaiBaseUrl;
    await closed.close();
    const a = createProviderAdapter({ name: 'gone', type: 'openai', baseUrl: url }, { clock });
    await expect(a.chat(ask, call())).rejects.toMatchObject({
      name: 'ProviderError',
      providerErrorType: 'connection_error',
      retryable: true,
    });
  });

  it('a body that is not the API is an invalid_response error', async () => {
    const fakeFetch: typeof fetch = async () => new Response('<html>login</html>', { status: 200 });
    const a = createProviderAdapter(
      { name: 'oai', type: 'openai', baseUrl: 'http://unused/v1' },
      { clock, fetch: fakeFetch },
    );
    await expect(a.chat(ask, call())).rejects.toMatchObject({
      providerErrorType: 'invalid_response',
      retryable: false,
    });
    await expect(collect(a.chatStream(ask, call()))).rejects.toMatchObject({
      providerErrorType: 'invalid_response',
    });
  });

  it('speaks Azure: deployment URL, api-version query, api-key header, no rerank', async () => {
    const azure = createProviderAdapter(
      {
        name: 'azure',
        type: 'openai',
        baseUrl: sim.url,
        apiKey: 'sk-test',
        azure: { apiVersion: '2024-10-21' },
      },
      { clock },
    );
    await azure.chat(ask, call({ model: 'gpt4o-prod' }));
    await collect(azure.chatStream(ask, call({ model: 'gpt4o-prod' })));
    await azure.embeddings({ model: 'x', input: 'hi' }, call({ model: 'emb-prod' }));
    const [chat, stream, emb] = sim.requests();
    expect(chat).toMatchObject({
      path: '/openai/deployments/gpt4o-prod/chat/completions',
      query: { 'api-version': '2024-10-21' },
    });
    expect(chat!.headers['api-key']).toBe('sk-test');
    expect(chat!.headers.authorization).toBeUndefined();
    expect(stream!.path).toBe('/openai/deployments/gpt4o-prod/chat/completions');
    expect(emb!.path).toBe('/openai/deployments/emb-prod/embeddings');
    expect(azure.rerank).toBeUndefined();
  });

  it('sends no Authorization to a keyless local server (Ollama, llama.cpp, LM Studio)', async () => {
    const open = await startProviderSimulator();
    try {
      const local = createProviderAdapter(
        { name: 'ollama', type: 'openai', baseUrl: `${open.openaiBaseUrl}/` },
        { clock },
      );
      await local.chat(ask, call({ model: 'llama3.2' }));
      expect(open.requests()[0]!.headers.authorization).toBeUndefined();
      expect(open.requests()[0]!.path).toBe('/v1/chat/completions');
    } finally {
      await open.close();
    }
  });

  it('embeds with the requested dimensions and reports usage', async () => {
    const { body, usage } = await adapter().embeddings(
      { model: 'x', input: ['a b', 'c d'], dimensions: 12 },
      call(),
    );
    expect((body.data[0]!.embedding as number[]).length).toBe(12);
    expect(usage).toEqual({ prompt_tokens: 4, completion_tokens: 0, total_tokens: 4 });
    expect((sim.requests()[0]!.body as { dimensions: number }).dimensions).toBe(12);
  });

  it('reranks through the native /rerank endpoint', async () => {
    const result = await adapter().rerank!(
      { query: 'green tea', documents: ['coffee', 'green tea leaves', 'tea'], top_n: 2 },
      call(),
    );
    expect(result.results).toEqual([
      { index: 1, relevance_score: 1 },
      { index: 2, relevance_score: 0.5 },
    ]);
    expect(result.usage!.total_tokens).toBeGreaterThan(0);
    expect(sim.requests()[0]).toMatchObject({ path: '/v1/rerank', model: 'gpt-sim' });
  });
});

describe('OpenAI-protocol stream events that are not chunks', () => {
  it('are an invalid_response error, never a TypeError (a 500): null, a number, a choice that is not an object', async () => {
    for (const data of ['null', '42', '"text"', '[1]', '{"choices":[null]}', '{"choices":[1]}']) {
      const fakeFetch: typeof fetch = async () =>
        new Response(`data: ${data}\n\ndata: [DONE]\n\n`, {
          status: 200,
          headers: { 'content-type': 'text/event-stream' },
        });
      const a = createProviderAdapter(
        { name: 'oai', type: 'openai', baseUrl: 'http://unused/v1' },
        { clock, fetch: fakeFetch },
      );
      await expect(collect(a.chatStream(ask, call()))).rejects.toMatchObject({
        providerErrorType: 'invalid_response',
      });
    }
  });
});
