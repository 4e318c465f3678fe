import { jsonBody, parseInput } from '@platform/kernel';
import type { Router } from 'express';
import { costMicros } from '../accounting/cost';
import type { CatalogueModel } from '../catalogue/catalogue';
import { billableText, visibleText } from '../inference/answer-text';
import {
  account,
  accountFailure,
  figuresOf,
  type GatewayContext,
  modelChoiceHeaders,
  type Outcome,
  prepareInference,
  zeroUsage,
} from '../inference/gateway-context';
import { countChatPromptTokens, countText, TokenCounter } from '../inference/prompt-tokens';
import type { ProviderCall, Usage } from '../inference/provider-port';
import { abortOnClose, requestIdOf } from './client-abort';
import { callPrepared } from './prepared-call';
import { RerankRequestSchema } from './schemas';

const SCORING_PROMPT =
  'You rate how relevant a document is to a search query. Answer with one number between 0 and 1 (1: fully relevant), nothing else.';
const SCORING_CONCURRENCY = 8;

const scoringMessages = (query: string, document: string) => [
  { role: 'system', content: SCORING_PROMPT },
  { role: 'user', content: `Query: ${query}\n\nDocument: ${document}\n\nRelevance (0 to 1):` },
];

/** The first number of a scoring answer (`0.75`, `.75`, `1.`), clamped to [0, 1]; 0 when there is none. */
export function scoreOf(text: string): number {
  const m = /-?(?:\d+(?:\.\d*)?|\.\d+)(?:e[-+]?\d+)?/i.exec(text);
  const v = m ? Number(m[0]) : 0;
  return Number.isFinite(v) ? Math.min(1, Math.max(0, v)) : 0;
}

const isCount = (u: Usage) =>
  [u.prompt_tokens, u.completion_tokens, u.total_tokens].every((n) => Number.isFinite(n) && n >= 0);

const addUsage = (a: Usage, b: Usage): Usage => ({
  prompt_tokens: a.prompt_tokens + b.prompt_tokens,
  completion_tokens: a.completion_tokens + b.completion_tokens,
  total_tokens: a.total_tokens + b.total_tokens,
});

/**
 * What chat scoring has done for one request, across its attempts: the scores obtained (on `model`) and
 * what every answered scoring call consumed, so a retry scores only the documents still unscored and the
 * usage event counts every call the provider answered, whether or not the request succeeds in the end.
 */
interface ScoringProgress {
  model: string | null;
  scores: Array<number | undefined>;
  /** consumed per model: the pricing of a failover model differs */
  usage: Map<CatalogueModel, Usage>;
  /** whether the tokenizer counted a call the provider answered without usage */
  counted: boolean;
}

/**
 * Scores each document still unscored through the model's chat completions at temperature 0, a few at a
 * time. After a failure no new document is sent, the calls in flight are awaited (what they consumed is
 * counted, their scores kept), then the failure goes up; the client's abort cancels the calls in flight.
 */
async function scoreByChat(
  model: CatalogueModel,
  call: ProviderCall,
  query: string,
  documents: string[],
  progress: ScoringProgress,
  /** the tokens of the query and of each document, counted once for the request */
  counted: { query: number; documents: number[] },
) {
  if (progress.model !== model.model_id) {
    progress.model = model.model_id;
    progress.scores = new Array<number | undefined>(documents.length).fill(undefined);
  }
  const pending = documents.map((_, i) => i).filter((i) => progress.scores[i] === undefined);
  let failure: { err: unknown } | null = null;
  const worker = async () => {
    while (pending.length > 0 && failure === null) {
      const i = pending.shift()!;
      const messages = scoringMessages(query, documents[i]!);
      try {
        const { body, usage: u } = await model.adapter.chat(
          { messages, temperature: 0, max_tokens: 8 },
          call,
        );
        const choice = (body.choices as Array<{ message?: { content?: unknown } }> | undefined)?.[0];
        progress.scores[i] = scoreOf(visibleText(choice?.message?.content));
        // counted only when the provider reports no usage, from the counts made once for the request
        const spent =
          u ??
          tokenizerUsage(
            counted.query + counted.documents[i]!,
            countText(billableText(choice?.message?.content)),
          );
        if (!u) progress.counted = true;
        progress.usage.set(model, addUsage(progress.usage.get(model) ?? zeroUsage(), spent));
      } catch (err) {
        failure ??= { err };
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(SCORING_CONCURRENCY, pending.length) }, worker));
  if (failure) throw (failure as { err: unknown }).err;
  return progress.scores.map((score, index) => ({ index, relevance_score: score ?? 0 }));
}

/** the scoring prompt's own tokens (system prompt, template, message overheads) */
const SCORING_OVERHEAD = countChatPromptTokens({ messages: scoringMessages('', '') });

