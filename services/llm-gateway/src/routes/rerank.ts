import { jsonBody, parseInput } from '@platform/kernel';
import type { Router } from 'express';
import type { CatalogueModel } from '../catalogue/catalogue';
import {
  account,
  accountFailure,
  figuresOf,
  type GatewayContext,
  prepareInference,
} from '../inference/gateway-context';
import { providerHeaders } from '../inference/header-policy';
import { countText } from '../inference/prompt-tokens';
import { failoverChain, withResilience } from '../inference/provider-calls';
import type { ProviderCall, Usage } from '../inference/provider-port';
import { abortOnClose, requestIdOf } from './client-abort';
import { RerankRequestSchema } from './schemas';

const SCORING_PROMPT =
  'You rate how relevant a document is to a search query. Answer with one number between 0 and 1 (1: fully relevant), nothing else.';
const SCORING_CONCURRENCY = 8;

const scoringMessages = (query: string, document: string) => [
  { role: 'system', content: SCORING_PROMPT },
  { role: 'user', content: `Query: ${query}\n\nDocument: ${document}\n\nRelevance (0 to 1):` },
];

/** The first number of a scoring answer, clamped to [0, 1]; 0 when there is none. */
export function scoreOf(text: string): number {
  const m = /-?\d+(?:\.\d+)?(?:e-?\d+)?/i.exec(text);
  const v = m ? Number(m[0]) : 0;
  return Number.isFinite(v) ? Math.min(1, Math.max(0, v)) : 0;
}

const addUsage = (a: Usage, b: Usage | null): Usage =>
  b
    ? {
        prompt_tokens: a.prompt_tokens + b.prompt_tokens,
        completion_tokens: a.completion_tokens + b.completion_tokens,
        total_tokens: a.total_tokens + b.total_tokens,
      }
    : a;

/** Scores each document through the model's chat completions at temperature 0, a few at a time. */
async function scoreByChat(model: CatalogueModel, call: ProviderCall, query: string, documents: string[]) {
  const scores = new Array<number>(documents.length).fill(0);
  let usage: Usage = { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 };
  let next = 0;
  const worker = async () => {
    while (next < documents.length) {
      const i = next++;
      const { body, usage: u } = await model.adapter.chat(
        { messages: scoringMessages(query, documents[i]!), temperature: 0, max_tokens: 8 },
        call,
      );
      const choice = (body.choices as Array<{ message?: { content?: unknown } }> | undefined)?.[0];
      const text = typeof choice?.message?.content === 'string' ? choice.message.content : '';
      scores[i] = scoreOf(text);
      usage = addUsage(
        usage,
        u ?? { prompt_tokens: 0, completion_tokens: countText(text), total_tokens: countText(text) },
      );
    }
  };
  await Promise.all(Array.from({ length: Math.min(SCORING_CONCURRENCY, documents.length) }, worker));
  return { results: scores.map((relevance_score, index) => ({ index, relevance_score })), usage };
}

/**
 * `POST /v1/rerank` (`{model, query, documents, top_n?}` → `{results: [{index, relevance_score}]}`,
 * best first): the provider's native rerank endpoint when the model has one, else chat scoring.
 */
export function mountRerank(router: Router, ctx: GatewayContext): void {
  router.post('/v1/rerank', async (req, res) => {
    const body = parseInput(RerankRequestSchema, jsonBody(req) ?? {});
    const documents = body.documents as string[];
    const queryTokens = countText(body.query);
    const estimate = documents.reduce((n, d) => n + queryTokens + countText(d) + 40, 0);
    const prepared = await prepareInference(ctx, req, 'completion', body.model, estimate);
    const abort = abortOnClose(req, res);
    try {
      const { result, model } = await withResilience(
        failoverChain(prepared.model, prepared.settings, ctx.catalogue),
        ctx.retry,
        abort.signal,
        (m) => providerHeaders(m, prepared.principal, req.headers, requestIdOf(req)),
        async (m, call) => {
          if (m.native_rerank && m.adapter.rerank) {
            const r = await m.adapter.rerank({ query: body.query, documents }, call);
            const usage = r.usage ?? {
              prompt_tokens: estimate,
              completion_tokens: 0,
              total_tokens: estimate,
            };
            return { results: r.results, usage, native: true };
          }
          return { ...(await scoreByChat(m, call, body.query, documents)), native: false };
        },
      );
      const ranked = [...result.results]
        .sort((a, b) => b.relevance_score - a.relevance_score || a.index - b.index)
        .slice(0, body.top_n ?? documents.length)
        .map((r) => (body.return_documents ? { ...r, document: { text: documents[r.index] } } : r));
      const figures = figuresOf(ctx, prepared, model, result.usage);
      res.json({
        object: 'rerank',
        model: model.model_id,
        results: ranked,
        usage: { ...result.usage, cost: figures.cost, duration_ms: figures.durationMs },
      });
      void account(
        ctx,
        { ...prepared, model },
        {
          model,
          usage: result.usage,
          usageSource: 'provider',
          outcome: 'success',
          endpoint: 'rerank',
          stream: false,
          requestId: requestIdOf(req),
        },
        figures,
      );
    } catch (err) {
      accountFailure(ctx, prepared, {
        endpoint: 'rerank',
        stream: false,
        requestId: requestIdOf(req),
        aborted: abort.signal.aborted,
      });
      throw err;
    }
  });
}
