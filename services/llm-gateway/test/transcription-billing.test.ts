import { readFileSync } from 'node:fs';
import path from 'node:path';
import { APIError, toFile } from 'openai';
import { silentWav } from '../src/routes/wav-fixture';
import { type GatewayWorld, gauge, minuteNow, modelEntry, startGatewayWorld } from './support';

const PER_MINUTE = 0.006;
/** what llm-quota counts: the price of those seconds, in millionths of the currency */
const costOf = (seconds: number) => Math.round((seconds / 60) * PER_MINUTE * 1e6) / 1e6;
const fixture = (name: string) => readFileSync(path.join(__dirname, 'fixtures/audio', name));

/** The spoken sentence of fixtures/audio in each of OpenAI's upload formats, and the seconds it holds. */
const UPLOADS: Array<[file: string, type: string, seconds: number]> = [
  ['speech.mp3', 'audio/mpeg', 2.736],
  ['speech.mpga', 'audio/mpeg', 2.592],
  ['speech.m4a', 'audio/mp4', 2.694],
  ['speech.mp4', 'video/mp4', 2.694],
  ['speech.mpeg', 'video/mpeg', 2.592],
  ['speech.ogg', 'audio/ogg', 2.566],
  ['speech-opus.ogg', 'audio/ogg', 2.566],
  ['speech.oga', 'audio/ogg', 1],
  ['speech.flac', 'audio/flac', 1],
  ['speech.webm', 'audio/webm', 2.574],
  ['speech-live.webm', 'audio/webm', 2.581],
];

/**
 * Transcriptions as a developer sends them with the official `openai` SDK through the edge, to a
 * whisper-style provider that answers `text` without any duration: every accepted format is priced by the
 * audio minutes the upload holds, and llm-quota counts that cost.
 */
