import { readFileSync } from 'node:fs';
import path from 'node:path';
import { waitFor } from '@platform/testkit';
import { APIError, toFile } from 'openai';
import { countText } from '../src/inference/prompt-tokens';
import {
  type CompletionRecord,
  type GatewayWorld,
  gauge,
  minuteNow,
  modelEntry,
  recordCompletions,
  startGatewayWorld,
} from './support';

/** tts-1's price: USD 15 per million characters */
const PER_MILLION_CHARACTERS = 15;
const PER_MINUTE = 0.006;
const micros = (usd: number) => Math.round(usd * 1e6) / 1e6;
const speechCost = (input: string) => micros(([...input].length / 1e6) * PER_MILLION_CHARACTERS);
/** the simulator's speech: 48,000 bytes a second, a second per 15 characters */
const simulatedBytes = (input: string) => Math.ceil(([...input].length / 15) * 48_000);

const FORMATS = [
  ['mp3', 'audio/mpeg', [0xff, 0xfb]],
  ['opus', 'audio/opus', [...Buffer.from('OggS')]],
  ['aac', 'audio/aac', [0xff, 0xf1]],
  ['flac', 'audio/flac', [...Buffer.from('fLaC')]],
  ['wav', 'audio/wav', [...Buffer.from('RIFF')]],
  ['pcm', 'audio/pcm', [0, 0]],
] as const;

// Each test waits for llm-quota to count its requests (up to 20 s) and for usage events (up to 15 s), on a whole
// platform started once: under a loaded CI machine that is more than jest's default 30 s.
jest.setTimeout(60_000);

/**
 * `audio.speech` and `audio.translations` as a developer calls them with the official `openai` SDK through the
 * edge, on the provider simulator: the audio comes back as the provider sends it, every refusal comes before
 * any provider call, and what `GET /v1/quotas/usage` shows is exactly what the answers said.
 */
