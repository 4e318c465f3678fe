import {
  countSimulatorTokens,
  openaiPromptTokens,
  type SimulatedRequest,
  simulatedEmbedding,
  waitFor,
} from '@platform/testkit';
import { APIError, APIUserAbortError, toFile } from 'openai';
import { mockEmbedding } from '../src/providers/mock/mock-model';
import { silentWav } from '../src/routes/wav-fixture';
import { SIM_IMAGE_MODEL, SIM_WHISPER_MODEL } from './media-fixtures';
import { type GatewayWorld, gauge, minuteNow, modelEntry, startGatewayWorld } from './support';

type Usage = Record<string, number>;

/**
 * The endpoints besides chat completions as a developer meets them with the official `openai` SDK through
 * the edge: embeddings (the SDK's base64 default, token arrays), rerank, images and transcriptions, on the
 * provider simulator and on the mock provider; what the answers report is what llm-quota counts.
 */
describe('the openai SDK on embeddings, rerank, images and transcriptions', () => {
  let w: GatewayWorld;
  beforeAll(async () => {
    w = await startGatewayWorld({
      models: [
        SIM_IMAGE_MODEL,
        SIM_WHISPER_MODEL,
        modelEntry(
          'mock/embeddings',
          'embeddings',
          { provider: 'mock', model: 'mock-embeddings' },
          {
            input_per_million: 0.5,
            output_per_million: 0,
          },
        ),
        modelEntry(
          'mock/images',
          'image_generation',
          { provider: 'mock', model: 'mock-images' },
          { per_image: 0.01 },
        ),
        modelEntry(
          'mock/transcriptions',
          'audio_transcription',
          { provider: 'mock', model: 'mock-transcriptions' },
          { per_audio_minute: 0.006 },
        ),
      ],
    });
  });
  afterEach(() => w.sim.script([]));
  afterAll(() => w?.stop());

  const float32 = (vector: number[]) => Array.from(new Float32Array(vector));

  it('embeddings: the vectors the SDK decodes from base64 are the provider’s, and token-array inputs work', async () => {
    const { owner } = await w.org('sdk-embeddings');
    const client = w.client({ bearer: owner.token });
    // the SDK asks for base64 when the caller names no encoding, and decodes it to float32 values
    const sim = await client.embeddings.create({ model: 'sim/embed', input: ['first text', 'second'] });
    expect(sim.data.map((d) => d.embedding)).toEqual([
      float32(simulatedEmbedding('first text', 16)),
      float32(simulatedEmbedding('second', 16)),
    ]);
    const mock = await client.embeddings.create({ model: 'mock/embeddings', input: 'hello', dimensions: 8 });
    expect(mock.data[0]!.embedding).toEqual(float32(mockEmbedding('hello', 8)));
    const floats = await client.embeddings.create({
      model: 'sim/embed',
      input: 'first text',
      encoding_format: 'float',
    });
    expect(floats.data[0]!.embedding).toEqual(simulatedEmbedding('first text', 16));

    // OpenAI takes token ids too, one array or several: one token per id
    for (const model of ['sim/embed', 'mock/embeddings']) {
      const one = await client.embeddings.create({ model, input: [101, 2023, 3] });
      expect([model, one.data.length, one.usage.prompt_tokens]).toEqual([model, 1, 3]);
      const many = await client.embeddings.create({
        model,
        input: [
          [101, 2023, 3],
          [7, 8],
        ],
      });
      expect([model, many.data.length, many.usage.prompt_tokens]).toEqual([model, 2, 5]);
      expect(many.data[0]!.embedding).toEqual(one.data[0]!.embedding);
    }
  });

  it('embeddings: dimensions the mock cannot compute are 400 INVALID_DIMENSIONS before any work; bad input names input', async () => {
    const { owner } = await w.org('sdk-embeddings-bad');
    const as = { bearer: owner.token };
    // computed in the gateway's process: a hundred million dimensions would take all of its memory
    const huge = await w.call('gateway', 'POST', '/v1/embeddings', as, {
      model: 'mock/embeddings',
      input: ['a', 'b'],
      dimensions: 100_000_000,
    });
    expect(huge.status).toBe(400);
    expect(huge.body).toMatchObject({
      code: 'INVALID_DIMENSIONS',
      details: { dimensions: 100_000_000, max_dimensions: 3072 },
    });
    const err = await w
      .client(as)
      .embeddings.create({ model: 'mock/embeddings', input: 'x', dimensions: 4096 })
      .catch((e: unknown) => e);
    expect([(err as APIError).status, (err as APIError).error]).toEqual([400, 'INVALID_DIMENSIONS']);
    const largest = await w
      .client(as)
      .embeddings.create({ model: 'mock/embeddings', input: 'x', dimensions: 3072 });
    expect(largest.data[0]!.embedding).toHaveLength(3072);

    const bad = await w.call('gateway', 'POST', '/v1/embeddings', as, { model: 'mock/embeddings', input: 5 });
    expect(bad.status).toBe(400);
    expect(bad.body).toMatchObject({ code: 'INVALID_BODY', details: { issues: [{ field: 'input' }] } });
    expect(bad.body.message).toMatch(/input: a string, or an array of 1 to 2048 strings/);
  });

  it('embeddings: an empty string, alone or in the list, is 400 INVALID_BODY naming it, before any provider call', async () => {
    const { owner } = await w.org('sdk-embeddings-empty');
    const as = { bearer: owner.token };
    const from = w.sim.requests().length;
    for (const [input, field] of [
      ['', 'input'],
      [['first', ''], 'input.1'],
      [['', 'second', ''], 'input.0'],
    ] as const) {
      const err = await w
        .client(as)
        .embeddings.create({ model: 'sim/embed', input: input as string | string[] })
        .catch((e: unknown) => e);
      expect((err as APIError).status).toBe(400);
      const res = await w.call('gateway', 'POST', '/v1/embeddings', as, { model: 'sim/embed', input });
      expect(res.status).toBe(400);
      expect(res.body).toMatchObject({ code: 'INVALID_BODY' });
      expect(res.body.details.issues[0]).toEqual({ field, message: 'must not be an empty string' });
    }
    expect(w.sim.requests().slice(from)).toHaveLength(0);
    // token ids are not text: a list of ids holding 0 is one input
    const ids = await w.client(as).embeddings.create({ model: 'mock/embeddings', input: [0] });
    expect(ids.data).toHaveLength(1);
  });

  describe('rerank through chat scoring', () => {
    const documents = Array.from({ length: 20 }, (_, i) => `document number ${i}`);
    const SCORE = '0.5';
    /** what the simulator counts for one scoring call it answered */
    const spent = (r: SimulatedRequest) =>
      openaiPromptTokens(r.body as { messages: unknown[] }) + countSimulatorTokens(SCORE);
    const scoringCalls = (from: number) =>
      w.sim
        .requests()
        .slice(from)
        .filter((r) => r.endpoint === 'chat');

    it('a retried scoring call re-scores only what was not scored, and the answer reports every call made', async () => {
      const { owner } = await w.org('sdk-rerank-retry');
      const as = { bearer: owner.token };
      const from = w.sim.requests().length;
      w.sim.script([
        { match: { endpoint: 'chat' }, times: 1, error: { status: 500 } },
        { match: { endpoint: 'chat' }, reply: { content: SCORE } },
      ]);
      const sentIn = minuteNow();
      const ranked = (await w.client(as).post('/rerank', {
        body: { model: 'sim/gpt', query: 'which document', documents },
      })) as { results: Array<{ index: number; relevance_score: number }>; usage: Usage };
      expect(ranked.results).toHaveLength(20);
      expect(ranked.results.every((r) => r.relevance_score === 0.5)).toBe(true);
      const calls = scoringCalls(from);
      const answered = calls.slice(1); // the first one failed
      expect(answered).toHaveLength(documents.length); // each document scored once
      const tokens = answered.reduce((n, r) => n + spent(r), 0);
      expect(ranked.usage.total_tokens).toBe(tokens);
      const usage = await w.counted('sdk-rerank-retry', as, { requests: 1, tokens, sentIn });
      expect(gauge(usage, 'llm.monthly_tokens').used).toBe(tokens);
      expect(gauge(usage, 'llm.monthly_cost').used).toBeCloseTo(ranked.usage.cost!, 9);
    });

    it('a scoring call the provider refuses: nothing is sent after the answer, and the calls it answered are counted', async () => {
      const { owner } = await w.org('sdk-rerank-refused');
      const as = { bearer: owner.token };
      const from = w.sim.requests().length;
      w.sim.script([
        { match: { endpoint: 'chat' }, times: 5, reply: { content: SCORE } },
        { match: { endpoint: 'chat' }, times: 1, latencyMs: 30, error: { status: 400 } },
        { match: { endpoint: 'chat' }, latencyMs: 200, reply: { content: SCORE } },
      ]);
      const sentIn = minuteNow();
      const err = await w
        .client(as)
        .post('/rerank', { body: { model: 'sim/gpt', query: 'which document', documents } })
        .catch((e: unknown) => e);
      expect([(err as APIError).status, (err as APIError).error]).toEqual([502, 'PROVIDER_ERROR']);
      const atAnswer = scoringCalls(from).length;
      const calls = scoringCalls(from);
      const answered = calls.filter((_, i) => i !== 5);
      expect(answered.every((r) => !r.clientClosed)).toBe(true);
      const tokens = answered.reduce((n, r) => n + spent(r), 0);
      const usage = await w.counted('sdk-rerank-refused', as, { requests: 1, tokens, sentIn });
      expect(gauge(usage, 'llm.monthly_tokens').used).toBe(tokens);
      expect(scoringCalls(from)).toHaveLength(atAnswer); // no document was sent once the answer had gone
    });

    it('a client that aborts cancels the scoring calls in flight; the event counts the ones answered before', async () => {
      const { owner } = await w.org('sdk-rerank-abort');
      const as = { bearer: owner.token };
      const from = w.sim.requests().length;
      w.sim.script([
        { match: { endpoint: 'chat' }, times: 5, reply: { content: SCORE } },
        { match: { endpoint: 'chat' }, hang: true },
      ]);
      const sentIn = minuteNow();
      const controller = new AbortController();
      const pending = w
        .client(as)
        .post('/rerank', {
          body: { model: 'sim/gpt', query: 'which document', documents },
          signal: controller.signal,
        })
        .catch((e: unknown) => e);
      // 5 answered, then 8 hanging: the workers that got answers have moved on to the next documents
      await waitFor(() => scoringCalls(from).length >= 13, { what: 'the scoring calls to hang' });
      controller.abort();
      expect(await pending).toBeInstanceOf(APIUserAbortError);
      await waitFor(
        () =>
          scoringCalls(from)
            .slice(5)
            .every((r) => r.clientClosed),
        {
          what: 'the gateway to cancel the scoring calls in flight',
        },
      );
      const tokens = scoringCalls(from)
        .slice(0, 5)
        .reduce((n, r) => n + spent(r), 0);
      const usage = await w.counted('sdk-rerank-abort', as, { requests: 1, tokens, sentIn });
      expect(gauge(usage, 'llm.monthly_tokens').used).toBe(tokens);
    });
  });

  it('rerank under soft_downgrade says which model answered, as every other endpoint does', async () => {
    const { owner } = await w.org('sdk-rerank-downgrade');
    const as = { bearer: owner.token };
    const set = await w.call('gateway', 'PATCH', '/v1/quotas/settings', as, {
      policy: 'soft_downgrade',
      models: { allowed: ['sim/rerank'], downgrade: { 'sim/gpt': 'sim/rerank' } },
    });
    expect(set.status).toBe(200);
    const { data, response } = await w
      .client(as)
      .post('/rerank', { body: { model: 'sim/gpt', query: 'paris', documents: ['rome', 'paris'] } })
      .withResponse();
    expect((data as { model: string }).model).toBe('sim/rerank');
    expect(response.headers.get('x-platform-model-downgraded')).toBe('sim/gpt -> sim/rerank');
  });

  it('images: the tokens an answer reports are the tokens counted, on the simulator and on the mock', async () => {
    const { owner } = await w.org('sdk-images');
    const as = { bearer: owner.token };
    const client = w.client(as);
    const sentIn = minuteNow();
    const sim = await client.images.generate({
      model: 'sim/image',
      prompt: 'a red lighthouse at dusk',
      n: 2,
    });
    const mock = await client.images.generate({ model: 'mock/images', prompt: 'a red lighthouse at dusk' });
    const su = sim.usage as unknown as Usage;
    const mu = mock.usage as unknown as Usage;
    // the provider's own figures (GPT Image models report them), else the gateway's count of the prompt
    expect(su).toMatchObject({
      input_tokens: countSimulatorTokens('a red lighthouse at dusk'),
      total_tokens: countSimulatorTokens('a red lighthouse at dusk'),
      images: 2,
      cost: 0.08,
    });
    expect(mu).toMatchObject({
      input_tokens: expect.any(Number),
      output_tokens: 0,
      total_tokens: mu.input_tokens,
      images: 1,
      cost: 0.01,
    });
    expect(mu.total_tokens).toBeGreaterThan(0);
    const tokens = su.total_tokens! + mu.total_tokens!;
    const usage = await w.counted('sdk-images', as, { requests: 2, tokens, cost: 0.09, sentIn });
    expect(gauge(usage, 'llm.monthly_tokens').used).toBe(tokens);
    expect(gauge(usage, 'llm.monthly_cost').used).toBeCloseTo(0.09, 9);
  });

  it('transcriptions: every timestamp granularity reaches the provider, and verbose_json answers words and segments', async () => {
    const { owner } = await w.org('sdk-transcription-words');
    const client = w.client({ bearer: owner.token });
    const wav = silentWav(2);
    for (const model of ['sim/whisper', 'mock/transcriptions']) {
      const from = w.sim.requests().length;
      const both = await client.audio.transcriptions.create({
        model,
        file: await toFile(wav, 'two.wav', { type: 'audio/wav' }),
        response_format: 'verbose_json',
        timestamp_granularities: ['word', 'segment'],
      });
      expect([model, both.words?.length ?? 0, both.segments?.length ?? 0]).toEqual([
        model,
        both.text.split(/\s+/).length,
        1,
      ]);
      expect(both.words![0]).toMatchObject({ word: both.text.split(/\s+/)[0], start: 0 });
      const words = await client.audio.transcriptions.create({
        model,
        file: await toFile(wav, 'two.wav', { type: 'audio/wav' }),
        response_format: 'verbose_json',
        timestamp_granularities: ['word'],
      });
      expect([model, words.words?.length, words.segments]).toEqual([model, both.words!.length, undefined]);
      if (model === 'sim/whisper') {
        const sent = w.sim.requests().slice(from);
        expect(sent.map((r) => (r.body as Record<string, unknown>)['timestamp_granularities[]'])).toEqual([
          ['word', 'segment'],
          'word',
        ]);
      }
    }
  });

  it('transcriptions in text formats are answered as text whatever content type the provider claims', async () => {
    const { owner } = await w.org('sdk-transcription-type');
    w.sim.script([
      { transcript: '<script>alert(document.cookie)</script>', transcriptContentType: 'text/html' },
    ]);
    const form = new FormData();
    form.append('model', 'sim/whisper');
    form.append('response_format', 'text');
    form.append('file', new Blob([silentWav(1)], { type: 'audio/wav' }), 'one.wav');
    const res = await fetch(`${w.p.gatewayUrl}/v1/audio/transcriptions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${owner.token}` },
      body: form,
    });
    w.sim.reset();
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/plain; charset=utf-8');
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');
    expect(await res.text()).toContain('<script>');
  });

  it('models.list() reads one page (the SDK asks for no other); the next pages through query, ids with slashes', async () => {
    const { owner } = await w.org('sdk-models');
    const client = w.client({ bearer: owner.token });
    const all = (await client.models.list()).data.map((m) => m.id);
    expect(all).toContain('mock/embeddings');
    const second = await client.models.list({ query: { limit: 2, page: 1 } });
    expect(second.data.map((m) => m.id)).toEqual(all.slice(2, 4));
    const one = await client.models.retrieve('mock/embeddings');
    expect(one).toMatchObject({ id: 'mock/embeddings', object: 'model', owned_by: 'mock' });
    const missing = await client.models.retrieve('no/such').catch((e: unknown) => e);
    expect([(missing as APIError).status, (missing as APIError).error]).toEqual([404, 'MODEL_NOT_FOUND']);
  });

  it('a client that aborts cancels the provider call of every endpoint; each request is counted once, with nothing consumed', async () => {
    const { owner } = await w.org('sdk-aborts');
    const as = { bearer: owner.token };
    const client = w.client(as);
    const sentIn = minuteNow();
    const wav = silentWav(1);
    const calls: Array<[string, (signal: AbortSignal) => Promise<unknown>]> = [
      ['embeddings', (signal) => client.embeddings.create({ model: 'sim/embed', input: 'x' }, { signal })],
      [
        'rerank',
        (signal) =>
          client.post('/rerank', { body: { model: 'sim/rerank', query: 'q', documents: ['a'] }, signal }),
      ],
      ['images', (signal) => client.images.generate({ model: 'sim/image', prompt: 'x' }, { signal })],
      [
        'transcriptions',
        async (signal) =>
          client.audio.transcriptions.create(
            { model: 'sim/whisper', file: await toFile(wav, 'one.wav', { type: 'audio/wav' }) },
            { signal },
          ),
      ],
    ];
    for (const [endpoint, send] of calls) {
      w.sim.script([{ match: { endpoint: endpoint as never }, hang: true }]);
      const from = w.sim.requests().length;
      const controller = new AbortController();
      const pending = send(controller.signal).catch((e: unknown) => e);
      await waitFor(() => w.sim.requests().length > from, {
        what: `the ${endpoint} call to reach the provider`,
      });
      controller.abort();
      expect(await pending).toBeInstanceOf(APIUserAbortError);
      await waitFor(() => w.sim.requests()[from]!.clientClosed, {
        what: `the gateway to cancel the ${endpoint} call`,
      });
    }
    const usage = await w.counted('sdk-aborts', as, { requests: calls.length, tokens: 0, sentIn });
    if (minuteNow() === sentIn) expect(gauge(usage, 'llm.rpm').used).toBe(calls.length);
    expect(gauge(usage, 'llm.monthly_tokens').used).toBe(0);
    expect(gauge(usage, 'llm.monthly_cost').used).toBe(0);
  });
});
