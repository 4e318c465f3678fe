import {
  countSimulatorTokens,
  openaiTextPromptTokens,
  type ProviderSimulator,
  startProviderSimulator,
} from '../src';

let sim: ProviderSimulator;
beforeAll(async () => {
  sim = await startProviderSimulator({ apiKey: 'sk-sim' });
});
afterAll(() => sim.close());
beforeEach(() => sim.reset());

// biome-ignore lint/suspicious/noExplicitAny: the tests read arbitrary wire JSON
type Wire = any;

const post = (path: string, body: unknown, headers: Record<string, string> = {}) =>
  fetch(`${sim.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: 'Bearer sk-sim', ...headers },
    body: JSON.stringify(body),
  });
const dataFrames = async (res: Response): Promise<Wire[]> =>
  (await res.text())
    .split('\n\n')
    .filter(Boolean)
    .map((f) => f.slice(6))
    .map((d) => (d === '[DONE]' ? d : JSON.parse(d)));

const fim = { model: 'code-sim', prompt: 'def add(a, b):', suffix: '\nprint(add(1, 2))' };

describe('provider simulator: OpenAI legacy text completions', () => {
  it('answers from the prompt with counted usage (the suffix once per prompt), and records the request', async () => {
    const res = await post('/v1/completions', fim);
    expect(res.status).toBe(200);
    const body = (await res.json()) as Wire;
    const text = 'Simulated answer to: def add(a, b):';
    expect(body).toMatchObject({
      id: expect.stringMatching(/^cmpl-/),
      object: 'text_completion',
      model: 'code-sim',
      choices: [{ text, index: 0, logprobs: null, finish_reason: 'stop' }],
      usage: {
        prompt_tokens: countSimulatorTokens(fim.prompt) + countSimulatorTokens(fim.suffix),
        completion_tokens: countSimulatorTokens(text),
      },
    });
    expect(sim.requests()[0]).toMatchObject({ endpoint: 'completions', model: 'code-sim', body: fim });
    expect(openaiTextPromptTokens({ prompt: [[1, 2], [3]], suffix: 'c' })).toBe(2 + 1 + 1 + 1);
  });

  it('takes every prompt shape, n, echo, stop and max_tokens; refuses another prompt', async () => {
    const batch = (await (
      await post('/v1/completions', { model: 'm', prompt: ['a', 'b c'], n: 2 })
    ).json()) as Wire;
    expect(batch.choices.map((c: Wire) => c.index)).toEqual([0, 1, 2, 3]);
    expect(batch.usage.prompt_tokens).toBe(1 + 2);
    const ids = (await (await post('/v1/completions', { model: 'm', prompt: [[1, 2], [3]] })).json()) as Wire;
    expect([ids.choices.length, ids.usage.prompt_tokens]).toEqual([2, 3]);
    const echoed = (await (
      await post('/v1/completions', { model: 'm', prompt: 'x', echo: true })
    ).json()) as Wire;
    expect(echoed.choices[0].text).toBe('xSimulated answer to: x');
    const cut = (await (
      await post('/v1/completions', { model: 'm', prompt: 'one two three', max_tokens: 2, stop: 'never' })
    ).json()) as Wire;
    expect(cut.choices[0]).toMatchObject({ text: 'Simulated answer', finish_reason: 'length' });
    const bad = await post('/v1/completions', { model: 'm', prompt: 5 });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as Wire).error.type).toBe('invalid_request_error');
  });

  it('streams text_completion chunks, the usage chunk when asked, then [DONE]', async () => {
    const res = await post('/v1/completions', {
      ...fim,
      stream: true,
      stream_options: { include_usage: true },
    });
    expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const frames = await dataFrames(res);
    expect(frames.at(-1)).toBe('[DONE]');
    const usage = frames.at(-2);
    expect(usage).toMatchObject({
      object: 'text_completion',
      choices: [],
      usage: { prompt_tokens: openaiTextPromptTokens(fim) },
    });
    const chunks = frames.slice(0, -2);
    expect(chunks.map((c) => c.choices[0].text).join('')).toBe('Simulated answer to: def add(a, b):');
    expect(chunks.at(-1).choices[0].finish_reason).toBe('stop');
    expect(chunks.every((c) => c.usage === null)).toBe(true);
    // without include_usage: no usage anywhere
    const plain = await dataFrames(await post('/v1/completions', { ...fim, stream: true }));
    expect(plain.some((f) => f !== '[DONE]' && 'usage' in f)).toBe(false);
  });

  it('serves the Azure deployment path, and honours scripted errors and stream failures', async () => {
    const azure = await post(
      '/openai/deployments/code-deploy/completions?api-version=2024-10-21',
      { prompt: 'x' },
      { authorization: '', 'api-key': 'sk-sim' },
    );
    expect(azure.status).toBe(200);
    expect(((await azure.json()) as Wire).model).toBe('code-deploy');
    expect(sim.requests().at(-1)).toMatchObject({ endpoint: 'completions', model: 'code-deploy' });

    sim.script([
      { match: { endpoint: 'completions' }, times: 1, error: { status: 429, retryAfterSeconds: 2 } },
      {
        match: { endpoint: 'completions', stream: true },
        streamFailure: { afterChunks: 2, mode: 'error-event', type: 'server_error' },
      },
    ]);
    const limited = await post('/v1/completions', fim);
    expect([limited.status, limited.headers.get('retry-after')]).toEqual([429, '2']);
    const failed = await dataFrames(await post('/v1/completions', { ...fim, stream: true }));
    expect(failed).toHaveLength(3);
    expect(failed.at(-1).error).toMatchObject({ type: 'server_error' });
  });
});
