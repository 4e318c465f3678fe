import { execFileSync, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { tempDir } from '@platform/testkit';
import { toFile } from 'openai';
import { silentWav } from '../src/routes/wav-fixture';
import { SIM_IMAGE_MODEL, SIM_WHISPER_MODEL } from './media-fixtures';
import { type GatewayWorld, gauge, minuteNow, modelEntry, startGatewayWorld } from './support';

/** Debian's espeak-ng speaks a sentence to a real WAV; without it the audio tests skip loudly. */
const ESPEAK = spawnSync('espeak-ng', ['--version']).status === 0;
if (!ESPEAK) {
  const message =
    'espeak-ng is not installed (apt-get install -y espeak-ng): the audio transcription tests skip';
  if (process.env.PLATFORM_REQUIRE_ESPEAK === '1')
    throw new Error(`${message}, and PLATFORM_REQUIRE_ESPEAK=1`);
  console.warn(`\n\n*** ${message} ***\n`);
}
const itWithEspeak = ESPEAK ? it : it.skip;

const AUDIO_MAX_BYTES = 200_000;

/** Default models, smoke tests, images and audio through the edge against the provider simulator. */
describe('defaults, smoke tests, images and audio transcriptions', () => {
  let w: GatewayWorld;
  const dir = tempDir('gateway-media-');
  beforeAll(async () => {
    // the tests' gateway file with image and audio models and the platform's defaults
    w = await startGatewayWorld({
      env: { LLM_GATEWAY_AUDIO_MAX_BYTES: String(AUDIO_MAX_BYTES) },
      models: [
        SIM_IMAGE_MODEL,
        SIM_WHISPER_MODEL,
        modelEntry(
          'sim/tts',
          'audio_speech',
          { provider: 'sim', model: 'tts-sim' },
          { per_million_characters: 15 },
        ),
      ],
      file: (base) => ({
        ...base,
        defaults: {
          completions: 'sim/gpt',
          embeddings: 'sim/embed',
          image_generation: 'sim/image',
          audio_transcription: 'sim/whisper',
          audio_speech: 'sim/tts',
        },
      }),
    });
  }, 90_000);
  afterAll(async () => {
    await w?.stop();
    dir.remove();
  });

  it('GET /v1/defaults answers the platform defaults merged with the organization overrides', async () => {
    const { owner } = await w.org('defaults-org');
    const as = { bearer: owner.token };
    const first = await w.call('gateway', 'GET', '/v1/defaults', as);
    expect(first.status).toBe(200);
    expect(first.body).toEqual({
      completions: { model_id: 'sim/gpt', source: 'platform' },
      embeddings: {
        model_id: 'sim/embed',
        source: 'platform',
        dimensions: null,
        supported_dimensions: [64, 256],
      },
      image_generation: { model_id: 'sim/image', source: 'platform' },
      audio_transcription: { model_id: 'sim/whisper', source: 'platform' },
      audio_speech: { model_id: 'sim/tts', source: 'platform' },
    });
    const patched = await w.call('gateway', 'PATCH', '/v1/quotas/settings', as, {
      models: { defaults: { completions: 'sim/cheap' } },
    });
    expect(patched.status).toBe(200);
    const merged = await w.call('gateway', 'GET', '/v1/defaults', as);
    expect(merged.body.completions).toEqual({ model_id: 'sim/cheap', source: 'org' });
    expect(merged.body.embeddings.source).toBe('platform');
    // a model the organization does not allow is no default of it
    await w.call('gateway', 'PATCH', '/v1/quotas/settings', as, {
      models: { allowed: ['sim/cheap', 'sim/embed'] },
    });
    const governed = await w.call('gateway', 'GET', '/v1/defaults', as);
    expect(governed.body.image_generation).toBeNull();
    expect(governed.body.completions.model_id).toBe('sim/cheap');
  });

  it('GET /v1/defaults names the model a request without one goes to, and null where that request is refused', async () => {
    const { owner } = await w.org('defaults-agree-org');
    const as = { bearer: owner.token };
    const chatWithoutModel = () =>
      w.call('gateway', 'POST', '/v1/chat/completions', as, { messages: [{ role: 'user', content: 'hi' }] });
    // an organization default that is not in the catalogue: the request says so, and so do the defaults
    await w.call('gateway', 'PATCH', '/v1/quotas/settings', as, {
      models: { defaults: { completions: 'sim/retired' } },
    });
    expect((await chatWithoutModel()).body.code).toBe('MODEL_NOT_FOUND');
    expect((await w.call('gateway', 'GET', '/v1/defaults', as)).body.completions).toBeNull();
    // an organization default it does not allow, under soft_downgrade: the model the request goes to
    await w.call('gateway', 'PATCH', '/v1/quotas/settings', as, {
      policy: 'soft_downgrade',
      models: {
        allowed: ['sim/cheap', 'sim/embed'],
        defaults: { completions: 'sim/gpt' },
        downgrade: { 'sim/gpt': 'sim/cheap' },
      },
    });
    const chat = await chatWithoutModel();
    expect(chat.status).toBe(200);
    expect(chat.body.model).toBe('sim/cheap');
    expect((await w.call('gateway', 'GET', '/v1/defaults', as)).body.completions).toEqual({
      model_id: 'sim/cheap',
      source: 'org',
      downgraded_from: 'sim/gpt',
    });
  });

  it('POST /v1/test smoke-tests embeddings and completions (tool call reported), failures as {ok:false}, never billed', async () => {
    const { owner } = await w.org('smoke-org');
    const as = { bearer: owner.token };
    const sentIn = minuteNow();
    const embed = await w.call('gateway', 'POST', '/v1/test', as, { modelId: 'sim/embed' });
    expect(embed.status).toBe(200);
    expect(embed.body).toMatchObject({ ok: true, model: 'sim/embed', dimensions: expect.any(Number) });
    expect(embed.body.latency_ms).toBeGreaterThanOrEqual(0);
    expect(embed.body.response.object).toBe('list');

    // speech: a short sentence spoken, the audio's type and size reported
    const speech = await w.call('gateway', 'POST', '/v1/test', as, { modelId: 'sim/tts' });
    expect(speech.body).toMatchObject({
      ok: true,
      model: 'sim/tts',
      response: { content_type: 'audio/mpeg', bytes: expect.any(Number) },
    });
    expect(w.sim.requests().at(-1)).toMatchObject({ path: '/v1/audio/speech', model: 'tts-sim' });

    const tool = await w.call('gateway', 'POST', '/v1/test', as, { modelId: 'mock/chat' });
    expect(tool.body).toMatchObject({ ok: true, tool_called: true });
    const sent = w.sim.requests().length;
    w.sim.script([
      {
        match: { model: 'gpt-sim' },
        reply: { toolCalls: [{ name: 'get_weather', arguments: { city: 'Paris' } }] },
      },
    ]);
    const chat = await w.call('gateway', 'POST', '/v1/test', as, { modelId: 'sim/gpt' });
    expect(chat.body).toMatchObject({ ok: true, model: 'sim/gpt', tool_called: true });
    const asked = w.sim.requests().slice(sent).at(-1) as {
      body: { tools: Array<{ function: { name: string } }> };
    };
    expect(asked.body.tools[0]!.function.name).toBe('get_weather');

    w.sim.script([{ match: { model: 'cheap-sim' }, error: { status: 500, type: 'server_error' } }]);
    const failed = await w.call('gateway', 'POST', '/v1/test', as, { modelId: 'sim/cheap' });
    expect(failed.status).toBe(200);
    expect(failed.body).toMatchObject({
      ok: false,
      response: { code: 'PROVIDER_ERROR', status: 502, provider: 'sim', provider_error_type: 'server_error' },
    });
    w.sim.script([]);
    const unknown = await w.call('gateway', 'POST', '/v1/test', as, { modelId: 'no/such' });
    expect([unknown.status, unknown.body.code]).toEqual([404, 'MODEL_NOT_FOUND']);

    // not billed: one real completion afterwards, and the org's month holds exactly its tokens
    const real = await w.call('gateway', 'POST', '/v1/chat/completions', as, {
      model: 'sim/cheap',
      messages: [{ role: 'user', content: 'count me' }],
    });
    const tokens: number = real.body.usage.total_tokens;
    const usage = await w.counted('smoke-org', as, { requests: 1, tokens, sentIn });
    expect(gauge(usage, 'llm.monthly_tokens').used).toBe(tokens);
    // and no request but that one (a failed test call would count 0 tokens): while the minute of all these calls lasts
    if (minuteNow() === sentIn) expect(gauge(usage, 'llm.rpm').used).toBe(1);
  });

  it('images.generate() of the openai SDK, b64_json and url, priced per image and counted', async () => {
    const { owner } = await w.org('images-org');
    const client = w.client({ bearer: owner.token });
    const sentIn = minuteNow();
    const b64 = await client.images.generate({
      model: 'sim/image',
      prompt: 'a lighthouse',
      n: 2,
      response_format: 'b64_json',
    });
    expect(b64.data).toHaveLength(2);
    expect(Buffer.from(b64.data![0]!.b64_json!, 'base64').subarray(1, 4).toString('ascii')).toBe('PNG');
    const url = await client.images.generate({ prompt: 'a harbour', response_format: 'url' }); // the default model
    expect(url.data![0]!.url).toMatch(/^https?:\/\//);
    expect((b64 as unknown as { usage: { cost: number; images: number } }).usage).toMatchObject({
      images: 2,
      cost: 0.08,
    });
    const usage = await w.counted('images-org', { bearer: owner.token }, { requests: 2, cost: 0.12, sentIn });
    expect(gauge(usage, 'llm.monthly_cost').used).toBeCloseTo(0.12, 6);
    const wrongType = await w.call(
      'gateway',
      'POST',
      '/v1/images/generations',
      { bearer: owner.token },
      {
        model: 'sim/gpt',
        prompt: 'x',
      },
    );
    expect(wrongType.status).toBe(400);
  });

  itWithEspeak(
    'audio.transcriptions.create() of the openai SDK with a real WAV: json, text and verbose_json; 413 over the size',
    async () => {
      const { owner } = await w.org('audio-org');
      const client = w.client({ bearer: owner.token });
      const wavPath = path.join(dir.dir, 'hello.wav');
      execFileSync('espeak-ng', ['-w', wavPath, 'Hello from the platform test']);
      const wav = readFileSync(wavPath);
      w.sim.script([{ match: { endpoint: 'transcriptions' }, transcript: 'Hello from the platform test' }]);
      const sentIn = minuteNow();
      const json = await client.audio.transcriptions.create({
        model: 'sim/whisper',
        file: await toFile(wav, 'hello.wav', { type: 'audio/wav' }),
      });
      expect(json.text).toBe('Hello from the platform test');
      const text = await client.audio.transcriptions.create({
        model: 'sim/whisper',
        file: await toFile(wav, 'hello.wav', { type: 'audio/wav' }),
        response_format: 'text',
      });
      expect(String(text).trim()).toBe('Hello from the platform test');
      const verbose = await client.audio.transcriptions.create({
        file: await toFile(wav, 'hello.wav', { type: 'audio/wav' }), // the default model
        model: 'default',
        response_format: 'verbose_json',
      });
      expect(verbose.duration).toBeGreaterThan(1);
      // what reached the provider: the real file, under the provider's model name
      const last = w.sim.requests().at(-1) as unknown as { model?: string; file?: { size: number } };
      expect(JSON.stringify(last)).toContain('whisper-sim');
      // priced per audio minute, by the second (the simulator rounds json durations up to whole seconds)
      const seconds = wav.readUInt32LE(40) / wav.readUInt32LE(28); // data bytes / byte rate
      const expected = ((Math.ceil(seconds) + seconds + seconds) / 60) * 0.006;
      const usage = await w.counted(
        'audio-org',
        { bearer: owner.token },
        { requests: 3, cost: expected - 1e-5, sentIn },
      );
      expect(gauge(usage, 'llm.monthly_cost').used).toBeCloseTo(expected, 5);

      const big = Buffer.concat([wav, Buffer.alloc(AUDIO_MAX_BYTES)]);
      const refused = await client.audio.transcriptions
        .create({ model: 'sim/whisper', file: await toFile(big, 'big.wav', { type: 'audio/wav' }) })
        .catch((e: { status: number }) => e);
      expect((refused as { status: number }).status).toBe(413);
      const form = new FormData();
      form.append('model', 'sim/whisper');
      form.append('file', new Blob([big], { type: 'audio/wav' }), 'big.wav');
      const raw = await fetch(`${w.p.gatewayUrl}/v1/audio/transcriptions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${owner.token}` },
        body: form,
      });
      expect(raw.status).toBe(413);
      expect(await raw.json()).toMatchObject({
        code: 'PAYLOAD_TOO_LARGE',
        details: { max_bytes: AUDIO_MAX_BYTES },
      });
      w.sim.script([]);
    },
  );

  it('a chunked upload over the size is 413, and the uploads after it on the same connections are answered', async () => {
    const { owner } = await w.org('audio-chunked-org');
    const boundary = 'platform-test-boundary';
    /** a multipart upload of `file` streamed in chunks, with no Content-Length, as a client streaming a recording */
    const chunked = async (file: Buffer) => {
      const body = Buffer.concat([
        Buffer.from(
          `--${boundary}\r\ncontent-disposition: form-data; name="model"\r\n\r\nsim/whisper\r\n` +
            `--${boundary}\r\ncontent-disposition: form-data; name="file"; filename="a.wav"\r\n` +
            'content-type: audio/wav\r\n\r\n',
        ),
        file,
        Buffer.from(`\r\n--${boundary}--\r\n`),
      ]);
      const stream = new ReadableStream<Uint8Array>({
        start(controller) {
          for (let i = 0; i < body.length; i += 16_384) controller.enqueue(body.subarray(i, i + 16_384));
          controller.close();
        },
      });
      const res = await fetch(`${w.p.gatewayUrl}/v1/audio/transcriptions`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${owner.token}`,
          'content-type': `multipart/form-data; boundary=${boundary}`,
        },
        body: stream,
        duplex: 'half',
      } as RequestInit);
      return {
        status: res.status,
        body: (await res.json()) as { code?: string; usage?: { seconds?: number } },
      };
    };
    const refused = await chunked(silentWav(10));
    expect([refused.status, refused.body.code]).toEqual([413, 'PAYLOAD_TOO_LARGE']);
    // before, the edge's connection the 413 came back on was kept with the refused body unfinished on it: the
    // next request sent on it waited a minute, then failed 502
    for (const seconds of [1, 2]) {
      const answered = await chunked(silentWav(seconds));
      expect([answered.status, answered.body.usage?.seconds]).toEqual([200, seconds]);
    }
    // the refused upload is counted nowhere: two requests, three seconds at $0.006 a minute
    const usage = await w.counted(
      'audio-chunked-org',
      { bearer: owner.token },
      { requests: 2, cost: 0.0003 },
    );
    expect(gauge(usage, 'llm.monthly_cost').used).toBeCloseTo(0.0003, 9);
  }, 120_000);
});
