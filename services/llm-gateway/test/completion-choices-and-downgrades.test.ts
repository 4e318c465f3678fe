import { waitFor } from '@platform/testkit';
import { createProviderAdapter, ProviderError, type TextCompletionChunk } from '../src/providers';
import { providerCall } from './provider-fixtures';
import { type GatewayWorld, type Reply, startGatewayWorld } from './support';

/**
 * Text completions (decision 0115) where a batch of prompts or the organization's governance meets them: a provider
 * stream of several choices that ends after the first one's finish, and a downgrade (governance's, the budget's) to
 * a model whose provider has no text completions.
 */
describe('an OpenAI-protocol text completion stream of several choices', () => {
  /** a provider whose answer ends cleanly (no `[DONE]`) after these frames */
  const endingAfter = (chunks: unknown[]) =>
    createProviderAdapter(
      { name: 'oai', type: 'openai', baseUrl: 'http://provider.test/v1', apiKey: 'sk-test' },
      {
        fetch: async () =>
          new Response(chunks.map((c) => `data: ${JSON.stringify(c)}\n\n`).join(''), {
            headers: { 'content-type': 'text/event-stream' },
          }),
      },
    );
  const chunk = (index: number, text: string, finish_reason: string | null) => ({
    id: 'cmpl-1',
    object: 'text_completion',
    created: 1,
    model: 'gpt-instruct',
    choices: [{ text, index, logprobs: null, finish_reason }],
  });
  const read = async (chunks: unknown[]) => {
    const seen: TextCompletionChunk[] = [];
    const error = await (async () => {
      for await (const c of endingAfter(chunks).completionsStream!(
        { model: 'x', prompt: ['a', 'b'] },
        providerCall('gpt-instruct'),
      ))
        seen.push(c);
    })().catch((e: unknown) => e);
    return { seen, error };
  };

  it('ending after the first choice’s finish, before the second’s, is an incomplete_stream error', async () => {
    const { seen, error } = await read([chunk(0, 'one', null), chunk(0, '', 'stop'), chunk(1, 'two', null)]);
    expect(seen).toHaveLength(3);
    expect(error).toBeInstanceOf(ProviderError);
    expect(error).toMatchObject({ providerErrorType: 'incomplete_stream', retryable: false });
  });

  it('ending once every choice has finished is whole, [DONE] or not', async () => {
    const { seen, error } = await read([
      chunk(0, 'one', null),
      chunk(1, 'two', null),
      chunk(0, '', 'stop'),
      chunk(1, '', 'length'),
      // Azure's content filter results come after a choice's finish
      { ...chunk(0, '', null), content_filter_results: {} },
    ]);
    expect([seen.length, error]).toEqual([5, undefined]);
  });
});

describe('text completions under a downgrade to a model whose provider has no text completions', () => {
  let w: GatewayWorld;
  beforeAll(async () => {
    w = await startGatewayWorld();
  });
  afterAll(() => w?.stop());

  const complete = (as: { bearer: string }, body: Record<string, unknown>) =>
    w.call('gateway', 'POST', '/v1/completions', as, body);
  const chat = (as: { bearer: string }, model: string, content = 'hello') =>
    w.call('gateway', 'POST', '/v1/chat/completions', as, { model, messages: [{ role: 'user', content }] });
  const settings = (as: { bearer: string }, body: Record<string, unknown>) =>
    w.call('gateway', 'PATCH', '/v1/quotas/settings', as, body);
  const expectEnvelope = (reply: Reply, status: number, code: string) =>
    expect({ status: reply.status, code: reply.body?.code }).toEqual({ status, code });

  it('soft_downgrade passes over a mapped model without text completions to the organization’s default', async () => {
    const { owner } = await w.org('review-downgrade');
    const as = { bearer: owner.token };
    const set = await settings(as, {
      policy: 'soft_downgrade',
      models: {
        allowed: ['sim/claude', 'sim/cheap'],
        downgrade: { 'sim/gpt': 'sim/claude' },
        defaults: { completions: 'sim/cheap' },
      },
    });
    expect(set.status).toBe(200);
    const reply = await complete(as, { model: 'sim/gpt', prompt: 'x = ' });
    expect([reply.status, reply.body.model]).toEqual([200, 'sim/cheap']);
    expect(reply.headers.get('x-platform-model-downgraded')).toBe('sim/gpt -> sim/cheap');
    // chat keeps its mapped model
    const chatted = await chat(as, 'sim/gpt');
    expect(chatted.headers.get('x-platform-model-downgraded')).toBe('sim/gpt -> sim/claude');
  });

  it('over the monthly budget, a downgrade to a model without them is the budget’s 429, not a 400', async () => {
    const { owner } = await w.org('review-budget', 'budget');
    const as = { bearer: owner.token };
    const prompt = 'use up the budget with a longer prompt please';
    // until llm-quota has counted the month's 400 tokens
    const refused = await waitFor(
      async () => {
        const reply = await complete(as, { model: 'sim/gpt', prompt });
        return reply.status === 200 ? undefined : reply;
      },
      { what: 'the monthly budget to be spent' },
    );
    expectEnvelope(refused, 429, 'MONTHLY_QUOTA_EXCEEDED');

    expect(
      (await settings(as, { policy: 'soft_downgrade', models: { downgrade: { 'sim/gpt': 'sim/claude' } } }))
        .status,
    ).toBe(200);
    expectEnvelope(await complete(as, { model: 'sim/gpt', prompt }), 429, 'MONTHLY_QUOTA_EXCEEDED');
    // chat is sent to the mapped model as before
    const chatted = await chat(as, 'sim/gpt', prompt);
    expect([chatted.status, chatted.headers.get('x-platform-model-downgraded')]).toEqual([
      200,
      'sim/gpt -> sim/claude',
    ]);
  });
});
