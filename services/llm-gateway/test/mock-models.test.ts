import Anthropic from '@anthropic-ai/sdk';
import OpenAI, { toFile } from 'openai';
import { startTestPlatform, type TestPlatform } from '../../../test/harness';
import { audioDuration } from '../src/audio/duration';
import { silentWav } from '../src/routes/wav-fixture';

/** `pnpm start` as a newcomer finds it: no LLM_GATEWAY_CONFIG, the built-in mock models answer. */
describe('the built-in mock models when LLM_GATEWAY_CONFIG is unset', () => {
  let p: TestPlatform;
  let client: OpenAI;
  let token: string;
  beforeAll(async () => {
    p = await startTestPlatform();
    const login = await fetch(`${p.baseUrl}/v2/login/anonymous`, { method: 'POST' });
    ({ token } = (await login.json()) as { token: string });
    await fetch(`${p.baseUrl}/v2/orgs`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ slug: 'newcomer', name: 'Newcomer' }),
    });
    client = new OpenAI({ baseURL: `${p.gatewayUrl}/v1`, apiKey: token, maxRetries: 0 });
  });
  afterAll(() => p?.stop());

  it('lists a mock model for every endpoint, each the default of its kind', async () => {
    const ids = (await client.models.list()).data.map((m) => m.id);
    expect(ids).toEqual([
      'mock/chat',
      'mock/embeddings',
      'mock/images',
      'mock/speech',
      'mock/transcriptions',
    ]);
    const defaults = await fetch(`${p.gatewayUrl}/v1/defaults`, {
      headers: { authorization: `Bearer ${client.apiKey}` },
    });
    expect(await defaults.json()).toMatchObject({
      completions: { model_id: 'mock/chat' },
      embeddings: { model_id: 'mock/embeddings' },
      image_generation: { model_id: 'mock/images' },
      audio_transcription: { model_id: 'mock/transcriptions' },
      audio_speech: { model_id: 'mock/speech' },
    });
  });

  it('mock/images draws PNGs (the default when no model is named) and mock/transcriptions transcribes', async () => {
    const image = await client.images.generate({ prompt: 'a red fox' } as { prompt: string; model?: string });
    expect(Buffer.from(image.data![0]!.b64_json!, 'base64').subarray(1, 4).toString()).toBe('PNG');
    const wav = silentWav(1);
    const text = await client.audio.transcriptions.create({
      model: 'mock/transcriptions',
      file: await toFile(wav, 'one-second.wav'),
    });
    expect(text.text).toMatch(/^Mock transcription of one-second\.wav: 32044 bytes, 1(\.0+)? seconds/);
  });

  it('mock/speech answers a WAV tone whose length follows the input, and mock/transcriptions translates', async () => {
    const speak = async (input: string, speed?: number) => {
      const res = await client.audio.speech.create({ model: 'mock/speech', input, voice: 'alloy', speed });
      expect(res.headers.get('content-type')).toBe('audio/wav');
      return Buffer.from(await res.arrayBuffer());
    };
    const short = await speak('Hello newcomer'); // 14 characters at 15 a second
    expect(short.subarray(0, 4).toString()).toBe('RIFF');
    expect(audioDuration(short)?.seconds).toBeCloseTo(14 / 15, 3);
    expect(await speak('Hello newcomer')).toEqual(short);
    expect(audioDuration(await speak('Hello newcomer, and welcome.'))?.seconds).toBeCloseTo(28 / 15, 3);
    expect(audioDuration(await speak('Hello newcomer', 2))?.seconds).toBeCloseTo(7 / 15, 3);
    const translated = await client.audio.translations.create({
      model: 'mock/transcriptions',
      file: await toFile(silentWav(1), 'one-second.wav'),
    });
    expect(translated.text).toMatch(/^Mock translation of one-second\.wav: 32044 bytes, 1(\.0+)? seconds/);
  });

  it('mock/chat answers deterministically, plain and streamed', async () => {
    const ask = () =>
      client.chat.completions.create({
        model: 'mock/chat',
        messages: [{ role: 'user', content: 'Hello mock' }],
      });
    const [a, b] = [await ask(), await ask()];
    expect(a.choices[0]?.message.content).toBe(b.choices[0]?.message.content);
    expect(a.usage?.total_tokens).toBeGreaterThan(0);
    let streamed = '';
    const stream = await client.chat.completions.create({
      model: 'mock/chat',
      messages: [{ role: 'user', content: 'Hello mock' }],
      stream: true,
    });
    for await (const chunk of stream) streamed += chunk.choices[0]?.delta?.content ?? '';
    expect(streamed).toBe(a.choices[0]?.message.content);
  });

  it('mock/chat answers n choices, plain and streamed, their completion tokens counted for each', async () => {
    const ask = { model: 'mock/chat', messages: [{ role: 'user' as const, content: 'Hello mock' }] };
    const one = await client.chat.completions.create(ask);
    const two = await client.chat.completions.create({ ...ask, n: 2 });
    expect(two.choices.map((c) => [c.index, c.message.content, c.finish_reason])).toEqual([
      [0, one.choices[0]!.message.content, 'stop'],
      [1, one.choices[0]!.message.content, 'stop'],
    ]);
    expect(two.usage).toMatchObject({
      prompt_tokens: one.usage!.prompt_tokens,
      completion_tokens: 2 * one.usage!.completion_tokens,
    });
    const stream = await client.chat.completions.create({
      ...ask,
      n: 2,
      stream: true,
      stream_options: { include_usage: true },
    });
    const texts = ['', ''];
    const finishes: Array<[number, string]> = [];
    let completionTokens = 0;
    for await (const chunk of stream) {
      for (const c of chunk.choices) {
        texts[c.index] += c.delta?.content ?? '';
        if (c.finish_reason) finishes.push([c.index, c.finish_reason]);
      }
      if (chunk.usage) completionTokens = chunk.usage.completion_tokens;
    }
    expect(texts).toEqual([one.choices[0]!.message.content, one.choices[0]!.message.content]);
    expect(finishes).toEqual([
      [0, 'stop'],
      [1, 'stop'],
    ]);
    expect(completionTokens).toBe(2 * one.usage!.completion_tokens);
  });

  it('mock/chat reasons when asked, as a reasoning model does, through chat, Responses and Messages', async () => {
    const ask = {
      model: 'mock/chat',
      messages: [{ role: 'user' as const, content: 'Why is the sky blue?' }],
    };
    const plain = await client.chat.completions.create({ ...ask, reasoning_effort: 'low' });
    const message = plain.choices[0]!.message as { content: string; reasoning_content?: string };
    expect(message.reasoning_content).toBe('Mock reasoning about: Why is the sky blue?');
    expect(message.content).toBe('Mock answer to: Why is the sky blue?');
    // billed as output, and said apart as OpenAI says it
    const reasoningTokens = plain.usage!.completion_tokens_details!.reasoning_tokens!;
    expect(reasoningTokens).toBeGreaterThan(0);
    const without = await client.chat.completions.create(ask);
    expect(without.choices[0]!.message).not.toHaveProperty('reasoning_content');
    expect(plain.usage!.completion_tokens).toBe(without.usage!.completion_tokens + reasoningTokens);

    let reasoning = '';
    const stream = await client.chat.completions.create({ ...ask, reasoning_effort: 'high', stream: true });
    for await (const chunk of stream)
      reasoning +=
        (chunk.choices[0]?.delta as { reasoning_content?: string } | undefined)?.reasoning_content ?? '';
    expect(reasoning).toBe(message.reasoning_content);

    const response = await client.responses.create({
      model: 'mock/chat',
      input: 'Why is the sky blue?',
      reasoning: { effort: 'medium' },
    });
    expect(response.output.map((item) => item.type)).toEqual(['reasoning', 'message']);

    // Claude Code's thinking on the mock: a thinking block, unsigned (the mock signs nothing)
    const claudeCode = new Anthropic({
      baseURL: p.gatewayUrl,
      apiKey: null,
      authToken: token,
      maxRetries: 0,
    });
    const thought = await claudeCode.messages.create({
      model: 'mock/chat',
      max_tokens: 3000,
      thinking: { type: 'enabled', budget_tokens: 2000 },
      messages: [{ role: 'user', content: 'Why is the sky blue?' }],
    });
    expect(thought.content).toEqual([
      { type: 'thinking', thinking: 'Mock reasoning about: Why is the sky blue?', signature: '' },
      { type: 'text', text: 'Mock answer to: Why is the sky blue?' },
    ]);
  });

  it('mock/embeddings answers vectors of the requested dimensions', async () => {
    const res = await client.embeddings.create({
      model: 'mock/embeddings',
      input: ['a', 'b'],
      dimensions: 256,
    });
    expect(res.data.map((d) => d.embedding.length)).toEqual([256, 256]);
  });

  it('mock/chat reranks by the words documents share with the query, best first', async () => {
    const res = await fetch(`${p.gatewayUrl}/v1/rerank`, {
      method: 'POST',
      headers: { authorization: `Bearer ${client.apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        model: 'mock/chat',
        query: 'paris weather',
        documents: ['rome', 'weather in paris today', 'paris'],
      }),
    });
    expect(res.status).toBe(200);
    const body = (await res.json()) as { results: Array<{ index: number; relevance_score: number }> };
    expect(body.results.map((r) => r.index)).toEqual([1, 2, 0]);
    expect(body.results[0]!.relevance_score).toBeGreaterThan(body.results[1]!.relevance_score);
  });
});
