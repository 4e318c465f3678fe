import { countSimulatorTokens, openaiTextPromptTokens } from '@platform/testkit';
import { type GatewayWorld, recordCompletions, startGatewayWorld } from './support';

/** Streams of several choices whose provider reports usage as it goes: which report ends the answer. */
describe('the usage report that ends a stream of several choices', () => {
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
});
