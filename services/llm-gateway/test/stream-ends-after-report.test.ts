import Anthropic from '@anthropic-ai/sdk';
import type OpenAI from 'openai';
import type { ResponseStreamEvent } from 'openai/resources/responses/responses';
import { type GatewayWorld, recordCompletions, startGatewayWorld } from './support';

/**
 * What a provider sends after the usage report that made its answer whole reaches the client before the stream's
 * end, in every wire format the chat path speaks, and only when it adds nothing the report did not bill.
 */
describe('what a provider sends after its usage report', () => {
  let w: GatewayWorld;
  let as: { bearer: string };
  let budgeted: { bearer: string };
  beforeAll(async () => {
    w = await startGatewayWorld({
      file: (base) => ({
        ...base,
        providers: [
          ...base.providers,
          {
            name: 'azure',
            type: 'openai',
            baseUrl: base.providers[0]!.baseUrl!.replace(/\/v1$/, ''),
            apiKey: 'az-secret',
            azure: { apiVersion: '2024-10-21' },
          },
        ],
        models: [
          ...base.models,
          {
            model_id: 'azure/gpt',
            type: 'completion',
            provider_config: { provider: 'azure', model: 'gpt-deployment' },
            timeout_ms: 2_000,
            pricing: { input_per_million: 1, output_per_million: 1 },
          },
        ],
      }),
    });
    as = { bearer: (await w.org('after-report')).owner.token };
    // 400 tokens a month
    budgeted = { bearer: (await w.org('after-report-budget', 'budget')).owner.token };
  });
  afterAll(() => w?.stop());
  afterEach(() => w.sim.reset());

  const unended = { afterChunks: -1, mode: 'hang' } as const;
  const usage = { prompt_tokens: 12, completion_tokens: 5 };
  const anthropic = (who: { bearer: string }) =>
    new Anthropic({ baseURL: w.p.gatewayUrl, apiKey: null, authToken: who.bearer, maxRetries: 0 });

  it("Azure's content filter verdict after the usage chunk ends no Messages or Responses stream early: the SDKs read a whole answer", async () => {
    w.sim.script([
      {
        match: { model: 'gpt-deployment', stream: true },
        reply: { content: 'short', usage, contentFilterAfterUsage: true },
        streamFailure: unended,
      },
    ]);
    const messages = anthropic(as).messages.stream({
      model: 'azure/gpt',
      max_tokens: 100,
      messages: [{ role: 'user', content: 'hello' }],
    });
    const types: string[] = [];
    for await (const event of messages) types.push(event.type);
    expect(types).toEqual([
      'message_start',
      'content_block_start',
      'content_block_delta',
      'content_block_stop',
      'message_delta',
      'message_stop',
    ]);
    expect(await messages.finalMessage()).toMatchObject({
      stop_reason: 'end_turn',
      content: [{ type: 'text', text: 'short' }],
      usage: { input_tokens: 12, output_tokens: 5 },
    });

    const responses = w.client(as).responses.stream({ model: 'azure/gpt', input: 'hello' });
    const seen: ResponseStreamEvent[] = [];
    for await (const event of responses) seen.push(event);
    expect(seen.at(-1)?.type).toBe('response.completed');
    expect(seen.map((e) => e.sequence_number)).toEqual(seen.map((_, i) => i));
    expect(await responses.finalResponse()).toMatchObject({
      status: 'completed',
      output_text: 'short',
      usage: { input_tokens: 12, output_tokens: 5 },
    });
  });

  it("a provider's text after its usage report is not forwarded: the client gets the answer its report bills, and no more than a hard_block budget lets through", async () => {
    const completions = recordCompletions(w);
    try {
      // some 800 tokens, twice the budgeted organization's month, that no report counts
      const after = ' and then some'.repeat(200);
      w.sim.script([
        {
          match: { model: 'gpt-sim', stream: true },
          reply: { content: 'short', usage, contentAfterUsage: after },
        },
      ]);
      const stream = await w.client(budgeted).chat.completions.create(
        {
          model: 'sim/gpt',
          stream: true,
          stream_options: { include_usage: true },
          messages: [{ role: 'user', content: 'hello' }],
        },
        { headers: { 'x-request-id': 'text-after-report' } },
      );
      const chunks: OpenAI.ChatCompletionChunk[] = [];
      for await (const chunk of stream) chunks.push(chunk);
      expect(chunks.map((c) => c.choices[0]?.delta?.content ?? '').join('')).toBe('short');
      expect(chunks.at(-1)).toMatchObject({ choices: [], usage: { ...usage, total_tokens: 17 } });
      expect(await completions.of('text-after-report')).toMatchObject({
        outcome: 'success',
        usage: { ...usage, total_tokens: 17 },
      });

      // Anthropic's Messages read the same stream: the text block holds what was billed
      const final = await anthropic(as)
        .messages.stream({
          model: 'sim/gpt',
          max_tokens: 100,
          messages: [{ role: 'user', content: 'hello' }],
        })
        .finalMessage();
      expect(final).toMatchObject({
        content: [{ type: 'text', text: 'short' }],
        usage: { input_tokens: 12, output_tokens: 5 },
      });
    } finally {
      completions.stop();
    }
  });
});
