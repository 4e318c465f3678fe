import { inflateSync } from 'node:zlib';
import {
  anthropicInputTokens,
  countSimulatorTokens,
  openaiPromptTokens,
  type ProviderSimulator,
  startProviderSimulator,
  waitFor,
} from '../src';

let sim: ProviderSimulator;
beforeAll(async () => {
  sim = await startProviderSimulator({ apiKey: 'sk-sim' });
});
afterAll(() => sim.close());
beforeEach(() => sim.reset());

// biome-ignore lint/suspicious/noExplicitAny: the tests read arbitrary wire JSON
type Wire = any;
type WireResponse = Omit<Response, 'json'> & { json(): Promise<Wire> };

const openai = (path: string, body: unknown, headers: Record<string, string> = {}): Promise<WireResponse> =>
  fetch(`${sim.openaiBaseUrl}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: 'Bearer sk-sim', ...headers },
    body: JSON.stringify(body),
  });
const anthropic = (body: unknown, headers: Record<string, string> = {}): Promise<WireResponse> =>
  fetch(`${sim.anthropicBaseUrl}/v1/messages`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'x-api-key': 'sk-sim',
      'anthropic-version': '2023-06-01',
      ...headers,
    },
    body: JSON.stringify(body),
  });

/** The SSE frames of a response, split on blank lines, comments dropped. */
async function frames(res: WireResponse): Promise<Array<{ event?: string; data: string }>> {
  const text = await res.text();
  return text
    .split('\n\n')
    .filter((block) => block.trim() && !block.startsWith(':'))
    .map((block) => {
      const lines = block.split('\n').filter((l) => !l.startsWith(':'));
      const event = lines.find((l) => l.startsWith('event: '))?.slice(7);
      const data = lines.find((l) => l.startsWith('data: '))?.slice(6) ?? '';
      return { event, data };
    });
}

const chat = { model: 'sim-chat', messages: [{ role: 'user', content: 'Tell me about the moon, please.' }] };

describe('provider simulator: OpenAI wire format', () => {
  it('answers a chat completion derived from the prompt, with counted usage, and records the request', async () => {
    const res = await openai('/chat/completions', chat, { 'x-trace': 'abc' });
    expect(res.status).toBe(200);
    const body = await res.json();
    const text = body.choices[0].message.content;
    expect(text).toBe('Simulated answer to: Tell me about the moon, please.');
    expect(body.choices[0].finish_reason).toBe('stop');
    const prompt = openaiPromptTokens(chat);
    expect(prompt).toBe(3 + 3 + countSimulatorTokens('Tell me about the moon, please.'));
    expect(body.usage).toEqual({
      prompt_tokens: prompt,
      completion_tokens: countSimulatorTokens(text),
      total_tokens: prompt + countSimulatorTokens(text),
    });
    const [seen] = sim.requests();
    expect(seen).toMatchObject({
      api: 'openai',
      endpoint: 'chat',
      model: 'sim-chat',
      path: '/v1/chat/completions',
    });
    expect(seen!.headers['x-trace']).toBe('abc');
    expect(seen!.body).toEqual(chat);
  });

  it('streams word by word with a final usage chunk when include_usage is asked, then [DONE]', async () => {
    const res = await openai('/chat/completions', {
      ...chat,
      stream: true,
      stream_options: { include_usage: true },
    });
    expect(res.headers.get('content-type')).toMatch(/text\/event-stream/);
    const all = await frames(res);
    expect(all.at(-1)!.data).toBe('[DONE]');
    const chunks = all.slice(0, -1).map((f) => JSON.parse(f.data));
    const text = chunks.map((c) => c.choices[0]?.delta.content ?? '').join('');
    expect(text).toBe('Simulated answer to: Tell me about the moon, please.');
    expect(chunks.length).toBeGreaterThan(5);
    const usage = chunks.at(-1);
    expect(usage.choices).toEqual([]);
    expect(usage.usage.completion_tokens).toBe(countSimulatorTokens(text));
    expect(chunks.at(-2).choices[0].finish_reason).toBe('stop');
  });

  it('sends no usage chunk unless asked', async () => {
    const chunks = (await frames(await openai('/chat/completions', { ...chat, stream: true }))).slice(0, -1);
    expect(chunks.every((c) => !('usage' in JSON.parse(c.data)))).toBe(true);
  });

  it('calls the offered tool with arguments from its schema, streamed as indexed tool_calls deltas', async () => {
    const tools = [
      {
        type: 'function',
        function: {
          name: 'get_weather',
          parameters: { type: 'object', properties: { city: { type: 'string' }, days: { type: 'integer' } } },
        },
      },
    ];
    const plain = await (await openai('/chat/completions', { ...chat, tools })).json();
    expect(plain.choices[0].finish_reason).toBe('tool_calls');
    expect(plain.choices[0].message.tool_calls[0].function).toEqual({
      name: 'get_weather',
      arguments: JSON.stringify({ city: 'example city', days: 1 }),
    });
    const chunks = (await frames(await openai('/chat/completions', { ...chat, tools, stream: true })))
      .slice(0, -1)
      .map((f) => JSON.parse(f.data));
    const deltas = chunks.flatMap((c) => c.choices[0]?.delta.tool_calls ?? []);
    expect(deltas[0]).toMatchObject({ index: 0, type: 'function', function: { name: 'get_weather' } });
    expect(deltas.map((d) => d.function.arguments).join('')).toBe(
      JSON.stringify({ city: 'example city', days: 1 }),
    );
    expect(deltas.length).toBeGreaterThan(2);
  });

  it('answers the tool result with text, and stops at max_tokens with finish_reason length', async () => {
    const body = await (
      await openai('/chat/completions', {
        model: 'm',
        max_tokens: 3,
        messages: [
          { role: 'user', content: 'weather?' },
          {
            role: 'assistant',
            content: null,
            tool_calls: [{ id: 'c1', type: 'function', function: { name: 'w', arguments: '{}' } }],
          },
          { role: 'tool', tool_call_id: 'c1', content: 'sunny' },
        ],
        tools: [{ type: 'function', function: { name: 'w', parameters: {} } }],
      })
    ).json();
    expect(body.choices[0].finish_reason).toBe('length');
    expect(body.usage.completion_tokens).toBe(3);
  });

  it('returns embeddings of the requested dimensions, as floats or base64 float32', async () => {
    const body = await (
      await openai('/embeddings', { model: 'e', input: ['a b', 'c'], dimensions: 5 })
    ).json();
    expect(body.data).toHaveLength(2);
    expect(body.data[0].embedding).toHaveLength(5);
    expect(body.usage).toEqual({ prompt_tokens: 3, total_tokens: 3 });
    const b64 = await (
      await openai('/embeddings', { model: 'e', input: 'a b', dimensions: 5, encoding_format: 'base64' })
    ).json();
    const floats = new Float32Array(Uint8Array.from(Buffer.from(b64.data[0].embedding, 'base64')).buffer);
    expect(floats).toHaveLength(5);
    expect(floats[0]).toBeCloseTo(body.data[0].embedding[0], 5);
  });

  it('reranks by lexical overlap, best first, cut at top_n', async () => {
    const body = await (
      await openai('/rerank', {
        model: 'r',
        query: 'red apple',
        documents: ['blue sky', 'red apple pie', 'an apple'],
        top_n: 2,
      })
    ).json();
    expect(body.results.map((r: { index: number }) => r.index)).toEqual([1, 2]);
    expect(body.results[0].relevance_score).toBe(1);
  });

  it('generates valid PNG images as b64_json or url', async () => {
    const body = await (
      await openai('/images/generations', { model: 'i', prompt: 'a cat', response_format: 'b64_json' })
    ).json();
    const png = Buffer.from(body.data[0].b64_json, 'base64');
    expect(png.subarray(1, 4).toString()).toBe('PNG');
    const idat = png.indexOf('IDAT');
    const length = png.readUInt32BE(idat - 4);
    expect(inflateSync(png.subarray(idat + 4, idat + 4 + length))).toHaveLength(8 * (1 + 8 * 3));
    const byUrl = await (
      await openai('/images/generations', { model: 'i', prompt: 'a cat', response_format: 'url' })
    ).json();
    const fetched = await fetch(byUrl.data[0].url);
    expect(fetched.headers.get('content-type')).toBe('image/png');
  });

  it('transcribes a multipart upload in json, text and verbose_json, with the WAV duration', async () => {
    const wav = Buffer.alloc(44 + 32_000);
    wav.write('RIFF', 0);
    wav.writeUInt32LE(36 + 32_000, 4);
    wav.write('WAVEfmt ', 8);
    wav.writeUInt32LE(16, 16);
    wav.writeUInt16LE(1, 20);
    wav.writeUInt16LE(1, 22);
    wav.writeUInt32LE(16_000, 24);
    wav.writeUInt32LE(32_000, 28);
    wav.writeUInt16LE(2, 32);
    wav.writeUInt16LE(16, 34);
    wav.write('data', 36);
    wav.writeUInt32LE(32_000, 40);
    const upload = (format: string) => {
      const form = new FormData();
      form.set('file', new Blob([wav], { type: 'audio/wav' }), 'hello.wav');
      form.set('model', 'whisper-1');
      form.set('response_format', format);
      return fetch(`${sim.openaiBaseUrl}/audio/transcriptions`, {
        method: 'POST',
        headers: { authorization: 'Bearer sk-sim' },
        body: form,
      });
    };
    sim.script([{ transcript: 'hello world' }]);
    expect(await (await upload('json')).json()).toEqual({
      text: 'hello world',
      usage: { type: 'duration', seconds: 1 },
    });
    expect(await (await upload('text')).text()).toBe('hello world\n');
    expect(await (await upload('verbose_json')).json()).toMatchObject({ duration: 1, text: 'hello world' });
    expect(sim.requests()[0]!.body).toMatchObject({
      model: 'whisper-1',
      file: { filename: 'hello.wav', size: wav.length },
    });
  });

  it('serves the Azure deployment form, requiring api-version and accepting the api-key header', async () => {
    const path = `${sim.url}/openai/deployments/my-gpt/chat/completions`;
    const init = {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'api-key': 'sk-sim' },
      body: JSON.stringify({ messages: chat.messages }),
    };
    expect((await fetch(path, init)).status).toBe(404);
    const res: WireResponse = await fetch(`${path}?api-version=2024-10-21`, init);
    expect((await res.json()).model).toBe('my-gpt');
    expect(sim.requests()[1]).toMatchObject({ model: 'my-gpt', query: { 'api-version': '2024-10-21' } });
  });

  it('refuses a wrong key in the provider error shape', async () => {
    const res = await openai('/chat/completions', chat, { authorization: 'Bearer nope' });
    expect(res.status).toBe(401);
    expect((await res.json()).error).toMatchObject({
      type: 'invalid_request_error',
      code: 'invalid_api_key',
    });
  });
});

describe('provider simulator: scripts', () => {
  it('answers a scripted 429 with retry-after, for the given number of times only', async () => {
    sim.script([{ match: { endpoint: 'chat' }, times: 1, error: { status: 429, retryAfterSeconds: 7 } }]);
    const limited = await openai('/chat/completions', chat);
    expect(limited.status).toBe(429);
    expect(limited.headers.get('retry-after')).toBe('7');
    expect((await limited.json()).error.code).toBe('rate_limit_exceeded');
    expect((await openai('/chat/completions', chat)).status).toBe(200);
  });

  it('matches rules by model and stream', async () => {
    sim.script([{ match: { model: 'down', stream: true }, error: { status: 503 } }]);
    expect((await openai('/chat/completions', { ...chat, model: 'down' })).status).toBe(200);
    expect((await openai('/chat/completions', { ...chat, model: 'down', stream: true })).status).toBe(503);
  });

  it('fails a stream in the middle with the provider error frame', async () => {
    sim.script([{ streamFailure: { afterChunks: 2, mode: 'error-event', type: 'server_error' } }]);
    const all = await frames(await openai('/chat/completions', { ...chat, stream: true }));
    expect(all).toHaveLength(3);
    expect(JSON.parse(all[2]!.data).error.type).toBe('server_error');
  });

  it('cuts the connection in the middle of a stream', async () => {
    sim.script([{ streamFailure: { afterChunks: 2, mode: 'disconnect' } }]);
    const res = await openai('/chat/completions', { ...chat, stream: true });
    await expect(res.text()).rejects.toThrow();
  });

  it('hangs without answering until the client gives up', async () => {
    sim.script([{ hang: true }]);
    const controller = new AbortController();
    const pending = fetch(`${sim.openaiBaseUrl}/chat/completions`, {
      method: 'POST',
      headers: { authorization: 'Bearer sk-sim' },
      body: JSON.stringify(chat),
      signal: controller.signal,
    });
    await waitForRequests(1);
    controller.abort();
    await expect(pending).rejects.toThrow(/abort/i);
  });

  it('splits frames into small writes and interleaves comments without changing the content', async () => {
    sim.script([{ splitFramesBytes: 9, sseComments: true }]);
    const res = await openai('/chat/completions', { ...chat, stream: true });
    const reader = res.body!.getReader();
    let reads = 0;
    let text = '';
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      reads += 1;
      text += Buffer.from(value).toString();
    }
    expect(reads).toBeGreaterThan(10);
    expect(text).toContain(': keep-alive');
    expect(text.endsWith('data: [DONE]\n\n')).toBe(true);
  });
});

describe('provider simulator: Anthropic wire format', () => {
  const messages = {
    model: 'claude-sim',
    max_tokens: 100,
    system: 'Be brief.',
    messages: [{ role: 'user', content: 'Hello there' }],
  };

  it('answers a message with content blocks and input/output usage', async () => {
    const body = await (await anthropic(messages)).json();
    expect(body).toMatchObject({ type: 'message', role: 'assistant', stop_reason: 'end_turn' });
    expect(body.content).toEqual([{ type: 'text', text: 'Simulated answer to: Hello there' }]);
    expect(body.usage.input_tokens).toBe(anthropicInputTokens(messages));
    expect(body.usage.output_tokens).toBe(countSimulatorTokens('Simulated answer to: Hello there'));
  });

  it('refuses what Anthropic refuses: system role in messages, missing version header, orphan tool results', async () => {
    const system = await anthropic({
      ...messages,
      messages: [{ role: 'system', content: 'x' }, ...messages.messages],
    });
    expect(system.status).toBe(400);
    expect(await system.json()).toMatchObject({ type: 'error', error: { type: 'invalid_request_error' } });
    expect((await anthropic(messages, { 'anthropic-version': '' })).status).toBe(400);
    const orphan = await anthropic({
      ...messages,
      messages: [{ role: 'user', content: [{ type: 'tool_result', tool_use_id: 'nope', content: 'x' }] }],
    });
    expect(orphan.status).toBe(400);
  });

  it('streams the event sequence, tool_use input as input_json_delta, usage in message_delta', async () => {
    const tools = [
      { name: 'lookup', input_schema: { type: 'object', properties: { q: { type: 'string' } } } },
    ];
    const all = await frames(await anthropic({ ...messages, tools, stream: true }));
    const events = all.map((f) => f.event);
    expect(events[0]).toBe('message_start');
    expect(events.slice(-2)).toEqual(['message_delta', 'message_stop']);
    const deltas = all.filter((f) => f.event === 'content_block_delta').map((f) => JSON.parse(f.data).delta);
    expect(deltas.every((d) => d.type === 'input_json_delta')).toBe(true);
    expect(JSON.parse(deltas.map((d) => d.partial_json).join(''))).toEqual({ q: 'example q' });
    const delta = JSON.parse(all.at(-2)!.data);
    expect(delta.delta.stop_reason).toBe('tool_use');
    expect(delta.usage.output_tokens).toBeGreaterThan(0);
  });

  it('cuts the answer before the first stop sequence, named as Anthropic names it: in the answer, not at message_start', async () => {
    sim.script([{ reply: { content: 'Paris. END of answer' } }]);
    const ask = { ...messages, stop_sequences: ['STOP', 'END'] };
    expect(await (await anthropic(ask)).json()).toMatchObject({
      content: [{ type: 'text', text: 'Paris. ' }],
      stop_reason: 'stop_sequence',
      stop_sequence: 'END',
    });
    const all = await frames(await anthropic({ ...ask, stream: true }));
    expect(JSON.parse(all[0]!.data).message).toMatchObject({ stop_reason: null, stop_sequence: null });
    expect(JSON.parse(all.at(-2)!.data).delta).toEqual({
      stop_reason: 'stop_sequence',
      stop_sequence: 'END',
    });
  });

  it('answers scripted errors in Anthropic shape: 529 overloaded, mid-stream error event', async () => {
    sim.script([
      { times: 1, error: { status: 529 } },
      { streamFailure: { afterChunks: 3, mode: 'error-event', type: 'overloaded_error' } },
    ]);
    const overloaded = await anthropic(messages);
    expect(overloaded.status).toBe(529);
    expect((await overloaded.json()).error.type).toBe('overloaded_error');
    const all = await frames(await anthropic({ ...messages, stream: true }));
    expect(all.at(-1)).toMatchObject({ event: 'error' });
    expect(JSON.parse(all.at(-1)!.data).error.type).toBe('overloaded_error');
  });
});

async function waitForRequests(n: number) {
  await waitFor(() => sim.requests().length >= n, { what: `${n} requests` });
}