describe('transcriptions are billed by the audio in the upload, whatever its format', () => {
  let w: GatewayWorld;
  beforeAll(async () => {
    w = await startGatewayWorld({
      models: [
        modelEntry(
          'sim/whisper',
          'audio_transcription',
          { provider: 'sim', model: 'whisper-sim' },
          { per_audio_minute: PER_MINUTE },
        ),
        modelEntry(
          'mock/transcriptions',
          'audio_transcription',
          { provider: 'mock', model: 'mock-transcriptions' },
          { per_audio_minute: PER_MINUTE },
        ),
      ],
    });
  });
  afterAll(() => w?.stop());

  it('an mp3 answered as text, with no duration from the provider, costs its 2.736 s, in the answer and in the month', async () => {
    const { owner } = await w.org('audio-mp3');
    const as = { bearer: owner.token };
    const sentIn = minuteNow();
    const { data, response } = await w
      .client(as)
      .audio.transcriptions.create({
        model: 'sim/whisper',
        file: await toFile(fixture('speech.mp3'), 'speech.mp3', { type: 'audio/mpeg' }),
        response_format: 'text',
      })
      .withResponse();
    expect(data).toMatch(/^Simulated transcription of speech\.mp3/);
    expect(response.headers.get('x-platform-audio-seconds')).toBe('2.736');
    expect(Number(response.headers.get('x-platform-cost'))).toBe(costOf(2.736));
    const usage = await w.counted('audio-mp3', as, { requests: 1, tokens: 0, cost: costOf(2.736), sentIn });
    expect(gauge(usage, 'llm.monthly_cost').used).toBeCloseTo(costOf(2.736), 9);
  });

  it('every format OpenAI accepts is measured from the upload itself, whatever the file is called', async () => {
    const { owner } = await w.org('audio-formats');
    const as = { bearer: owner.token };
    const client = w.client(as);
    const sentIn = minuteNow();
    const measured: Array<[string, number]> = [];
    for (const [name, type] of UPLOADS) {
      const { response } = await client.audio.transcriptions
        // named .wav: the container is told from its bytes, not from what the client calls it
        .create({
          model: 'sim/whisper',
          file: await toFile(fixture(name), 'audio.wav', { type }),
          response_format: 'text',
        })
        .withResponse();
      measured.push([name, Number(response.headers.get('x-platform-audio-seconds'))]);
    }
    expect(measured).toEqual(UPLOADS.map(([name, , seconds]) => [name, seconds]));
    // the built-in mock provider says the same in its JSON answer's usage
    const mock = await client.audio.transcriptions.create({
      model: 'mock/transcriptions',
      file: await toFile(fixture('speech-live.webm'), 'recording.webm', { type: 'audio/webm' }),
    });
    expect((mock as unknown as { usage: Record<string, number> }).usage).toMatchObject({
      seconds: 2.581,
      cost: costOf(2.581),
    });
    const cost = [...UPLOADS.map(([, , seconds]) => costOf(seconds)), costOf(2.581)].reduce(
      (a, b) => a + b,
      0,
    );
    const usage = await w.counted('audio-formats', as, {
      requests: UPLOADS.length + 1,
      tokens: 0,
      cost,
      sentIn,
    });
    expect(gauge(usage, 'llm.monthly_cost').used).toBeCloseTo(cost, 9);
  });

  it('a WAV whose header claims a byte rate its samples cannot fill is billed the seconds a decoder plays', async () => {
    const { owner } = await w.org('audio-wav-rate');
    const wav = silentWav(30); // 16 kHz mono 16-bit
    wav.writeUInt32LE(0xffff_ffff, 28); // the byte rate: 30 s would be 0.2 ms
    const { response } = await w
      .client({ bearer: owner.token })
      .audio.transcriptions.create({
        model: 'sim/whisper',
        file: await toFile(wav, 'speech.wav', { type: 'audio/wav' }),
        response_format: 'text',
      })
      .withResponse();
    expect(response.headers.get('x-platform-audio-seconds')).toBe('30');
    expect(Number(response.headers.get('x-platform-cost'))).toBe(costOf(30));
  });

  it('an m4a whose media header timescale is edited is billed its AAC frames’ seconds', async () => {
    const { owner } = await w.org('audio-timescale');
    const m4a = Buffer.from(fixture('speech.m4a'));
    const mdhd = m4a.indexOf('mdhd');
    m4a.writeUInt32BE(0xffff_ffff, mdhd + 4 + 12); // 2.694 s would be 5 µs
    const { response } = await w
      .client({ bearer: owner.token })
      .audio.transcriptions.create({
        model: 'sim/whisper',
        file: await toFile(m4a, 'speech.m4a', { type: 'audio/mp4' }),
        response_format: 'text',
      })
      .withResponse();
    // 21 of its 22 access units of 1,024 samples at 8 kHz, what ffmpeg plays (the edit list drops the priming)
    expect(response.headers.get('x-platform-audio-seconds')).toBe('2.688');
    expect(Number(response.headers.get('x-platform-cost'))).toBe(costOf(2.688));
  });

  it('a duration the provider reports wins over the upload’s', async () => {
    const { owner } = await w.org('audio-reported');
    // the simulator reports, for what is not WAV, one second per 32,000 bytes: 5,733 bytes are 0.179 s
    const verbose = await w.client({ bearer: owner.token }).audio.transcriptions.create({
      model: 'sim/whisper',
      file: await toFile(fixture('speech.mp3'), 'speech.mp3', { type: 'audio/mpeg' }),
      response_format: 'verbose_json',
    });
    expect(verbose.duration).toBe(0.179);
    expect((verbose as unknown as { usage: Record<string, number> }).usage).toMatchObject({
      seconds: 0.179,
      cost: costOf(0.179),
    });
  });

  it('a second file or model part is 400 INVALID_BODY naming it, before any provider call, on both routes', async () => {
    const { owner } = await w.org('audio-twice');
    const calls = w.sim.requests().length;
    const wav = () => new Blob([silentWav(2)], { type: 'audio/wav' });
    for (const route of ['transcriptions', 'translations'])
      for (const twice of ['file', 'model']) {
        const form = new FormData();
        form.append('model', 'sim/whisper');
        form.append('file', wav(), 'one.wav');
        if (twice === 'file') form.append('file', wav(), 'two.wav');
        else form.append('model', 'sim/other');
        const res = await fetch(`${w.p.gatewayUrl}/v1/audio/${route}`, {
          method: 'POST',
          headers: { authorization: `Bearer ${owner.token}` },
          body: form,
        });
        expect([route, twice, res.status]).toEqual([route, twice, 400]);
        expect(await res.json()).toMatchObject({
          code: 'INVALID_BODY',
          details: { issues: [{ field: twice, message: 'sent more than once' }] },
        });
      }
    expect(w.sim.requests().length).toBe(calls);
  });

  it('a model part sent as a file is 400 INVALID_BODY saying so, never taken for an absent model (the default)', async () => {
    const { owner } = await w.org('audio-model-file');
    const calls = w.sim.requests().length;
    const form = new FormData();
    form.append('model', new Blob(['sim/whisper'], { type: 'text/plain' }), 'model.txt');
    form.append('file', new Blob([silentWav(2)], { type: 'audio/wav' }), 'one.wav');
    const res = await fetch(`${w.p.gatewayUrl}/v1/audio/transcriptions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${owner.token}` },
      body: form,
    });
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({
      code: 'INVALID_BODY',
      details: { issues: [{ field: 'model', message: 'a file, not text' }] },
    });
    expect(w.sim.requests().length).toBe(calls);
  });

  it('an upload whose duration cannot be read is refused with 400 INVALID_BODY before any provider call, and counts nothing', async () => {
    const { owner } = await w.org('audio-unreadable');
    const as = { bearer: owner.token };
    const client = w.client(as);
    const sentIn = minuteNow();
    const noise = Buffer.from(Array.from({ length: 50_000 }, (_, i) => (i * 7919 + (i >> 3) * 31) & 0xff));
    const unreadable: Array<[string, Buffer]> = [
      ['noise.mp3', noise],
      ['notes.mp3', Buffer.from('these are not sounds\n'.repeat(500))],
      ['cut.m4a', fixture('speech.m4a').subarray(0, 3000)], // its moov box comes after the sound
    ];
    const calls = w.sim.requests().length;
    for (const [name, bytes] of unreadable) {
      const err = await client.audio.transcriptions
        .create({ model: 'sim/whisper', file: await toFile(bytes, name), response_format: 'text' })
        .catch((e: unknown) => e);
      expect([name, (err as APIError).status]).toEqual([name, 400]);
    }
    // the envelope, which the SDK does not show: the code, and what to send instead
    const form = new FormData();
    form.append('model', 'sim/whisper');
    form.append('file', new Blob([noise], { type: 'audio/mpeg' }), 'noise.mp3');
    const res = await fetch(`${w.p.gatewayUrl}/v1/audio/transcriptions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${owner.token}` },
      body: form,
    });
    expect(res.status).toBe(400);
    const body = (await res.json()) as { message: string };
    expect(body).toMatchObject({ code: 'INVALID_BODY', details: { issues: [{ field: 'file' }] } });
    expect(body.message).toMatch(/duration cannot be read.*mp3.*webm/);
    expect(w.sim.requests().length).toBe(calls);

    // only the request that was served is counted
    await client.audio.transcriptions.create({
      model: 'sim/whisper',
      file: await toFile(silentWav(3), 'three.wav', { type: 'audio/wav' }),
      response_format: 'text',
    });
    const usage = await w.counted('audio-unreadable', as, {
      requests: 1,
      tokens: 0,
      cost: costOf(3),
      sentIn,
    });
    if (minuteNow() === sentIn) expect(gauge(usage, 'llm.rpm').used).toBe(1);
    expect(gauge(usage, 'llm.monthly_cost').used).toBeCloseTo(costOf(3), 9);
  });
});
