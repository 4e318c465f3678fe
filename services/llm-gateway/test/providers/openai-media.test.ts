import { type ProviderSimulator, startProviderSimulator, waitFor } from '@platform/testkit';
import { createProviderAdapter, type ProviderCall } from '../../src/providers';

let sim: ProviderSimulator;
beforeAll(async () => {
  sim = await startProviderSimulator({ apiKey: 'sk-media' });
});
afterAll(() => sim.close());
beforeEach(() => sim.reset());

const clock = { now: () => new Date('2026-03-01T00:00:00Z') };
const call = (model: string): ProviderCall => ({
  model,
  headers: { 'x-org': 'acme' },
  timeoutMs: 10_000, // an answer expected: never a timeout on a loaded machine
  signal: new AbortController().signal,
});
const openai = () =>
  createProviderAdapter(
    { name: 'oai', type: 'openai', baseUrl: sim.openaiBaseUrl, apiKey: 'sk-media' },
    { clock },
  );

/** A PCM WAV of `seconds` of silence: 16 kHz, mono, 16-bit. */
function wav(seconds: number): Buffer {
  const dataBytes = Math.round(seconds * 32_000);
  const file = Buffer.alloc(44 + dataBytes);
  file.write('RIFF', 0);
  file.writeUInt32LE(36 + dataBytes, 4);
  file.write('WAVEfmt ', 8);
  file.writeUInt32LE(16, 16);
  file.writeUInt16LE(1, 20);
  file.writeUInt16LE(1, 22);
  file.writeUInt32LE(16_000, 24);
  file.writeUInt32LE(32_000, 28);
  file.writeUInt16LE(2, 32);
  file.writeUInt16LE(16, 34);
  file.write('data', 36);
  file.writeUInt32LE(dataBytes, 40);
  return file;
}