const tokenizerUsage = (contentTokens: number, completion: number): Usage => ({
  prompt_tokens: SCORING_OVERHEAD + contentTokens,
  completion_tokens: completion,
  total_tokens: SCORING_OVERHEAD + contentTokens + completion,
});

/** The usage and the cost (each model's own pricing) of every answered scoring call. */
function consumed(progress: ScoringProgress): { usage: Usage; costMicros: number } {
  let usage = zeroUsage();
  let micros = 0;
  for (const [model, u] of progress.usage) {
    usage = addUsage(usage, u);
    micros += costMicros(u, model.pricing);
  }
  return { usage, costMicros: micros };
}

/**
 * `POST /v1/rerank` (`{model, query, documents, top_n?}` → `{results: [{index, relevance_score}]}`,
 * best first): the provider's native rerank endpoint when the model has one, else chat scoring.
 */
export function mountRerank(router: Router, ctx: GatewayContext): void {
  router.post('/v1/rerank', async (req, res) => {
    const body = parseInput(RerankRequestSchema, jsonBody(req) ?? {});
    const documents = body.documents as string[];
    // one count per request: the tokenizer's exact budget is shared by the query and every document
    const counter = new TokenCounter();
    const queryTokens = counter.count(body.query);
    const counted = { query: queryTokens, documents: documents.map((d) => counter.count(d)) };
    const estimate = counted.documents.reduce((n, d) => n + queryTokens + d + 40, 0);
    const prepared = await prepareInference(ctx, req, 'completion', body.model, estimate);
    const abort = abortOnClose(req, res);
    const progress: ScoringProgress = { model: null, scores: [], usage: new Map(), counted: false };
    /**
     * one usage event for the request: every scoring call answered, plus the native answer when there is one
     * (`counted` when the tokenizer counted it), said the tokenizer's when it counted any of it
     */
    const settle = (
      model: CatalogueModel,
      native: { usage: Usage; counted: boolean } | null,
      outcome: Outcome,
    ) => {
      const scored = consumed(progress);
      const usage = native ? addUsage(scored.usage, native.usage) : scored.usage;
      const micros = scored.costMicros + (native ? costMicros(native.usage, model.pricing) : 0);
      const figures = {
        ...figuresOf(ctx, prepared, model, usage),
        cost: micros / 1_000_000,
        costMicros: micros,
      };
      const finished = {
        model,
        usage,
        usageSource: progress.counted || native?.counted ? ('tokenizer' as const) : ('provider' as const),
        outcome,
        endpoint: 'rerank' as const,
        stream: false,
        requestId: requestIdOf(req),
      };
      return { usage, figures, account: () => void account(ctx, { ...prepared, model }, finished, figures) };
    };
    let result: {
      results: Array<{ index: number; relevance_score: number }>;
      native: { usage: Usage; counted: boolean } | null;
    };
    let model: CatalogueModel;
    try {
      ({ result, model } = await callPrepared(ctx, req, prepared, abort.signal, async (m, call) => {
        if (m.native_rerank && m.adapter.rerank) {
          const r = await m.adapter.rerank({ query: body.query, documents }, call);
          const fallback = counted.documents.reduce((n, d) => n + queryTokens + d, 0);
          // the provider's figures when they are counts: a negative one would credit the organization's budget
          const reported = r.usage && isCount(r.usage) ? r.usage : null;
          const usage = reported ?? { prompt_tokens: fallback, completion_tokens: 0, total_tokens: fallback };
          // a provider's result for no document sent, or for one already ranked, is no result
          const ranked = new Set<number>();
          const results = r.results.filter(({ index }) => {
            if (!Number.isInteger(index) || index < 0 || index >= documents.length || ranked.has(index))
              return false;
            ranked.add(index);
            return true;
          });
          return { results, native: { usage, counted: reported === null } };
        }
        return {
          results: await scoreByChat(m, call, body.query, documents, progress, counted),
          native: null,
        };
      }));
    } catch (err) {
      const aborted = abort.signal.aborted;
      const spentOn = [...progress.usage.keys()].at(-1);
      // no scoring call answered: nothing consumed, accounted as every other failed call
      if (!spentOn)
        accountFailure(ctx, prepared, {
          endpoint: 'rerank',
          stream: false,
          requestId: requestIdOf(req),
          aborted,
        });
      else settle(spentOn, null, aborted ? 'client_cancelled' : 'provider_error').account();
      throw err;
    }
    const ranked = [...result.results]
      .sort((a, b) => b.relevance_score - a.relevance_score || a.index - b.index)
      .slice(0, body.top_n ?? documents.length)
      .map((r) => (body.return_documents ? { ...r, document: { text: documents[r.index] } } : r));
    const done = settle(model, result.native, 'success');
    res.set(modelChoiceHeaders(prepared, model)).json({
      object: 'rerank',
      model: model.model_id,
      results: ranked,
      usage: { ...done.usage, cost: done.figures.cost, duration_ms: done.figures.durationMs },
    });
    done.account();
  });
}
