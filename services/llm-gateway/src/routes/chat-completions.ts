import { envelopeOf, jsonBody, parseInput, RateLimited } from '@platform/kernel';
import type { Request, Response, Router } from 'express';
import {
  account,
  accountFailure,
  downgradeHeaders,
  figuresOf,
  type GatewayContext,
  type Outcome,
  type Prepared,
  prepareInference,
} from '../inference/gateway-context';
import { countChatPromptTokens, countText } from '../inference/prompt-tokens';
import { toAnswer } from '../inference/provider-calls';
import type { ChatChunk, ChatRequest, Usage } from '../inference/provider-port';
import { MONTHLY_QUOTA_EXCEEDED } from '../quota/admission';
import { abortOnClose, requestIdOf } from './client-abort';
import { callPrepared } from './prepared-call';
import { ChatRequestSchema } from './schemas';
import { endEventStream, startEventStream, writeEvent } from './sse';

/** how long a finished stream's provider call goes on once its client left, for the usage report that follows */
const USAGE_LINGER_MS = 5_000;

/** What the provider receives: the caller's body with the provider's model name and without gateway-only members. */
function providerBody(body: ChatRequest, stream: boolean): ChatRequest {
  const { model: _m, stream: _s, stream_options: _o, ...rest } = body;
  return stream ? { ...rest, stream: true } : rest;
}

/** `POST /v1/chat/completions`: OpenAI's chat completions, plain or streamed, on the catalogue's providers. */
export function mountChatCompletions(router: Router, ctx: GatewayContext): void {
  router.post('/v1/chat/completions', async (req, res) => {
    const body = parseInput(ChatRequestSchema, jsonBody(req) ?? {}) as ChatRequest & {
      stream_options?: { include_usage?: boolean } | null;
    };
    const prepared = await prepareInference(ctx, req, 'completion', body.model, countChatPromptTokens(body));
    if (body.stream) return streamChat(ctx, req, res, body, prepared);

    const abort = abortOnClose(req, res);
    const answered = await callPrepared(ctx, req, prepared, abort.signal, (m, call) =>
      m.adapter.chat(providerBody(body, false), call),
    ).catch((err: unknown) => {
      accountFailure(ctx, prepared, {
        endpoint: 'chat.completions',
        stream: false,
        requestId: requestIdOf(req),
        aborted: abort.signal.aborted,
      });
      throw err;
    });
    const { result, model } = answered;
    const usage = result.usage ?? fallbackUsage(prepared.promptTokens, completionText(result.body));
    const figures = figuresOf(ctx, prepared, model, usage);
    const answer = {
      ...result.body,
      model: model.model_id,
      usage: {
        ...(result.body.usage ?? {}),
        ...usage,
        cost: figures.cost,
        duration_ms: figures.durationMs,
        carbon: figures.carbon,
      },
    };
    res.set(downgradeHeaders(prepared, model)).json(answer);
    void account(
      ctx,
      prepared,
      {
        ...stamp({ ...prepared, model }, usage, 'success', false, requestIdOf(req)),
        usageSource: result.usage ? 'provider' : 'tokenizer',
      },
      figures,
    );
  });
}

const stamp = (prepared: Prepared, usage: Usage, outcome: Outcome, stream: boolean, requestId: string) => ({
  model: prepared.model,
  usage,
  usageSource: 'tokenizer' as const,
  outcome,
  endpoint: 'chat.completions' as const,
  stream,
  requestId,
});

const fallbackUsage = (prompt: number, completionText: string): Usage => {
  const completion = countText(completionText);
  return { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion };
};

function completionText(body: Record<string, unknown>): string {
  const choices = (body.choices ?? []) as Array<{ message?: { content?: unknown; tool_calls?: unknown } }>;
  return choices
    .map(
      (c) =>
        `${typeof c.message?.content === 'string' ? c.message.content : ''}${c.message?.tool_calls ? JSON.stringify(c.message.tool_calls) : ''}`,
    )
    .join('');
}

function chunkText(chunk: ChatChunk): string {
  let text = '';
  for (const choice of chunk.choices ?? []) {
    if (typeof choice.delta?.content === 'string') text += choice.delta.content;
    if (choice.delta?.tool_calls) text += JSON.stringify(choice.delta.tool_calls);
  }
  return text;
}

/**
 * A streamed completion. The provider is asked for usage; the gateway fails over only before the
 * first chunk, forwards each chunk as it arrives, counts completion tokens as they stream (so a
 * `hard_block` org's monthly token budget ends the stream at the crossing), and ends with `[DONE]`.
 */
