import crypto from 'node:crypto';
import { inflateSync } from 'node:zlib';
import { audioDuration } from '../../audio/duration';
import { createProviderAdapter } from '..';
import type { ChatCompletionChunk, ProviderCall } from '../types';

const clock = { now: () => new Date('2026-01-02T03:04:05Z') };
const mock = createProviderAdapter({ name: 'mock', type: 'mock' }, { clock });
const call = (signal = new AbortController().signal): ProviderCall => ({
  model: 'mock-chat',
  headers: {},
  timeoutMs: 1000,
  signal,
});
const ask = (content: string) => ({ model: 'mock/chat', messages: [{ role: 'user' as const, content }] });

async function collect(stream: AsyncIterable<ChatCompletionChunk>) {
  const chunks: ChatCompletionChunk[] = [];
  for await (const chunk of stream) chunks.push(chunk);
  return chunks;
}

describe('mock provider', () => {
  it('answers deterministically from the prompt, with usage that adds up', async () => {
    const a = await mock.chat(ask('What is the capital of France?'), call());
    const b = await mock.chat(ask('What is the capital of France?'), call());
    expect(a).toEqual(b);
    expect(a.body.choices[0]!.message.content).toBe('Mock answer to: What is the capital of France?');
    expect(a.body.created).toBe(Date.parse('2026-01-02T03:04:05Z') / 1000);
    expect(a.body.model).toBe('mock-chat');
    expect(a.usage).toEqual({ prompt_tokens: 3 + 3 + 7, completion_tokens: 11, total_tokens: 24 });
    const other = await mock.chat(ask('Something else'), call());
    expect(other.body.choices[0]!.message.content).not.toBe(a.body.choices[0]!.message.content);
  });

  it('streams the same answer in several chunks and ends with a usage chunk', async () => {
    const plain = await mock.chat(ask('Tell me a story'), call());
    const chunks = await collect(mock.chatStream(ask('Tell me a story'), call()));
    expect(chunks.length).toBeGreaterThan(4);
    expect(chunks[0]!.choices[0]!.delta.role).toBe('assistant');
    const text = chunks.map((c) => c.choices[0]?.delta.content ?? '').join('');
    expect(text).toBe(plain.body.choices[0]!.message.content);
    expect(chunks.at(-2)!.choices[0]!.finish_reason).toBe('stop');
    expect(chunks.at(-1)).toMatchObject({ choices: [], usage: plain.usage });
  });

  it('stops at max_tokens with finish_reason length', async () => {
    const { body, usage } = await mock.chat({ ...ask('one two three four five'), max_tokens: 2 }, call());
    expect(body.choices[0]!.message.content).toBe('Mock answer');
    expect(body.choices[0]!.finish_reason).toBe('length');
    expect(usage!.completion_tokens).toBe(2);
  });

  it('answers JSON when the request asks for it: json_object, and json_schema with a value per property', async () => {
    const object = await mock.chat(
      { ...ask('give me json'), response_format: { type: 'json_object' } },
      call(),
    );
    expect(JSON.parse(object.body.choices[0]!.message.content!)).toEqual({
      answer: 'Mock answer to: give me json',
    });
    const schema = {
      type: 'object',
      properties: { city: { type: 'string' }, days: { type: 'integer' }, unit: { enum: ['C', 'F'] } },
    };
    const shaped = await mock.chat(
      { ...ask('weather'), response_format: { type: 'json_schema', json_schema: { name: 'w', schema } } },
      call(),
    );
    expect(JSON.parse(shaped.body.choices[0]!.message.content!)).toEqual({
      city: 'example city',
      days: 1,
      unit: 'C',
    });
    const streamed = await collect(
      mock.chatStream({ ...ask('give me json'), response_format: { type: 'json_object' } }, call()),
    );
    expect(streamed.map((c) => c.choices[0]?.delta.content ?? '').join('')).toBe(
      object.body.choices[0]!.message.content,
    );
  });

  it('calls a tool when the prompt asks for one, and answers from the tool result afterwards', async () => {
    const tools = [
      {
        type: 'function' as const,
        function: {
          name: 'get_weather',
          parameters: { type: 'object', properties: { city: { type: 'string' } } },
        },
      },
    ];
    const plain = await mock.chat({ ...ask('Hello'), tools }, call());
    expect(plain.body.choices[0]!.message.tool_calls).toBeUndefined();
    const { body } = await mock.chat({ ...ask('Use get_weather for Paris'), tools }, call());
    expect(body.choices[0]!.finish_reason).toBe('tool_calls');
    const toolCall = body.choices[0]!.message.tool_calls![0]!;
    expect(toolCall.function).toEqual({ name: 'get_weather', arguments: '{"city":"example city"}' });
    const forced = await mock.chat({ ...ask('Hello'), tools, tool_choice: 'required' }, call());
    expect(forced.body.choices[0]!.message.tool_calls).toHaveLength(1);
    const streamed = await collect(mock.chatStream({ ...ask('Use get_weather for Paris'), tools }, call()));
    const deltas = streamed.flatMap((c) => c.choices[0]?.delta.tool_calls ?? []);
    expect(deltas[0]).toMatchObject({ index: 0, id: toolCall.id, function: { name: 'get_weather' } });
    expect(deltas.map((d) => d.function?.arguments ?? '').join('')).toBe(toolCall.function.arguments);
    const after = await mock.chat(
      {
        model: 'm',
        tools,
        messages: [
          { role: 'user', content: 'Use get_weather' },
          { role: 'assistant', content: null, tool_calls: [toolCall] },
          { role: 'tool', tool_call_id: toolCall.id, content: 'sunny' },
        ],
      },
      call(),
    );
    expect(after.body.choices[0]!.message.content).toBe('Mock answer from the tool result: sunny');
  });

  it('looks for a tool named in the message among the first 128 tools and 64 KiB only, as OpenAI bounds tools', async () => {
    // 150,000 tools and a long message made the mock search the message once per tool: minutes of CPU
    const tools = Array.from({ length: 200 }, (_, i) => ({
      type: 'function' as const,
      function: { name: `tool_${i}_x`, parameters: { type: 'object' } },
    }));
    const named = async (content: string) =>
      (await mock.chat({ ...ask(content), tools }, call())).body.choices[0]!.message.tool_calls?.[0]?.function
        .name;
    expect(await named('please run tool_127_x now')).toBe('tool_127_x');
    expect(await named('please run tool_150_x now')).toBeUndefined();
    expect(await named(`${'x '.repeat(40 * 1024)} tool_5_x`)).toBeUndefined();
  });

  it('embeds each input in the requested dimensions as unit vectors, or base64 float32', async () => {
    const { body, usage } = await mock.embeddings(
      { model: 'e', input: ['hello world', 'bye'], dimensions: 64 },
      call(),
    );
    expect(body.data.map((d) => (d.embedding as number[]).length)).toEqual([64, 64]);
    const norm = Math.hypot(...(body.data[0]!.embedding as number[]));
    expect(norm).toBeCloseTo(1, 6);
    expect(usage).toEqual({ prompt_tokens: 3, completion_tokens: 0, total_tokens: 3 });
    const base = await mock.embeddings(
      { model: 'e', input: 'hello world', encoding_format: 'base64' },
      call(),
    );
    const bytes = Buffer.from(base.body.data[0]!.embedding as string, 'base64');
    expect(bytes.length).toBe(256 * 4);
    const floats = await mock.embeddings({ model: 'e', input: 'hello world' }, call());
    expect(bytes.readFloatLE(4)).toBeCloseTo((floats.body.data[0]!.embedding as number[])[1]!, 6);
    const again = await mock.embeddings({ model: 'e', input: 'hello world', dimensions: 64 }, call());
    expect(again.body.data[0]!.embedding).toEqual(body.data[0]!.embedding);
  });

  it('hashes an input once, not once per 8 dimensions: a long input at 3072 dimensions took seconds of CPU', async () => {
    const hashed: number[] = [];
    const real = crypto.createHash;
    const spy = jest.spyOn(crypto, 'createHash').mockImplementation((algorithm, options) => {
      const hash = real(algorithm, options);
      const update = hash.update.bind(hash);
      hash.update = ((data: string) => {
        hashed.push(data.length);
        return update(data);
      }) as typeof hash.update;
      return hash;
    });
    const input = 'word '.repeat(20_000);
    try {
      const { body } = await mock.embeddings({ model: 'e', input, dimensions: 3072 }, call());
      expect((body.data[0]!.embedding as number[]).length).toBe(3072);
    } finally {
      spy.mockRestore();
    }
    // the input once, whatever the dimensions
    expect(hashed.reduce((n, size) => n + size, 0)).toBeLessThan(2 * input.length);
  });

  it('reranks by a lexical score, best first', async () => {
    const { results } = await mock.rerank!(
      { query: 'paris weather', documents: ['rome', 'weather in paris today', 'paris'], top_n: 2 },
      call(),
    );
    expect(results).toEqual([
      { index: 1, relevance_score: 1 },
      { index: 2, relevance_score: 0.5 },
    ]);
  });

  it('draws a valid PNG per image', async () => {
    const { body } = await mock.images!({ prompt: 'a red fox', n: 2 }, call());
    expect(body.data).toHaveLength(2);
    const png = Buffer.from(body.data[0]!.b64_json!, 'base64');
    expect(png.subarray(0, 8)).toEqual(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]));
    const idat = png.indexOf('IDAT');
    expect(inflateSync(png.subarray(idat + 4, idat + 4 + png.readUInt32BE(idat - 4)))).toHaveLength(8 * 25);
    // every PNG ends with the same IEND chunk: length 0, type, and the CRC-32 of "IEND"
    expect(png.subarray(-12).toString('hex')).toBe('0000000049454e44ae426082');
    expect(body.data[0]!.b64_json).not.toBe(body.data[1]!.b64_json);
  });

  it('transcribes to a fixed-format text with the WAV duration', async () => {
    const wav = Buffer.alloc(44 + 16_000);
    wav.write('RIFF', 0);
    wav.write('WAVEfmt ', 8);
    wav.writeUInt32LE(16, 16);
    wav.writeUInt32LE(8_000, 28);
    wav.write('data', 36);
    wav.writeUInt32LE(16_000, 40);
    const upload = {
      file: wav,
      filename: 'a.wav',
      mimeType: 'audio/wav',
      fields: { response_format: 'json' },
    };
    const json = await mock.transcriptions!(upload, call());
    expect(json).toEqual({
      body: { text: 'Mock transcription of a.wav: 16044 bytes, 2.00 seconds.' },
      contentType: 'application/json',
      durationSeconds: 2,
    });
    const text = await mock.transcriptions!({ ...upload, fields: { response_format: 'text' } }, call());
    expect(text.body).toBe('Mock transcription of a.wav: 16044 bytes, 2.00 seconds.\n');
    await expect(
      mock.transcriptions!({ ...upload, fields: { response_format: 'xml' } }, call()),
    ).rejects.toMatchObject({
      name: 'ProviderError',
      retryable: false,
    });
  });

  it('speaks a WAV tone in pieces, its length following the input, and OpenAI’s events with stream_format sse', async () => {
    const bytes = async (audio: AsyncIterable<Uint8Array>) => {
      const pieces: Uint8Array[] = [];
      for await (const piece of audio) pieces.push(piece);
      return Buffer.concat(pieces);
    };
    const input = 'x'.repeat(60); // 4 s at 15 characters a second, 8,000 bytes a second
    const wav = await mock.speech!({ input, voice: 'alloy', response_format: 'mp3' }, call());
    expect(wav.contentType).toBe('audio/wav');
    const audio = await bytes(wav.audio);
    expect([audio.subarray(0, 4).toString(), audioDuration(audio)?.seconds]).toEqual(['RIFF', 4]);
    expect(await bytes((await mock.speech!({ input, voice: 'alloy' }, call())).audio)).toEqual(audio);
    const sse = await mock.speech!({ input, voice: 'alloy', stream_format: 'sse' }, call());
    expect(sse.contentType).toBe('text/event-stream');
    const events = (await bytes(sse.audio))
      .toString()
      .split('\n\n')
      .filter(Boolean)
      .map((frame) => JSON.parse(frame.slice('data: '.length)));
    expect(Buffer.concat(events.slice(0, -1).map((e) => Buffer.from(e.audio, 'base64')))).toEqual(audio);
    expect(events.at(-1)).toEqual({
      type: 'speech.audio.done',
      usage: { input_tokens: 1, output_tokens: 0, total_tokens: 1 },
    });
  });

  it('translates as it transcribes, into English', async () => {
    const answer = await mock.translations!(
      {
        file: Buffer.alloc(10),
        filename: 'hola.ogg',
        mimeType: 'audio/ogg',
        fields: { response_format: 'verbose_json' },
      },
      call(),
    );
    expect(answer.body).toMatchObject({
      task: 'translate',
      language: 'english',
      text: 'Mock translation of hola.ogg: 10 bytes.',
    });
  });

  it('gives up when the call is aborted', async () => {
    const controller = new AbortController();
    controller.abort(new Error('client left'));
    await expect(mock.chat(ask('x'), call(controller.signal))).rejects.toThrow('client left');
  });
});
