import { countSimulatorTokens, metricSum, waitFor } from '@platform/testkit';
import { azureGpt, withAzure } from './azure-deployment';
import { type GatewayWorld, modelEntry, recordCompletions, startGatewayWorld } from './support';

/**
 * What a whole answer's stream waits for after the report that made it whole. An Azure stream its content filter
 * annotates is read on for the filter's last verdict: the client's end of the answer (the usage chunk, `[DONE]`)
 * waits with it, so a deployment that falls silent there must not hold the client for the model's timeout. A
 * one-choice vLLM stream's report on its finishing chunk is whole, but the usage chunk right after it says more.
 */
describe('what a whole answer waits for after its report', () => {
  let w: GatewayWorld;
  let as: { bearer: string };
  beforeAll(async () => {
    w = await startGatewayWorld({
      file: (base) =>
        withAzure(base, [
          // a vLLM deployment with its prefix cache, cached prompt tokens priced apart
          modelEntry(
            'sim/cached',
            'completion',
            { provider: 'sim', model: 'cached-sim' },
            { input_per_million: 2, cached_input_per_million: 0.5, output_per_million: 8 },
          ),
          // a patient deployment (a reasoning model's first token may take minutes): its silence is no timeout soon
          azureGpt('azure/gpt-patient', { timeout_ms: 600_000 }),
        ]),
    });
    as = { bearer: (await w.org('verdict-wait')).owner.token };
  });
  afterAll(() => w?.stop());
  afterEach(() => w.sim.reset());

  const usage = { prompt_tokens: 12, completion_tokens: 5 };
  /** Azure annotating every chunk (its filter on), then silent after the usage chunk: no verdict, no [DONE] */
  const silentAfterReport = () =>
    w.sim.script([
      {
        match: { model: 'gpt-deployment', stream: true },
        reply: { content: 'short', usage, asyncContentFilter: true },
        streamFailure: { afterChunks: -2, mode: 'hang' },
      },
    ]);
  /** a streamed answer asked of the gateway as raw HTTP, under `requestId` */
  const post = (path: string, requestId: string, body: object, signal?: AbortSignal) =>
    fetch(`${w.p.gatewayUrl}${path}`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${as.bearer}`,
        'content-type': 'application/json',
        'x-request-id': requestId,
      },
      body: JSON.stringify(body),
      signal,
    });

  it("a deployment silent after its usage report, its verdict never coming, ends the client's answer whole long before the model's timeout", async () => {
    const completions = recordCompletions(w);
    try {
      silentAfterReport();
      const errors = async () =>
        metricSum(
          await (await fetch(`${w.p.admin.llmGateway}/metrics`)).text(),
          'llm_gateway_provider_errors_total',
          {},
        );
      const errorsBefore = await errors();
      // the client gives up after 30 s: the model's 10 minutes are not its to wait
      const res = await post(
        '/v1/chat/completions',
        'verdict-never-comes',
        {
          model: 'azure/gpt-patient',
          stream: true,
          stream_options: { include_usage: true },
          messages: [{ role: 'user', content: 'hello' }],
        },
        AbortSignal.timeout(30_000),
      );
      const body = await res.text();
      expect(body).toMatch(/data: \[DONE\]\n\n$/);
      const chunks = body
        .split('\n\n')
        .filter((frame) => frame.startsWith('data: {'))
        .map((frame) => JSON.parse(frame.slice('data: '.length)));
      expect(chunks.map((c) => c.choices[0]?.delta?.content ?? '').join('')).toBe('short');
      expect(chunks.at(-1)).toMatchObject({ choices: [], usage: { ...usage, total_tokens: 17 } });
      const event = await completions.of('verdict-never-comes');
      expect({ outcome: event.outcome, usage: event.usage }).toEqual({
        outcome: 'success',
        usage: { ...usage, total_tokens: 17 },
      });
      // the answer was whole: the deployment is not counted failed; its silent call is cancelled
      expect(await errors()).toBe(errorsBefore);
      await waitFor(() => w.sim.requests().at(-1)?.clientClosed, { what: 'the silent call to be cancelled' });
    } finally {
      completions.stop();
    }
  }, 60_000);

  it('a client that leaves while the verdict is awaited has the provider call cancelled, and is billed the report once', async () => {
    const completions = recordCompletions(w);
    try {
      silentAfterReport();
      const controller = new AbortController();
      const res = await post(
        '/v1/chat/completions',
        'leaves-before-verdict',
        { model: 'azure/gpt-patient', stream: true, messages: [{ role: 'user', content: 'hello' }] },
        controller.signal,
      );
      // the whole text and its finish are in; the gateway waits on for the verdict, and the client leaves
      const reader = res.body!.getReader();
      const decoder = new TextDecoder();
      let body = '';
      while (!body.includes('"finish_reason":"stop"')) body += decoder.decode((await reader.read()).value);
      controller.abort();
      const event = await completions.of('leaves-before-verdict');
      expect({ outcome: event.outcome, usage: event.usage }).toEqual({
        outcome: 'client_cancelled',
        usage: { ...usage, total_tokens: 17 },
      });
      await waitFor(() => w.sim.requests().at(-1)?.clientClosed, {
        what: 'the provider call to be cancelled',
      });
      expect(completions.events.filter((e) => e.requestId === 'leaves-before-verdict')).toHaveLength(1);
    } finally {
      completions.stop();
    }
  }, 60_000);

  it("a one-choice vLLM stream with usage on every chunk is billed its usage chunk's cached prompt tokens, which the finishing chunk's report lacks", async () => {
    const completions = recordCompletions(w);
    try {
      // vLLM's usage on every chunk counts the choice so far, without details; the usage chunk that follows the
      // finish at once says which prompt tokens its prefix cache served (--enable-prompt-tokens-details)
      w.sim.script([
        {
          match: { endpoint: 'completions', model: 'cached-sim' },
          reply: { continuousUsage: true, continuousUsageCachedTokens: 800, usage: { prompt_tokens: 1000 } },
        },
      ]);
      const prompt = 'a long shared prefix';
      const stream = await w
        .client(as)
        .completions.create(
          { model: 'sim/cached', prompt, stream: true, stream_options: { include_usage: true } },
          { headers: { 'x-request-id': 'continuous-cached' } },
        );
      let text = '';
      let usage: unknown;
      for await (const chunk of stream) {
        text += chunk.choices[0]?.text ?? '';
        usage = chunk.usage ?? usage;
      }
      const completion = countSimulatorTokens(text);
      const whole = {
        prompt_tokens: 1000,
        completion_tokens: completion,
        prompt_tokens_details: { cached_tokens: 800 },
      };
      expect(usage).toMatchObject(whole);
      const event = await completions.of('continuous-cached');
      // the usage event says the cached tokens as llm-quota reads them
      expect({ outcome: event.outcome, usage: event.usage }).toEqual({
        outcome: 'success',
        usage: expect.objectContaining({
          prompt_tokens: 1000,
          completion_tokens: completion,
          cached_tokens: 800,
        }),
      });
      expect(event.cost).toBeCloseTo((200 * 2 + 800 * 0.5 + completion * 8) / 1e6, 12);
    } finally {
      completions.stop();
    }
  });

  it("a one-choice vLLM stream whose connection drops after its finishing chunk is a whole answer, billed that chunk's report", async () => {
    const completions = recordCompletions(w);
    try {
      // the usage chunk never comes: the connection drops right after the finish
      w.sim.script([
        {
          match: { endpoint: 'completions', model: 'cached-sim' },
          reply: { continuousUsage: true, usage: { prompt_tokens: 1000 } },
          streamFailure: { afterChunks: -2, mode: 'disconnect' },
        },
      ]);
      const res = await post('/v1/completions', 'continuous-dropped', {
        model: 'sim/cached',
        prompt: 'one answer',
        stream: true,
      });
      const body = await res.text();
      expect(body).toMatch(/data: \[DONE\]\n\n$/);
      expect(body).not.toContain('"error"');
      const event = await completions.of('continuous-dropped');
      expect({
        outcome: event.outcome,
        source: event.usageSource,
        prompt: event.usage.prompt_tokens,
      }).toEqual({
        outcome: 'success',
        source: 'provider',
        prompt: 1000,
      });
    } finally {
      completions.stop();
    }
  });
});
