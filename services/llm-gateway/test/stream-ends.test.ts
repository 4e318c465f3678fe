import { metricSum } from '@platform/testkit';
import type OpenAI from 'openai';
import { azureGpt, withAzure } from './azure-deployment';
import { type GatewayWorld, recordCompletions, startGatewayWorld } from './support';

/** one choice of a chunk as Azure's content filter annotates it */
type AnnotatedChoice = OpenAI.ChatCompletionChunk.Choice & { content_filter_results?: unknown };

/**
 * Streams that end in providers' less common ways, read with the official SDK: the usage on the last content chunk
 * (Mistral, several OpenAI-compatible servers) and Azure's content filter verdict after the usage chunk, each also
 * with a provider that stalls before its `[DONE]`.
 */
describe("streams that end in providers' own ways", () => {
  let w: GatewayWorld;
  let as: { bearer: string };
  beforeAll(async () => {
    w = await startGatewayWorld({
      file: (base) =>
        withAzure(base, [
          azureGpt('azure/gpt'),
          // the same deployment giving up on a provider silent for 2 s: the stalled streams alone use it, so that no
          // whole answer of a busy machine races so short a timeout
          azureGpt('azure/gpt-stalled', { timeout_ms: 2_000 }),
        ]),
    });
    const { owner } = await w.org('stream-ends');
    as = { bearer: owner.token };
  });
  afterAll(() => w?.stop());
  afterEach(() => w.sim.reset());

  const unended = { afterChunks: -1, mode: 'hang' } as const;
  const usage = { prompt_tokens: 12, completion_tokens: 501 };
  const reported = expect.objectContaining({ ...usage, total_tokens: 513 });

  const read = async (model: string, requestId: string, includeUsage = true) => {
    const stream = await w.client(as).chat.completions.create(
      {
        model,
        stream: true,
        ...(includeUsage ? { stream_options: { include_usage: true } } : {}),
        messages: [{ role: 'user', content: 'hello' }],
      },
      { headers: { 'x-request-id': requestId } },
    );
    const chunks: OpenAI.ChatCompletionChunk[] = [];
    for await (const chunk of stream) chunks.push(chunk);
    return chunks;
  };
  const textOf = (chunks: OpenAI.ChatCompletionChunk[]) =>
    chunks.map((c) => c.choices[0]?.delta?.content ?? '').join('');
  const providerErrors = async () =>
    metricSum(
      await (await fetch(`${w.p.admin.llmGateway}/metrics`)).text(),
      'llm_gateway_provider_errors_total',
      {},
    );

  it('with the usage on its last content chunk, a provider stalling before [DONE] still gives a whole answer, billed its report', async () => {
    const completions = recordCompletions(w);
    try {
      // Mistral's way: the finish_reason chunk carries the usage, no usage-only chunk follows; then nothing more
      w.sim.script([
        {
          match: { model: 'gpt-stalled-sim', stream: true },
          reply: { content: 'short', usage, usageOnLastChunk: true },
          streamFailure: unended,
        },
      ]);
      const errorsBefore = await providerErrors();
      const chunks = await read('sim/gpt-stalled', 'last-chunk-usage');
      expect(textOf(chunks)).toBe('short');
      expect(chunks.at(-1)).toMatchObject({ choices: [], usage: reported });
      const event = await completions.of('last-chunk-usage');
      expect({ outcome: event.outcome, source: event.usageSource, usage: event.usage }).toEqual({
        outcome: 'success',
        source: 'provider',
        usage: reported,
      });
      // a client that did not ask for usage is billed the same, and the deployment is not counted failed
      const quiet = await read('sim/gpt-stalled', 'last-chunk-usage-unasked', false);
      expect(quiet.every((c) => !c.usage)).toBe(true);
      expect((await completions.of('last-chunk-usage-unasked')).usage).toEqual(reported);
      expect(await providerErrors()).toBe(errorsBefore);
      expect(completions.events.filter((e) => e.requestId?.startsWith('last-chunk-usage'))).toHaveLength(2);
    } finally {
      completions.stop();
    }
  });

  it("Azure's content filter verdict after the usage chunk reaches the client before the stream's own usage chunk, stall or not, billed once", async () => {
    const completions = recordCompletions(w);
    try {
      for (const [requestId, model, failure] of [
        ['filter-after-usage', 'azure/gpt', undefined],
        ['filter-after-usage-stalled', 'azure/gpt-stalled', unended],
      ] as const) {
        w.sim.script([
          {
            match: { model: 'gpt-deployment', stream: true },
            reply: { content: 'short', usage, contentFilterAfterUsage: true },
            ...(failure ? { streamFailure: failure } : {}),
          },
        ]);
        const chunks = await read(model, requestId);
        expect(textOf(chunks)).toBe('short');
        const annotated = chunks.findIndex((c) =>
          c.choices.some((choice: AnnotatedChoice) => choice.content_filter_results !== undefined),
        );
        expect(annotated).toBeGreaterThan(-1);
        const verdict = chunks[annotated]!.choices[0] as AnnotatedChoice;
        expect(verdict.content_filter_results).toMatchObject({ violence: { filtered: false } });
        // Azure sends it with an empty id: it names the stream's completion, as the usage chunk does after it
        expect(new Set(chunks.map((c) => c.id))).toEqual(new Set([chunks[0]!.id]));
        // the usage chunk stays the last (OpenAI's contract; the SDK's snapshot would take a later chunk's null)
        expect(annotated).toBeLessThan(chunks.length - 1);
        expect(chunks.at(-1)).toMatchObject({ choices: [], usage: reported });
        const event = await completions.of(requestId);
        expect({ outcome: event.outcome, usage: event.usage }).toEqual({
          outcome: 'success',
          usage: reported,
        });
        expect(completions.events.filter((e) => e.requestId === requestId)).toHaveLength(1);
      }
      // the SDK's stream helper keeps the verdict on the finished choice
      w.sim.script([
        {
          match: { model: 'gpt-deployment', stream: true },
          reply: { content: 'short', usage, contentFilterAfterUsage: true },
          streamFailure: unended,
        },
      ]);
      const helper = w.client(as).chat.completions.stream({
        model: 'azure/gpt-stalled',
        stream_options: { include_usage: true },
        messages: [{ role: 'user', content: 'hello' }],
      });
      const final = await helper.finalChatCompletion();
      expect({
        content: final.choices[0]?.message.content,
        verdict: (final.choices[0] as { content_filter_results?: unknown }).content_filter_results,
        usage: final.usage,
      }).toEqual({
        content: 'short',
        verdict: expect.objectContaining({ hate: { filtered: false, severity: 'safe' } }),
        usage: reported,
      });
    } finally {
      completions.stop();
    }
  });

  it("Azure's asynchronous content filter verdict coming a while after the usage report reaches the client before the usage chunk, stall or not", async () => {
    const completions = recordCompletions(w);
    try {
      const errorsBefore = await providerErrors();
      // the stalled stream is not azure/gpt-stalled's: its 2 s timeout raced each 300 ms wait, and a machine paused
      // 2 s lost the verdict to it; the stall ends at the 5 s the verdict is waited for after the report
      for (const [requestId, failure] of [
        ['late-verdict', undefined],
        ['late-verdict-stalled', unended],
      ] as const) {
        // every frame 300 ms after the one before: the verdict on the answer's end comes 300 ms after the report
        w.sim.script([
          {
            match: { model: 'gpt-deployment', stream: true },
            reply: { content: 'short', usage, asyncContentFilter: true },
            chunkDelayMs: 300,
            ...(failure ? { streamFailure: failure } : {}),
          },
        ]);
        const chunks = await read('azure/gpt', requestId);
        expect(textOf(chunks)).toBe('short');
        const verdicts = chunks.filter((c) =>
          c.choices.some(
            (choice: AnnotatedChoice) =>
              (choice.content_filter_results as { violence?: unknown } | undefined)?.violence !== undefined,
          ),
        );
        expect([requestId, verdicts.length]).toEqual([requestId, 1]);
        expect(verdicts[0]!.choices[0]).toMatchObject({
          content_filter_results: { violence: { filtered: false } },
        });
        // the usage chunk stays the last, and names the stream's completion as the verdict does
        expect(chunks.indexOf(verdicts[0]!)).toBeLessThan(chunks.length - 1);
        expect(chunks.at(-1)).toMatchObject({ choices: [], usage: reported });
        expect(new Set(chunks.map((c) => c.id))).toEqual(new Set([chunks[0]!.id]));
        const event = await completions.of(requestId);
        expect({ outcome: event.outcome, usage: event.usage }).toEqual({
          outcome: 'success',
          usage: reported,
        });
        expect(completions.events.filter((e) => e.requestId === requestId)).toHaveLength(1);
      }
      // a provider silent after its verdict ends a whole answer: the deployment is not counted failed
      expect(await providerErrors()).toBe(errorsBefore);
    } finally {
      completions.stop();
    }
  });
});
