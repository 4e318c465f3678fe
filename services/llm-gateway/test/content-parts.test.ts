import Ajv2020 from 'ajv/dist/2020';
import type { ResponseStreamEvent } from 'openai/resources/responses/responses';
import {
  type CompletionRecord,
  type GatewayWorld,
  gauge,
  minuteNow,
  recordCompletions,
  startGatewayWorld,
} from './support';

/** the reasoning and the answer of a magistral-like model (pieces that split alike apart and together) */
const THOUGHT = 'The user asks for the capital of France. It is Paris.';
const ANSWER = ' Paris is the capital of France.';

/**
 * Answers whose `content` is an array of parts, as Mistral's reasoning models send them plain and streamed
 * (`{type: "thinking", thinking: [{type: "text", text}]}`, then `{type: "text", text}`): the gateway bills their
 * text, thinking included, when the provider reports no usage and against the month's budget, and answers the
 * Responses API with the `text` parts alone. Chat answers pass as the provider sent them (decision 0106).
 */
describe('answers whose content is an array of parts', () => {
  let w: GatewayWorld;
  let owner: { userId: string; token: string };
  let completions: CompletionRecord;

  beforeAll(async () => {
    w = await startGatewayWorld();
    ({ owner } = await w.org('parts-e2e'));
    completions = recordCompletions(w);
  });
  afterAll(async () => {
    completions?.stop();
    await w?.stop();
  });
  afterEach(() => w.sim.reset());

  const chat = (requestId: string, stream: boolean, as: { bearer: string } = { bearer: owner.token }) =>
    w.call(
      'gateway',
      'POST',
      '/v1/chat/completions',
      as,
      { model: 'sim/gpt', stream, messages: [{ role: 'user', content: 'What is the capital of France?' }] },
      { 'x-request-id': requestId },
    );
  /** the simulator answers without usage: as parts (thinking, then the answer), or their text as one string */
  const scriptNoUsage = (parts: boolean) =>
    w.sim.script([
      {
        match: { model: 'gpt-sim' },
        reply: parts
          ? { content: ANSWER, contentParts: { thinking: THOUGHT }, omitUsage: true, omitStreamUsage: true }
          : { content: THOUGHT + ANSWER, omitUsage: true, omitStreamUsage: true },
      },
    ]);

  it('without the provider’s usage, parts are counted as their text and thinking, as the same text in a string', async () => {
    const run = Math.random().toString(36).slice(2);
    scriptNoUsage(false);
    await chat(`string-plain-${run}`, false);
    await chat(`string-stream-${run}`, true);
    scriptNoUsage(true);
    const plain = await chat(`parts-plain-${run}`, false);
    const streamed = await chat(`parts-stream-${run}`, true);

    // the chat answer is the provider's, parts and all
    expect(plain.status).toBe(200);
    expect(plain.body.choices[0].message.content).toEqual([
      { type: 'thinking', thinking: [{ type: 'text', text: THOUGHT }] },
      { type: 'text', text: ANSWER },
    ]);
    expect(streamed.body).toContain('"content":[{"type":"thinking"');

    const counted = async (kind: string) => {
      const [asString, asParts] = await Promise.all([
        completions.of(`string-${kind}-${run}`),
        completions.of(`parts-${kind}-${run}`),
      ]);
      expect(asString.usage.completion_tokens).toBeGreaterThan(10);
      return {
        expected: { source: 'tokenizer', outcome: 'success', tokens: asString.usage.completion_tokens },
        seen: {
          source: asParts.usageSource,
          outcome: asParts.outcome,
          tokens: asParts.usage.completion_tokens,
        },
      };
    };
    const [plainCount, streamCount] = await Promise.all([counted('plain'), counted('stream')]);
    expect({ plain: plainCount.seen, stream: streamCount.seen }).toEqual({
      plain: plainCount.expected,
      stream: streamCount.expected,
    });
    // the client's own usage says the same
    expect(plain.body.usage.completion_tokens).toBe(
      (await completions.of(`parts-plain-${run}`)).usage.completion_tokens,
    );
  });

  it('a hard_block stream of parts is cut at the monthly token budget, its thinking counted', async () => {
    const { owner: budgeted } = await w.org('parts-cut', 'budget');
    const as = { bearer: budgeted.token };
    const sentIn = minuteNow();
    const thinking = Array.from({ length: 400 }, (_, i) => `step${i}`).join(' ');
    w.sim.script([
      { match: { model: 'gpt-sim', stream: true }, reply: { content: ANSWER, contentParts: { thinking } } },
    ]);
    const res = await chat('parts-cut', true, as);
    const frames = (res.body as string).split('\n\n').filter(Boolean);
    expect(frames.at(-1)).toBe('data: [DONE]');
    expect(JSON.parse(frames.at(-2)!.slice(6)).error).toMatchObject({ code: 'MONTHLY_QUOTA_EXCEEDED' });

    const usage = await w.counted('parts-cut', as, { requests: 1, tokens: 401, sentIn });
    const used = gauge(usage, 'llm.monthly_tokens').used;
    expect(used).toBeGreaterThan(400);
    // one simulator chunk holds one word: far fewer than 40 tokens
    expect(used).toBeLessThan(440);
  });

  it('reasoning streamed beside the content (vLLM, DeepSeek) is counted against the budget and without usage', async () => {
    const { owner: budgeted } = await w.org('reasoning-cut', 'budget');
    const as = { bearer: budgeted.token };
    const sentIn = minuteNow();
    const reasoningContent = Array.from({ length: 400 }, (_, i) => `step${i}`).join(' ');
    w.sim.script([
      { match: { model: 'gpt-sim', stream: true }, reply: { content: ANSWER, reasoningContent } },
    ]);
    const res = await chat('reasoning-cut', true, as);
    const frames = (res.body as string).split('\n\n').filter(Boolean);
    expect(JSON.parse(frames.at(-2)!.slice(6)).error).toMatchObject({ code: 'MONTHLY_QUOTA_EXCEEDED' });
    const usage = await w.counted('reasoning-cut', as, { requests: 1, tokens: 401, sentIn });
    expect(gauge(usage, 'llm.monthly_tokens').used).toBeLessThan(440);

    // a plain answer without usage: its reasoning is counted as the same text in the content would be
    const run = Math.random().toString(36).slice(2);
    w.sim.script([
      { match: { model: 'gpt-sim' }, reply: { content: ANSWER, reasoningContent: THOUGHT, omitUsage: true } },
    ]);
    await chat(`reasoning-plain-${run}`, false);
    scriptNoUsage(false);
    await chat(`string-plain-again-${run}`, false);
    const [withReasoning, asString] = await Promise.all([
      completions.of(`reasoning-plain-${run}`),
      completions.of(`string-plain-again-${run}`),
    ]);
    expect(withReasoning.usage.completion_tokens).toBe(asString.usage.completion_tokens);
  });

  it('the Responses API answers the text parts as output_text, the thinking apart, plain and streamed', async () => {
    w.sim.script([
      { match: { model: 'gpt-sim' }, reply: { content: ANSWER, contentParts: { thinking: THOUGHT } } },
    ]);
    const { plain, streamed: final, seen } = await askBothWays();
    const deltas = seen
      .filter((e) => e.type === 'response.output_text.delta')
      .map((e) => (e as { delta: string }).delta)
      .join('');
    expect({ plain: plain.output_text, streamed: final.output_text, deltas }).toEqual({
      plain: ANSWER,
      streamed: ANSWER,
      deltas: ANSWER,
    });
    expect([plain.status, final.status]).toEqual(['completed', 'completed']);
    expect(plain.output).toEqual([
      expect.objectContaining({ type: 'reasoning' }),
      expect.objectContaining({
        type: 'message',
        content: [{ type: 'output_text', text: ANSWER, annotations: [], logprobs: [] }],
      }),
    ]);
    // one message with one text part: thinking deltas open no text part
    expect(
      seen.filter((e) => e.type === 'response.content_part.added' && e.part.type === 'output_text'),
    ).toHaveLength(1);
  });

  const ask = { model: 'sim/gpt', input: 'What is the capital of France?' };
  /** the same Responses request plain, then streamed (its events kept), with the official SDK */
  async function askBothWays() {
    const client = w.client({ bearer: owner.token });
    const plain = await client.responses.create(ask);
    const stream = client.responses.stream(ask);
    const seen: ResponseStreamEvent[] = [];
    for await (const event of stream) seen.push(event);
    return { plain, streamed: await stream.finalResponse(), seen };
  }

  // the two forms a reasoning model's thinking takes from OpenAI-compatible providers
  const thinkingForms = [
    ['Mistral’s thinking parts', { contentParts: { thinking: THOUGHT } }],
    ['vLLM’s and DeepSeek’s reasoning_content', { reasoningContent: THOUGHT }],
  ] as const;

  it.each(thinkingForms)(
    'the Responses API answers the thinking (%s) as a reasoning item before the message, plain and streamed',
    async (_form, thinking) => {
      w.sim.script([{ match: { model: 'gpt-sim' }, reply: { content: ANSWER, ...thinking } }]);
      const client = w.client({ bearer: owner.token });
      const { plain, streamed, seen } = await askBothWays();

      const expected = [
        {
          id: expect.stringMatching(/^rs_/),
          type: 'reasoning',
          status: 'completed',
          summary: [],
          content: [{ type: 'reasoning_text', text: THOUGHT }],
        },
        // the streamed text part has the SDK's `parsed` beside it
        expect.objectContaining({
          type: 'message',
          content: [expect.objectContaining({ type: 'output_text', text: ANSWER })],
        }),
      ];
      expect({ plain: plain.output, streamed: streamed.output }).toEqual({
        plain: expected,
        streamed: expected,
      });
      expect([plain.output_text, streamed.output_text]).toEqual([ANSWER, ANSWER]);
      // and the published document describes it (the answer as sent: the SDK adds its own `output_text`)
      const doc = (await (await fetch(`${w.p.gatewayUrl}/openapi.json`)).json()) as { components: object };
      const ajv = new Ajv2020({ strict: false, allErrors: true });
      ajv.addSchema({ components: doc.components }, 'gateway');
      const validate = ajv.compile({ $ref: 'gateway#/components/schemas/Response' });
      w.sim.script([{ match: { model: 'gpt-sim' }, reply: { content: ANSWER, ...thinking } }]);
      const sent = (await w.call('gateway', 'POST', '/v1/responses', { bearer: owner.token }, ask)).body;
      expect(sent.output[0].type).toBe('reasoning');
      expect({ valid: validate(sent), errors: ajv.errorsText(validate.errors) }).toEqual({
        valid: true,
        errors: 'No errors',
      });
      const deltas = (type: string) =>
        seen
          .filter((e) => e.type === type)
          .map((e) => (e as { delta: string }).delta)
          .join('');
      expect({
        reasoning: deltas('response.reasoning_text.delta'),
        text: deltas('response.output_text.delta'),
      }).toEqual({ reasoning: THOUGHT, text: ANSWER });
      // the reasoning item is whole before the message opens
      const types = seen.map((e) => e.type);
      expect(types.indexOf('response.reasoning_text.done')).toBeLessThan(
        types.indexOf('response.output_text.delta'),
      );

      // the provider's reasoning tokens, as it reported them
      expect(plain.usage?.output_tokens_details.reasoning_tokens).toBe(0);

      // a stored response with a reasoning item continues: the thinking is not sent back to the provider
      for (const first of [plain, streamed]) {
        const next = await client.responses.create({
          model: 'sim/gpt',
          input: 'And of Italy?',
          previous_response_id: first.id,
        });
        expect(next.status).toBe('completed');
        expect((w.sim.requests().at(-1)!.body as { messages: unknown[] }).messages).toEqual([
          { role: 'user', content: 'What is the capital of France?' },
          { role: 'assistant', content: ANSWER },
          { role: 'user', content: 'And of Italy?' },
        ]);
      }
      // and sent back in input, as a stateless client does, it is dropped the same way
      const again = await client.responses.create({
        model: 'sim/gpt',
        store: false,
        input: [
          { role: 'user', content: 'What is the capital of France?' },
          ...(plain.output as never[]),
          { role: 'user', content: 'And of Italy?' },
        ],
      });
      expect(again.status).toBe('completed');
      expect((w.sim.requests().at(-1)!.body as { messages: unknown[] }).messages).toHaveLength(3);
    },
  );

  it('without thinking, the Responses answer has no reasoning item, plain and streamed', async () => {
    w.sim.script([{ match: { model: 'gpt-sim' }, reply: { content: ANSWER } }]);
    const { plain, streamed } = await askBothWays();
    expect([plain, streamed].map((r) => r.output.map((o) => o.type))).toEqual([['message'], ['message']]);
  });

  it('rerank through a chat model reads the score from the text parts', async () => {
    w.sim.script([
      { match: { model: 'gpt-sim' }, reply: { content: '0.75', contentParts: { thinking: THOUGHT } } },
    ]);
    const ranked = await w.call(
      'gateway',
      'POST',
      '/v1/rerank',
      { bearer: owner.token },
      { model: 'sim/gpt', query: 'capital of France', documents: ['Paris', 'bananas'] },
    );
    expect(ranked.status).toBe(200);
    expect(ranked.body.results.map((r: { relevance_score: number }) => r.relevance_score)).toEqual([
      0.75, 0.75,
    ]);
  });
});