async function streamChat(
  ctx: GatewayContext,
  req: Request,
  res: Response,
  body: ChatRequest & { stream_options?: { include_usage?: boolean } | null },
  prepared: Prepared,
) {
  // A client that leaves once the answer is finished (its finish_reason forwarded) does not stop the provider
  // stream at once: its usage report, hidden reasoning tokens included, follows the last chunk and is what the
  // request cost. Cancelling there would charge only the visible text the tokenizer counts.
  let finished = false;
  const abort = abortOnClose(req, res, () => (finished ? USAGE_LINGER_MS : 0));
  const wantsUsage = body.stream_options?.include_usage === true;
  let first: { iterator: AsyncIterator<ChatChunk>; chunk: IteratorResult<ChatChunk> };
  let model = prepared.model;
  try {
    const opened = await callPrepared(
      ctx,
      req,
      prepared,
      abort.signal,
      async (m, call) => {
        const iterator = m.adapter.chatStream(providerBody(body, true), call)[Symbol.asyncIterator]();
        return { iterator, chunk: await iterator.next() };
      },
      'first_chunk',
    );
    first = opened.result;
    model = opened.model;
  } catch (err) {
    accountFailure(ctx, prepared, {
      endpoint: 'chat.completions',
      stream: true,
      requestId: requestIdOf(req),
      aborted: abort.signal.aborted,
    });
    throw err;
  }
  const served = { ...prepared, model };
  startEventStream(res, downgradeHeaders(served, served.model));

  let providerUsage: Usage | null = null;
  let usageDetails: Record<string, unknown> = {};
  // the usage chunk is one more chunk of the same completion: its id, created and fingerprint
  let last: ChatChunk | undefined;
  let completionTokens = 0;
  let outcome: Outcome = 'success';
  let result = first.chunk;
  try {
    while (!result.done) {
      const chunk = result.value;
      if (chunk.choices?.some((c) => c.finish_reason)) finished = true;
      if (chunk.usage) {
        const { prompt_tokens, completion_tokens, total_tokens, ...details } = chunk.usage;
        providerUsage = { prompt_tokens, completion_tokens, total_tokens };
        usageDetails = details;
      }
      const isUsageOnly = chunk.usage && (chunk.choices?.length ?? 0) === 0;
      if (!isUsageOnly) {
        last = chunk;
        writeEvent(res, {
          ...chunk,
          model: model.model_id,
          usage: wantsUsage ? (chunk.usage ?? null) : undefined,
        });
      }
      const tokens = countText(chunkText(chunk));
      completionTokens += tokens;
      if (!(await prepared.ticket.streamed(tokens))) {
        outcome = 'budget_cut';
        const limit = prepared.ticket.monthTokenLimit;
        writeEvent(res, {
          error: envelopeOf(
            new RateLimited(0, "The organization's monthly token budget was reached during this stream", {
              error: MONTHLY_QUOTA_EXCEEDED,
              code: MONTHLY_QUOTA_EXCEEDED,
              details: { key: 'llm.monthly_tokens', limit, window: 'month' },
            }),
            requestIdOf(req),
          ),
        });
        abort.abort();
        break;
      }
      if (abort.signal.aborted) break;
      result = await first.iterator.next();
    }
  } catch (err) {
    if (abort.signal.aborted) outcome = 'client_cancelled';
    else {
      outcome = 'provider_error';
      ctx.metrics.failed(model, err);
      // a deployment that cuts streams sits out like one that refuses them (the next request goes elsewhere)
      ctx.retry.balancer.failed(model, err);
      writeEvent(res, {
        error: envelopeOf(
          toAnswer(err, model, model.timeout_ms ?? ctx.retry.defaultTimeoutMs),
          requestIdOf(req),
        ),
      });
    }
  }
  // the provider's stream ran to its end: its usage report (when it sent one) is the whole request's
  const complete = result.done === true;
  // (the answer is not ended yet: destroyed means its client left)
  if (outcome === 'success' && (abort.signal.aborted || res.destroyed)) outcome = 'client_cancelled';
  if (!complete) void first.iterator.return?.().catch(() => undefined);
  const reported = providerUsage !== null && complete && outcome !== 'budget_cut';

  // The provider's report when it sent one (a full answer), else what the tokenizer counted.
  const usage: Usage =
    reported && providerUsage
      ? providerUsage
      : {
          prompt_tokens: providerUsage?.prompt_tokens ?? prepared.promptTokens,
          completion_tokens: completionTokens,
          total_tokens: (providerUsage?.prompt_tokens ?? prepared.promptTokens) + completionTokens,
        };
  const figures = figuresOf(ctx, prepared, model, usage);
  if (wantsUsage && outcome === 'success') {
    writeEvent(res, {
      id: last?.id ?? `chatcmpl-${requestIdOf(req)}`,
      object: 'chat.completion.chunk',
      created: last?.created ?? Math.floor(ctx.clock.now().getTime() / 1000),
      model: model.model_id,
      ...(last?.system_fingerprint ? { system_fingerprint: last.system_fingerprint } : {}),
      choices: [],
      usage: {
        ...usageDetails,
        ...usage,
        cost: figures.cost,
        duration_ms: figures.durationMs,
        carbon: figures.carbon,
      },
    });
  }
  endEventStream(res);
  void account(
    ctx,
    served,
    {
      ...stamp(served, usage, outcome, true, requestIdOf(req)),
      usageSource: reported ? 'provider' : 'tokenizer',
    },
    figures,
  );
}