describe('the openai SDK on audio.speech and audio.translations', () => {
  let w: GatewayWorld;
  let completions: CompletionRecord;
  beforeAll(async () => {
    const tts = { provider: 'sim', model: 'tts-sim' };
    w = await startGatewayWorld({
      models: [
        // the gateway's default timeout: no answer of a busy machine races it, and a client that leaves does so
        // long before it
        modelEntry('sim/tts', 'audio_speech', tts, { per_million_characters: PER_MILLION_CHARACTERS }),
        // the same model giving up on a silent provider after 2 s: the tests of a silent provider alone use it. Not
        // shorter, so that a loaded machine's pause before the first audio of the answer it cuts is no timeout
        modelEntry(
          'sim/tts-impatient',
          'audio_speech',
          tts,
          { per_million_characters: PER_MILLION_CHARACTERS },
          { timeout_ms: 2_000 },
        ),
        modelEntry(
          'sim/whisper',
          'audio_transcription',
          { provider: 'sim', model: 'whisper-sim' },
          { per_audio_minute: PER_MINUTE },
        ),
      ],
    });
    completions = recordCompletions(w);
  }, 60_000);
  afterEach(() => w.sim.script([]));
  afterAll(async () => {
    completions?.stop();
    await w?.stop();
  });

  const speechCalls = () => w.sim.requests().filter((r) => r.endpoint === 'speech').length;
  const eventsOf = (org: string) => completions.events.filter((e) => e.orgSlug === org);
  /** the usage events of these requests, in their order, once each has been published */
  const eventsFor = (ids: string[]) =>
    waitFor(
      () => {
        const found = ids.map((id) => completions.events.filter((e) => e.requestId === id));
        return found.every((list) => list.length > 0) ? found.map((list) => list[0]!) : null;
      },
      { what: `the usage events of ${ids.join(', ')}`, timeoutMs: 15_000 },
    );

  it('speech answers the provider’s audio in each format with its content type; usage shows exactly its tokens and cost', async () => {
    const { owner } = await w.org('speech-formats');
    const as = { bearer: owner.token };
    const client = w.client(as);
    const sentIn = minuteNow();
    let tokens = 0;
    let cost = 0;
    for (const [format, type, magic] of FORMATS) {
      const input = `Read this aloud in ${format}, please.`;
      const res = await client.audio.speech.create({
        model: 'sim/tts',
        input,
        voice: 'alloy',
        response_format: format,
      });
      const audio = Buffer.from(await res.arrayBuffer());
      expect([format, res.headers.get('content-type'), audio.length]).toEqual([
        format,
        type,
        simulatedBytes(input),
      ]);
      expect([...audio.subarray(0, magic.length)]).toEqual([...magic]);
      expect(res.headers.get('x-content-type-options')).toBe('nosniff');
      expect(res.headers.get('x-platform-characters')).toBe(String(input.length));
      expect(Number(res.headers.get('x-platform-cost'))).toBe(speechCost(input));
      tokens += countText(input);
      cost += speechCost(input);
    }
    // the provider got the request as sent, under its own model name
    expect(w.sim.requests().at(-1)).toMatchObject({
      path: '/v1/audio/speech',
      model: 'tts-sim',
      body: { voice: 'alloy', response_format: 'pcm', input: 'Read this aloud in pcm, please.' },
    });
    const usage = await w.counted('speech-formats', as, {
      requests: FORMATS.length,
      tokens,
      cost,
      sentIn,
    });
    expect(gauge(usage, 'llm.monthly_tokens').used).toBe(tokens);
    expect(gauge(usage, 'llm.monthly_cost').used).toBeCloseTo(cost, 9);
    const counted = eventsOf('speech-formats');
    expect(counted).toHaveLength(FORMATS.length);
    expect(counted[0]).toMatchObject({
      model: 'sim/tts',
      endpoint: 'audio',
      outcome: 'success',
      usageSource: 'tokenizer',
      usage: { completion_tokens: 0 },
    });
  });

  it('an input over 4096 characters is 400 INVALID_BODY before any quota or provider call; 4096 of them pass', async () => {
    const { owner } = await w.org('speech-long');
    const as = { bearer: owner.token };
    const client = w.client(as);
    const before = speechCalls();
    const long = await w.call('gateway', 'POST', '/v1/audio/speech', as, {
      model: 'sim/tts',
      input: 'a'.repeat(4097),
      voice: 'alloy',
    });
    expect(long.status).toBe(400);
    expect(long.body).toMatchObject({ code: 'INVALID_BODY', details: { issues: [{ field: 'input' }] } });
    expect(speechCalls()).toBe(before);
    // characters, not UTF-16 units: 4096 emoji are 8192 units and within the limit
    const emoji = '🙂'.repeat(4096);
    const res = await client.audio.speech.create({ model: 'sim/tts', input: emoji, voice: 'alloy' });
    expect(res.headers.get('x-platform-characters')).toBe('4096');
    expect((await res.arrayBuffer()).byteLength).toBe(simulatedBytes(emoji));
    expect(speechCalls()).toBe(before + 1);
    const usage = await w.counted('speech-long', as, { requests: 1, tokens: countText(emoji) });
    expect(gauge(usage, 'llm.monthly_tokens').used).toBe(countText(emoji));
  });

  // a speech model on Anthropic is refused by the catalogue itself (decision 0105, test/provider-endpoints.test.ts)
  it('governance and quotas refuse before any provider call: MODEL_NOT_ALLOWED, monthly tokens', async () => {
    const { owner } = await w.org('speech-governed');
    const as = { bearer: owner.token };
    const patched = await w.call('gateway', 'PATCH', '/v1/quotas/settings', as, {
      models: { allowed: ['sim/gpt'] },
    });
    expect(patched.status).toBe(200);
    const before = w.sim.requests().length;
    const refused = await w
      .client(as)
      .audio.speech.create({ model: 'sim/tts', input: 'hello', voice: 'alloy' })
      .catch((e: unknown) => e);
    expect([(refused as APIError).status, (refused as APIError).error]).toEqual([403, 'MODEL_NOT_ALLOWED']);

    // the input counts as prompt tokens: 2,000 characters of words are more than the 400-token month
    const { owner: budgeted } = await w.org('speech-budget', 'budget');
    const over = await w
      .client({ bearer: budgeted.token })
      .audio.speech.create({ model: 'sim/tts', input: 'one two three four '.repeat(200), voice: 'alloy' })
      .catch((e: unknown) => e);
    expect([(over as APIError).status, (over as APIError).error]).toEqual([429, 'MONTHLY_QUOTA_EXCEEDED']);
    expect(w.sim.requests().length).toBe(before);
  });

  it('provider errors as the other routes: PROVIDER_ERROR, a 5xx retried, PROVIDER_NO_RESPONSE; none charged', async () => {
    const { owner } = await w.org('speech-errors');
    const as = { bearer: owner.token };
    const speak = (input: string, model = 'sim/tts') =>
      w.call(
        'gateway',
        'POST',
        '/v1/audio/speech',
        as,
        { model, input, voice: 'alloy' },
        { 'x-request-id': `speech-${input}` },
      );
    w.sim.script([{ match: { endpoint: 'speech' }, error: { status: 400, type: 'invalid_request_error' } }]);
    const refused = await speak('refused');
    expect(refused.status).toBe(502);
    expect(refused.body).toMatchObject({
      code: 'PROVIDER_ERROR',
      provider: 'sim',
      model: 'sim/tts',
      provider_error_type: 'invalid_request_error',
    });
    expect(refused.headers.get('x-should-retry')).toBe('false');

    w.sim.script([{ match: { endpoint: 'speech' }, times: 1, error: { status: 503 } }]);
    const before = speechCalls();
    const retried = await speak('retried');
    expect(retried.status).toBe(200);
    expect(speechCalls()).toBe(before + 2);

    w.sim.script([{ match: { endpoint: 'speech' }, hang: true }]);
    const silent = await speak('silent', 'sim/tts-impatient');
    expect(silent.status).toBe(504);
    expect(silent.body.code).toBe('PROVIDER_NO_RESPONSE');

    const settled = await eventsFor(['speech-refused', 'speech-retried', 'speech-silent']);
    expect(eventsOf('speech-errors')).toHaveLength(3);
    expect(settled.map((e) => [e.outcome, e.usage.total_tokens, e.cost])).toEqual([
      ['provider_error', 0, 0],
      ['success', countText('retried'), speechCost('retried')],
      ['provider_error', 0, 0],
    ]);
  });

  it('forwards the audio as it arrives; a client that leaves cancels the provider call, and a silent provider cuts the answer', async () => {
    const { owner } = await w.org('speech-stream');
    const as = { bearer: owner.token };
    const client = w.client(as);
    const input = 'A long sentence to be spoken slowly, chunk after chunk, by the provider.';
    // two 4 KiB chunks, then the provider keeps the connection open without a word more
    w.sim.script([{ match: { endpoint: 'speech' }, streamFailure: { afterChunks: 2, mode: 'hang' } }]);
    const controller = new AbortController();
    const res = await client.audio.speech.create(
      { model: 'sim/tts', input, voice: 'alloy', response_format: 'wav' },
      { signal: controller.signal, headers: { 'x-request-id': 'speech-left' } },
    );
    const reader = res.body!.getReader();
    let received = 0;
    while (received < 8192) received += (await reader.read()).value!.length;
    expect(received).toBe(8192); // what the provider sent, before the end of its answer
    const call = w.sim.requests().length - 1;
    controller.abort();
    await waitFor(() => w.sim.requests()[call]!.clientClosed, { what: 'the gateway to cancel the call' });

    // a provider silent for longer than the model's timeout after its first bytes: the answer is cut
    const cut = await client.audio.speech.create(
      { model: 'sim/tts-impatient', input, voice: 'alloy' },
      { headers: { 'x-request-id': 'speech-cut' } },
    );
    const failed = await cut.arrayBuffer().then(
      () => 'read whole',
      (e: Error) => e.message,
    );
    expect(failed).toBe('terminated');

    // a client that leaves before any audio: nothing charged
    w.sim.script([{ match: { endpoint: 'speech' }, hang: true }]);
    const early = new AbortController();
    const pending = client.audio.speech
      .create(
        { model: 'sim/tts', input: 'never spoken', voice: 'alloy' },
        { signal: early.signal, headers: { 'x-request-id': 'speech-early' } },
      )
      .catch((e: unknown) => e);
    await waitFor(() => w.sim.requests().length > call + 2, { what: 'the third call to reach the provider' });
    early.abort();
    await pending;
    await waitFor(() => w.sim.requests()[call + 2]!.clientClosed, { what: 'the gateway to cancel the call' });

    // once the provider has answered, the input is charged whatever happens to the rest
    const settled = await eventsFor(['speech-left', 'speech-cut', 'speech-early']);
    expect(eventsOf('speech-stream')).toHaveLength(3);
    expect(settled.map((e) => [e.outcome, e.usage.prompt_tokens, e.cost])).toEqual([
      ['client_cancelled', countText(input), speechCost(input)],
      ['provider_error', countText(input), speechCost(input)],
      ['client_cancelled', 0, 0],
    ]);
    const usage = await w.counted('speech-stream', as, {
      requests: 3,
      tokens: 2 * countText(input),
      cost: 2 * speechCost(input),
    });
    expect(gauge(usage, 'llm.monthly_tokens').used).toBe(2 * countText(input));
  });

  it('stream_format sse answers the provider’s events', async () => {
    const { owner } = await w.org('speech-sse');
    const res = await w
      .client({ bearer: owner.token })
      .audio.speech.create({ model: 'sim/tts', input: 'Hello there.', voice: 'alloy', stream_format: 'sse' });
    expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const events = (await res.text())
      .split('\n\n')
      .filter(Boolean)
      .map((frame) => JSON.parse(frame.replace(/^data: /, '')) as { type: string });
    expect(events.at(0)!.type).toBe('speech.audio.delta');
    expect(events.at(-1)).toMatchObject({ type: 'speech.audio.done', usage: { input_tokens: 3 } });
  });

  it('translations go to the provider’s /audio/translations and are billed by the upload’s duration, like transcriptions', async () => {
    const { owner } = await w.org('translations');
    const as = { bearer: owner.token };
    const client = w.client(as);
    const sentIn = minuteNow();
    const mp3 = readFileSync(path.join(__dirname, 'fixtures/audio/speech.mp3'));
    const { data, response } = await client.audio.translations
      .create({
        model: 'sim/whisper',
        file: await toFile(mp3, 'speech.mp3', { type: 'audio/mpeg' }),
        response_format: 'text',
      })
      .withResponse();
    expect(data).toMatch(/^Simulated translation of speech\.mp3/);
    expect(response.headers.get('x-platform-audio-seconds')).toBe('2.736');
    const cost = micros((2.736 / 60) * PER_MINUTE);
    expect(Number(response.headers.get('x-platform-cost'))).toBe(cost);
    expect(w.sim.requests().at(-1)).toMatchObject({
      path: '/v1/audio/translations',
      model: 'whisper-sim',
      body: { response_format: 'text', file: { filename: 'speech.mp3' } },
    });
    // verbose_json: the provider's duration wins, as for transcriptions
    const verbose = await client.audio.translations.create({
      model: 'sim/whisper',
      file: await toFile(mp3, 'speech.mp3', { type: 'audio/mpeg' }),
      response_format: 'verbose_json',
    });
    expect(verbose).toMatchObject({ task: 'translate', language: 'english', duration: 0.179 });
    expect((verbose as unknown as { usage: Record<string, number> }).usage).toMatchObject({
      seconds: 0.179,
      cost: micros((0.179 / 60) * PER_MINUTE),
    });
    // an upload whose duration cannot be read: 400 before any call
    const calls = w.sim.requests().length;
    const noise = await client.audio.translations
      .create({
        model: 'sim/whisper',
        file: await toFile(Buffer.from('not audio at all'.repeat(100)), 'x.mp3'),
      })
      .catch((e: unknown) => e);
    expect((noise as APIError).status).toBe(400);
    expect(w.sim.requests().length).toBe(calls);
    const total = cost + micros((0.179 / 60) * PER_MINUTE);
    const usage = await w.counted('translations', as, { requests: 2, tokens: 0, cost: total, sentIn });
    expect(gauge(usage, 'llm.monthly_cost').used).toBeCloseTo(total, 9);
    expect(eventsOf('translations')).toHaveLength(2);
  });
});