describe('OpenAI-protocol adapter: images and audio', () => {
  it('generates images as b64_json PNGs or URLs, with the provider model and headers', async () => {
    const { body } = await openai().images!(
      { model: 'catalogue/img', prompt: 'a lighthouse', n: 2, response_format: 'b64_json' },
      call('dall-e-sim'),
    );
    expect(body.data).toHaveLength(2);
    expect(Buffer.from(body.data[0]!.b64_json!, 'base64').subarray(1, 4).toString()).toBe('PNG');
    expect(sim.requests()[0]).toMatchObject({ path: '/v1/images/generations', model: 'dall-e-sim' });
    expect(sim.requests()[0]!.headers['x-org']).toBe('acme');
    const byUrl = await openai().images!(
      { prompt: 'a lighthouse', response_format: 'url' },
      call('dall-e-sim'),
    );
    expect((await fetch(byUrl.body.data[0]!.url!)).headers.get('content-type')).toBe('image/png');
  });

  it('uploads audio as multipart and reads json, text and verbose_json answers with the duration', async () => {
    sim.script([{ transcript: 'the quick brown fox' }]);
    const upload = (format: string) => ({
      file: wav(2.5),
      filename: 'fox.wav',
      mimeType: 'audio/wav',
      fields: { model: 'client-named', response_format: format, language: 'en' },
    });
    const json = await openai().transcriptions!(upload('json'), call('whisper-sim'));
    expect(json.body).toEqual({ text: 'the quick brown fox', usage: { type: 'duration', seconds: 3 } });
    expect(json.contentType).toMatch(/application\/json/);
    expect(json.durationSeconds).toBe(3);
    const [seen] = sim.requests();
    expect(seen!.body).toMatchObject({
      model: 'whisper-sim',
      response_format: 'json',
      language: 'en',
      file: { filename: 'fox.wav' },
    });
    expect(seen!.headers.authorization).toBe('Bearer sk-media');

    const verbose = await openai().transcriptions!(upload('verbose_json'), call('whisper-sim'));
    expect(verbose.durationSeconds).toBe(2.5);
    expect(verbose.body).toMatchObject({ text: 'the quick brown fox', duration: 2.5 });

    const text = await openai().transcriptions!(upload('text'), call('whisper-sim'));
    expect(text.body).toBe('the quick brown fox\n');
    expect(text.contentType).toMatch(/text\/plain/);
    // no duration in a text answer: the route bills what it measured in the upload (decision 0096)
    expect(text.durationSeconds).toBeNull();
  });

  it('sends Azure transcriptions to the deployment URL', async () => {
    const azure = createProviderAdapter(
      {
        name: 'azure',
        type: 'openai',
        baseUrl: sim.url,
        apiKey: 'sk-media',
        azure: { apiVersion: '2024-06-01' },
      },
      { clock },
    );
    await azure.transcriptions!(
      { file: wav(1), filename: 'a.wav', mimeType: 'audio/wav', fields: {} },
      call('whisper-prod'),
    );
    expect(sim.requests()[0]).toMatchObject({
      path: '/openai/deployments/whisper-prod/audio/transcriptions',
      query: { 'api-version': '2024-06-01' },
    });
  });

  it('translates through audio/translations, with the same upload and answers as transcriptions', async () => {
    const answer = await openai().translations!(
      {
        file: wav(2),
        filename: 'hola.wav',
        mimeType: 'audio/wav',
        fields: { response_format: 'verbose_json' },
      },
      call('whisper-sim'),
    );
    expect(answer.body).toMatchObject({ task: 'translate', language: 'english', duration: 2 });
    expect(answer.durationSeconds).toBe(2);
    expect(sim.requests()[0]).toMatchObject({ path: '/v1/audio/translations', model: 'whisper-sim' });
  });

  it('speaks through audio/speech: settles with the first bytes, the rest as the provider sends it', async () => {
    const input = 'Fifteen chars. '.repeat(4); // 60 characters: 4 seconds, 192,000 bytes in 4 KiB chunks
    const answer = await openai().speech!(
      { model: 'catalogue/tts', input, voice: 'alloy', response_format: 'flac' },
      call('tts-sim'),
    );
    expect(answer.contentType).toBe('audio/flac');
    const chunks: Uint8Array[] = [];
    for await (const chunk of answer.audio) chunks.push(chunk);
    const audio = Buffer.concat(chunks);
    expect([audio.length, audio.subarray(0, 4).toString()]).toEqual([192_000, 'fLaC']);
    expect(chunks.length).toBeGreaterThan(1);
    expect(sim.requests()[0]).toMatchObject({
      path: '/v1/audio/speech',
      model: 'tts-sim',
      body: { input, voice: 'alloy', response_format: 'flac' },
    });
  });

  it('speech: no first bytes within the timeout is a ProviderTimeoutError; silence later fails the iteration', async () => {
    sim.script([{ times: 1, hang: true }]);
    await expect(
      openai().speech!({ input: 'hello', voice: 'alloy' }, { ...call('tts-sim'), timeoutMs: 200 }),
    ).rejects.toMatchObject({ name: 'ProviderTimeoutError', midStream: false });
    sim.script([{ streamFailure: { afterChunks: 1, mode: 'hang' } }]);
    const answer = await openai().speech!(
      { input: 'a longer text to speak, in several chunks', voice: 'alloy' },
      { ...call('tts-sim'), timeoutMs: 200 },
    );
    const read = async () => {
      for await (const _ of answer.audio);
    };
    await expect(read()).rejects.toMatchObject({ name: 'ProviderTimeoutError', midStream: true });
  });

  it('speech: ending the iteration early cancels the provider call', async () => {
    sim.script([{ chunkDelayMs: 50 }]);
    const answer = await openai().speech!(
      { input: 'a longer text to speak, in several chunks', voice: 'alloy' },
      call('tts-sim'),
    );
    for await (const _ of answer.audio) break;
    await waitFor(() => sim.requests()[0]!.clientClosed, { what: 'the call to be cancelled' });
  });

  it('maps a refused upload to a ProviderError', async () => {
    sim.script([{ error: { status: 413, type: 'invalid_request_error', message: 'file too large' } }]);
    await expect(
      openai().transcriptions!(
        { file: wav(1), filename: 'a.wav', mimeType: 'audio/wav', fields: {} },
        call('w'),
      ),
    ).rejects.toMatchObject({
      name: 'ProviderError',
      upstreamStatus: 413,
      retryable: false,
      message: 'file too large',
    });
  });
});
