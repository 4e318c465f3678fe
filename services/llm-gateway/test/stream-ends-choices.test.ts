import { countSimulatorTokens, metricSum, openaiTextPromptTokens } from '@platform/testkit';
import { type GatewayWorld, recordCompletions, startGatewayWorld } from './support';

/** Streams whose provider reports usage as it goes (vLLM's on every chunk): which report ends the answer. */
describe('the usage report that ends a stream reported as it goes', () => {
  let w: GatewayWorld;
  let as: { bearer: string };
  beforeAll(async () => {
    w = await startGatewayWorld();
    as = { bearer: (await w.org('report-choices')).owner.token };
  });
  afterAll(() => w?.stop());
  afterEach(() => w.sim.reset());

  it("a batch of one-token completions under vLLM's usage on every chunk is billed every prompt's choice, not the last one's report", async () => {
    const completions = recordCompletions(w);
    try {
      // each choice is one chunk, its token, finish and own usage together (scoring a batch with max_tokens 1); the
      // first choice's report made the answer look whole to a stream that cannot know a second prompt follows
      w.sim.script([
        { match: { endpoint: 'completions', model: 'gpt-sim' }, reply: { continuousUsage: true } },
      ]);
      const prompt = ['first prompt', 'second prompt'];
      const stream = await w
        .client(as)
        .completions.create(
          { model: 'sim/gpt', prompt, max_tokens: 1, stream: true, stream_options: { include_usage: true } },
          { headers: { 'x-request-id': 'one-token-batch' } },
        );
      const texts: string[] = [];
      let usage: unknown;
      for await (const chunk of stream) {
        for (const choice of chunk.choices) texts[choice.index] = (texts[choice.index] ?? '') + choice.text;
        usage = chunk.usage ?? usage;
      }
      const word = 'Simulated';
      expect(texts).toEqual([word, word]);
      const whole = {
        prompt_tokens: openaiTextPromptTokens({ prompt }),
        completion_tokens: 2 * countSimulatorTokens(word),
      };
      expect(usage).toMatchObject(whole);
      const event = await completions.of('one-token-batch');
      expect({ outcome: event.outcome, usage: event.usage }).toEqual({
        outcome: 'success',
        usage: expect.objectContaining(whole),
      });
    } finally {
      completions.stop();
    }
  });

  it("with one choice, vLLM's usage on its finishing chunk ends a whole answer: a stall before the usage chunk is no error", async () => {
    const completions = recordCompletions(w);
    try {
      // every chunk carries the usage so far (continuous_usage_stats), the last token comes with the finish, then the
      // provider falls silent before its usage-only chunk and [DONE]: with one choice, the finish's report is whole
      w.sim.script([
        {
          match: { endpoint: 'completions', model: 'gpt-stalled-sim' },
          reply: { continuousUsage: true },
          streamFailure: { afterChunks: -2, mode: 'hang' },
        },
      ]);
      const errors = async () =>
        metricSum(
          await (await fetch(`${w.p.admin.llmGateway}/metrics`)).text(),
          'llm_gateway_provider_errors_total',
          {},
        );
      const errorsBefore = await errors();
      const prompt = 'one answer';
      const stream = await w
        .client(as)
        .completions.create(
          { model: 'sim/gpt-stalled', prompt, stream: true, stream_options: { include_usage: true } },
          { headers: { 'x-request-id': 'one-choice-continuous' } },
        );
      let text = '';
      let usage: unknown;
      for await (const chunk of stream) {
        text += chunk.choices[0]?.text ?? '';
        usage = chunk.usage ?? usage;
      }
      expect(text).toBe(`Simulated answer to: ${prompt}`);
      const whole = {
        prompt_tokens: openaiTextPromptTokens({ prompt }),
        completion_tokens: countSimulatorTokens(text),
      };
      expect(usage).toMatchObject(whole);
      const event = await completions.of('one-choice-continuous');
      expect({ outcome: event.outcome, source: event.usageSource, usage: event.usage }).toEqual({
        outcome: 'success',
        source: 'provider',
        usage: expect.objectContaining(whole),
      });
      // nor is the deployment counted failed (routing would have it sit out)
      expect(await errors()).toBe(errorsBefore);
    } finally {
      completions.stop();
    }
  });
});
