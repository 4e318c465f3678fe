import { envelopeOf, RateLimited, setDeadline } from '@platform/kernel';
import type { Request, Response } from 'express';
import type { CatalogueModel } from '../catalogue/catalogue';
import { chatChunksOf } from '../inference/answer-chunks';
import { billableText, reasoningText, toolCallsText } from '../inference/answer-text';
import { refusedForProvider } from '../inference/errors';
import {
  account,
  accountFailure,
  type Figures,
  type Finished,
  figuresOf,
  type GatewayContext,
  modelChoiceHeaders,
  type Outcome,
  type Prepared,
  prepareInference,
} from '../inference/gateway-context';
import { AUTO_MODEL, type RequestTraits } from '../inference/governance';
import { countChatPromptTokens, countText } from '../inference/prompt-tokens';
import { type DeploymentCheck, toAnswer } from '../inference/provider-calls';
import {
  type ChatChunk,
  type ChatCompletion,
  type ChatRequest,
  consumedBy,
  type ProviderCall,
  promptDetailsOf,
  type Usage,
} from '../inference/provider-port';
import type { Cancellation, CancelSignal } from '../providers/cancellation';
import { MONTHLY_QUOTA_EXCEEDED } from '../quota/admission';
import { abortOnClose, requestIdOf } from './client-abort';
import { callPrepared } from './prepared-call';

/** how long a finished stream's provider call goes on once its client left, for the usage report that follows */
const USAGE_LINGER_MS = 5_000;
/** how long a whole answer's provider stream is read on for its end (`[DONE]`, message_stop), to keep its connection */
const END_READ_MS = 250;
/**
 * how long a whole answer Azure's content filter annotates waits for the filter's last verdict: the client's usage
 * chunk and end wait with it, so a deployment silent there holds them this long, not the model's timeout (minutes)
 */
const VERDICT_WAIT_MS = 5_000;

/** A plain answer, ready to be written in the route's wire format. */
export interface Answered {
  /** the provider's completion (chat's, or a text completion) as it came (its `model` is the provider's) */
  completion: ChatCompletion;
  /** the served deployment: its `model_id` is the catalogue's */
  model: CatalogueModel;
  /** what the request is accounted: the provider's figures, else the tokenizer's */
  usage: Usage;
  figures: Figures;
  /** `x-platform-model-downgraded` when governance or the budget chose another model */
  headers: Record<string, string>;
}

/** How a stream ended, for its last words: the usage chunk, or the Responses API's terminal event. */
export interface StreamEnd {
  outcome: Outcome;
  /** the gateway's envelope when the stream was cut: the monthly budget crossed, or the provider failed */
  error: Record<string, unknown> | null;
  usage: Usage;
  /** what the provider reported beside the figures (OpenAI's `*_details`) */
  usageDetails: Record<string, unknown>;
  figures: Figures;
}

/** What the flow reads of a provider's chunk, chat's or a text completion's: the finish, the usage. */
export type FlowChunk = Record<string, unknown> & {
  choices?: Array<{ index?: number; finish_reason?: string | null }>;
  usage?: (Usage & Record<string, unknown>) | null;
};

/** Writes one streamed answer: opened once the first chunk is in (failover is over), then chunk by chunk. */
export interface StreamSink<K extends FlowChunk = ChatChunk> {
  open(model: CatalogueModel, headers: Record<string, string>): void;
  /** a provider chunk that carries something (usage-only chunks are read, not passed) */
  chunk(chunk: K): void;
  /** the last words and the end of the answer; nothing is written once the client left */
  close(end: StreamEnd): void | Promise<void>;
}

/**
 * One wire format over the gateway's completion flow: chat or text completions as they are (`OpenAiWire`), or
 * another API translated to chat (the Responses API, Anthropic's Messages). Admission, the provider call, the
 * stream's budget and accounting are the flow's.
 */
export interface CompletionWire<K extends FlowChunk = ChatChunk> {
  endpoint: Finished['endpoint'];
  /** writes the answer (the Responses API stores it first); never rejects */
  respond(res: Response, answered: Answered): void | Promise<void>;
  stream(res: Response): StreamSink<K>;
}

/** A request body of an OpenAI completion API: what the flow reads of it. */
export type CompletionBody = Record<string, unknown> & { model?: string; stream?: boolean };

/**
 * One of OpenAI's completion APIs on the provider side of the flow: chat completions, or the legacy text
 * completions (decision 0115). It says how the prompt is counted, which deployments can serve it, how the provider is
 * called, and what text an answer and a chunk hold (the tokenizer's count when a provider reports no usage, the
 * stream's budget). One instance per API, shared by every request: the flow allocates nothing for it.
 */
export interface CompletionApi<B extends CompletionBody, K extends FlowChunk> {
  /** the usage event's endpoint */
  readonly endpoint: Finished['endpoint'];
  /** the `object` of the API's stream chunks, and the prefix of a completion id */
  readonly chunkObject: string;
  readonly idPrefix: string;
  /** whether a deployment can serve the API (the provider has its endpoint); absent: every deployment can */
  readonly check: DeploymentCheck | undefined;
  /**
   * whether a deployment can send this very request (Anthropic's translation cannot carry `n: 2`): the check, for
   * this request, that throws why not before admission as `check` does; absent: every request the deployment can
   * serve
   */
  bodyCheck?(body: B): DeploymentCheck;
  promptTokens(body: B): number;
  /** how many choices the answer holds (`n`, per prompt): a stream is finished once each has its finish */
  choices(body: B): number;
  /** what routing reads of the request, for `model: "auto"` (decision 0120) */
  traits(body: B, promptTokens: number): RequestTraits;
  answer(
    model: CatalogueModel,
    body: B,
    call: ProviderCall,
  ): Promise<{ body: ChatCompletion; usage: Usage | null }>;
  stream(model: CatalogueModel, body: B, call: ProviderCall): AsyncIterable<K>;
  /** a whole answer as the chunks of its stream, for a deployment called without streaming (decision 0119) */
  chunksOf(answer: ChatCompletion): K[];
  /** what the answer's completion tokens are counted from when the provider reports none */
  answerText(answer: Record<string, unknown>): string;
  /** the text a chunk adds, counted against the monthly budget as it streams */
  chunkText(chunk: K): string;
}

/** What the provider receives: the caller's body with the provider's model name and without gateway-only members. */
function providerBody<B extends CompletionBody>(body: B, stream: boolean): B {
  const { model: _m, stream: _s, stream_options: _o, ...rest } = body;
  return (stream ? { ...rest, stream: true } : rest) as B;
}

/**
 * A chat request through the gateway: governance and quotas, the provider call with its retries and failover,
 * the answer (plain, or streamed with the monthly budget's cut), then one usage event.
 */
export function runCompletion(
  ctx: GatewayContext,
  req: Request,
  res: Response,
  body: ChatRequest,
  wire: CompletionWire,
): Promise<void> {
  return serveCompletion(CHAT_COMPLETIONS, ctx, req, res, body, wire);
}

/** A request of one of the completion APIs (`api`) through the gateway, as `runCompletion` serves chat. */
export async function serveCompletion<B extends CompletionBody, K extends FlowChunk>(
  api: CompletionApi<B, K>,
  ctx: GatewayContext,
  req: Request,
  res: Response,
  body: B,
  wire: CompletionWire<K>,
): Promise<void> {
  const promptTokens = api.promptTokens(body);
  const bodyCheck = api.bodyCheck?.(body);
  const check: DeploymentCheck = (model) => {
    api.check?.(model);
    bodyCheck?.(model);
  };
  const prepared = await prepareInference(
    ctx,
    req,
    'completion',
    body.model,
    promptTokens,
    check,
    body.model === AUTO_MODEL ? api.traits(body, promptTokens) : undefined,
  );
  if (body.stream) return streamCompletion(api, ctx, req, res, body, prepared, wire);

  const abort = abortOnClose(req, res);
  const answered = await callPrepared(ctx, req, prepared, abort.signal, (m, call) =>
    api.answer(m, providerBody(body, false), call),
  ).catch((err: unknown) => {
    accountFailure(ctx, prepared, {
      endpoint: wire.endpoint,
      stream: false,
      requestId: requestIdOf(req),
      aborted: abort.signal.aborted,
    });
    throw err;
  });
  const { result, model } = answered;
  const usage = result.usage ?? fallbackUsage(prepared.promptTokens, api.answerText(result.body));
  const figures = figuresOf(ctx, prepared, model, usage);
  const responded = wire.respond(res, {
    completion: result.body,
    model,
    usage,
    figures,
    headers: modelChoiceHeaders(prepared, model),
  });
  void account(
    ctx,
    prepared,
    {
      ...stamp({ ...prepared, model }, usage, 'success', wire.endpoint, false, requestIdOf(req)),
      usageSource: result.usage ? 'provider' : 'tokenizer',
    },
    figures,
  );
  if (responded) await responded;
}

const stamp = (
  prepared: Prepared,
  usage: Usage,
  outcome: Outcome,
  endpoint: Finished['endpoint'],
  stream: boolean,
  requestId: string,
) => ({
  model: prepared.model,
  usage,
  usageSource: 'tokenizer' as const,
  outcome,
  endpoint,
  stream,
  requestId,
});

const fallbackUsage = (prompt: number, completionText: string): Usage => {
  const completion = countText(completionText);
  return { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion };
};

/** What the answer's completion tokens are counted from when the provider reports none (thinking included). */
function completionText(body: Record<string, unknown>): string {
  const choices = (body.choices ?? []) as Array<{
    message?: { content?: unknown; tool_calls?: unknown; reasoning_content?: unknown; reasoning?: unknown };
  }>;
  return choices
    .map(
      (c) =>
        `${reasoningText(c.message)}${billableText(c.message?.content)}${toolCallsText(c.message?.tool_calls)}`,
    )
    .join('');
}

function chunkText(chunk: ChatChunk): string {
  let text = '';
  for (const choice of chunk.choices ?? []) {
    const delta = choice.delta;
    if (!delta) continue;
    text += billableText(delta.content);
    if (delta.reasoning_content !== undefined || delta.reasoning !== undefined) text += reasoningText(delta);
    if (delta.tool_calls) text += toolCallsText(delta.tool_calls);
  }
  return text;
}

/**
 * A streamed completion. The provider is asked for usage; the gateway fails over only before the
 * first chunk, forwards each chunk as it arrives, counts completion tokens as they stream (so a
 * `hard_block` org's monthly token budget ends the stream at the crossing), and ends it with the wire's last words.
 */
async function streamCompletion<B extends CompletionBody, K extends FlowChunk>(
  api: CompletionApi<B, K>,
  ctx: GatewayContext,
  req: Request,
  res: Response,
  body: B,
  prepared: Prepared,
  wire: CompletionWire<K>,
) {
  // A client that leaves once the answer is finished (every choice's finish_reason forwarded) does not stop the
  // provider stream at once: its usage report, hidden reasoning tokens included, follows the last chunk and is what
  // the request cost. Cancelling there would charge only the visible text the tokenizer counts. With choices still
  // to come (`n` > 1), the provider is still generating: a client that leaves cancels it at once.
  const finishedChoices = new Set<number>();
  let finished = false;
  const abort = abortOnClose(req, res, () => (finished ? USAGE_LINGER_MS : 0));
  let first: { iterator: AsyncIterator<K>; chunk: IteratorResult<K>; replay: Replay };
  let model = prepared.model;
  try {
    const opened = await callPrepared(
      ctx,
      req,
      prepared,
      abort.signal,
      async (m, call) => {
        const replay: Replay = { report: null };
        const chunks =
          m.requestShape?.streams === false
            ? answerAsStream(api, m, providerBody(body, false), call, replay)
            : api.stream(m, providerBody(body, true), { ...call, choices: choicesOf(api, m, body) });
        const iterator = chunks[Symbol.asyncIterator]();
        return { iterator, chunk: await iterator.next(), replay };
      },
      'first_chunk',
    );
    first = opened.result;
    model = opened.model;
  } catch (err) {
    accountFailure(ctx, prepared, {
      endpoint: wire.endpoint,
      stream: true,
      requestId: requestIdOf(req),
      aborted: abort.signal.aborted,
    });
    throw err;
  }
  const choices = choicesOf(api, model, body);
  const served = { ...prepared, model };
  const sink = wire.stream(res);
  sink.open(model, modelChoiceHeaders(served, served.model));

  let report: Report | null = null;
  let completionTokens = 0;
  let outcome: Outcome = 'success';
  let error: Record<string, unknown> | null = null;
  /** what the provider reported the cut stream consumed (Anthropic's message_start input), whoever cut it */
  let cut: Usage | null = null;
  let result = first.chunk;
  /** every choice has its finish and the provider's usage report is in: the answer is whole */
  let answered = false;
  /** the provider read under way when a whole answer's stream was ended */
  let unread: Promise<IteratorResult<K>> | null = null;
  /** Azure's content filter annotates this stream: its verdict on the answer's end may follow the usage report */
  let annotated = false;
  try {
    while (!result.done) {
      const chunk = result.value;
      for (const choice of chunk.choices ?? [])
        if (choice.finish_reason) finishedChoices.add(choice.index ?? 0);
      finished = finishedChoices.size >= choices;
      if (chunk.usage) report = reportOf(chunk.usage);
      if (!(chunk.usage && (chunk.choices?.length ?? 0) === 0)) sink.chunk(chunk);
      annotated ||= filterAnnotated(chunk);
      const tokens = countText(api.chunkText(chunk));
      completionTokens += tokens;
      if (!(await prepared.ticket.streamed(tokens))) {
        outcome = 'budget_cut';
        const { scope, limit } = prepared.ticket.crossed!;
        const whose = scope === 'org' ? "The organization's" : "This API key's";
        error = envelopeOf(
          new RateLimited(0, `${whose} monthly token budget was reached during this stream`, {
            error: MONTHLY_QUOTA_EXCEEDED,
            code: MONTHLY_QUOTA_EXCEEDED,
            details: { key: 'llm.monthly_tokens', scope, limit, window: 'month' },
          }),
          requestIdOf(req),
        );
        abort.abort();
        break;
      }
      if (abort.signal.aborted) break;
      // what may still follow (`[DONE]`, message_stop) ends nothing more: a provider that stalls before it does not
      // turn a whole answer into an error
      if (finished && chunk.usage && (chunk.choices?.length ?? 0) === 0) {
        answered = true;
        unread = (await forwardReceived(api, first.iterator, sink, annotated)).unread;
        break;
      }
      result = await first.iterator.next();
    }
  } catch (err) {
    cut = consumedBy(err);
    if (abort.signal.aborted) outcome = 'client_cancelled';
    else {
      outcome = 'provider_error';
      ctx.metrics.failed(model, err);
      // a deployment that cuts streams sits out like one that refuses them (the next request goes elsewhere)
      ctx.retry.balancer.failed(model, err);
      error = envelopeOf(
        toAnswer(err, model, model.timeout_ms ?? ctx.retry.defaultTimeoutMs),
        requestIdOf(req),
      );
    }
  }
  // the provider's stream ran to its end: its usage report (when it sent one) is the whole request's
  const complete = result.done === true || answered;
  // (the answer is not ended yet: destroyed means its client left)
  if (outcome === 'success' && (abort.signal.aborted || res.destroyed)) outcome = 'client_cancelled';
  if (answered) readToEnd(first.iterator, unread, abort);
  else if (!complete) cut ??= await stopStream(first.iterator, abort.signal);
  // A replayed answer (decision 0119) was generated whole, hidden reasoning included, whatever cut its replay (the
  // budget, the client leaving): its report is what the request cost.
  const whole = first.replay.report ?? (complete && outcome !== 'budget_cut' ? report : null);

  // The provider's report when it covers the whole answer, else what the provider reported before the cut (a usage
  // chunk, the input a cut stream reported as it began) and the tokenizer's count. The output reported (Anthropic's
  // message_delta, an OpenAI-protocol usage report read before [DONE]) is all the provider generated up to its
  // report, hidden thinking included, which the count of the text sent cannot see; the count when it is larger (text
  // sent after a report made mid-stream). Never their sum: the report counts the text sent.
  const reported = report?.usage ?? cut;
  const prompt = reported?.prompt_tokens ?? prepared.promptTokens;
  const reportedOutput = reported?.completion_tokens ?? 0;
  const completion = Math.max(reportedOutput, completionTokens);
  const usage: Usage = whole?.usage ?? {
    prompt_tokens: prompt,
    completion_tokens: completion,
    total_tokens: prompt + completion,
    ...(cut?.prompt_tokens_details && !report ? { prompt_tokens_details: cut.prompt_tokens_details } : {}),
  };
  const figures = figuresOf(ctx, prepared, model, usage);
  const closed = sink.close({
    outcome,
    error,
    usage,
    usageDetails: (whole ?? report)?.details ?? {},
    figures,
  });
  void account(
    ctx,
    served,
    {
      ...stamp(served, usage, outcome, wire.endpoint, true, requestIdOf(req)),
      usageSource:
        whole || (reportedOutput > 0 && reportedOutput >= completionTokens) ? 'provider' : 'tokenizer',
    },
    figures,
  );
  if (closed) await closed;
}

/** The choices a deployment answers: one a prompt when it is not sent `n` (`exclude_parameters`, decision 0119). */
const choicesOf = <B extends CompletionBody, K extends FlowChunk>(
  api: CompletionApi<B, K>,
  model: CatalogueModel,
  body: B,
) => api.choices(model.requestShape?.exclude.has('n') ? { ...body, n: undefined } : body);

/**
 * Ends a stream the flow stopped reading: one it cut between two chunks (the budget crossed, its client gone) is told
 * why, so that its adapter says what the provider reported the call consumed (Anthropic's message_start input), which
 * the usage event counts; null when the provider reported nothing. Either way the provider call is cancelled.
 */
async function stopStream(iterator: AsyncIterator<unknown>, cancelled: CancelSignal): Promise<Usage | null> {
  if (!(cancelled.aborted && iterator.throw)) {
    void iterator.return?.().catch(() => undefined);
    return null;
  }
  return iterator.throw(cancelled.reason).then(() => null, consumedBy);
}

/** what the race of `forwardReceived` says when the provider has sent nothing more yet */
const NOTHING_YET = Symbol('nothing yet');

/** a chunk Azure's content filter annotates (`content_filter_results` on a choice, empty while nothing is flagged) */
const filterAnnotated = (chunk: FlowChunk) =>
  chunk.choices?.some((c) => 'content_filter_results' in c) ?? false;

/**
 * Forwards what the provider sends after a whole answer's usage report, so that it comes before the stream's end:
 * Azure's content filter sends its verdict on the answer's last part after the report. A stream the filter annotates
 * (`annotated`, or once a chunk read here is) is read to the provider's end: its asynchronous filter's verdict may
 * come a while later, and it is the caller's only word on that part; a provider failing, or silent for the model's
 * timeout or `VERDICT_WAIT_MS` since the report, whichever comes first, ends the answer whole. Of any other stream
 * nothing more is waited for: the events of bytes already read come within microtasks, so a provider still silent a
 * turn of the event loop later has sent nothing more. The read under way when the wait ends is returned (null when
 * the stream is over; wrapped, since an async function returning a promise would wait for it). Another report than
 * the one that ended the answer is not forwarded: the stream's own usage chunk says it; nor is text (a buggy
 * server's), which the report does not count and the monthly budget never saw: the answer is what its finish and
 * report closed.
 */
async function forwardReceived<B extends CompletionBody, K extends FlowChunk>(
  api: CompletionApi<B, K>,
  iterator: AsyncIterator<K>,
  sink: StreamSink<K>,
  annotated: boolean,
): Promise<{ unread: Promise<IteratorResult<K>> | null }> {
  let timer: NodeJS.Timeout | undefined;
  /** the end of the wait for the verdict, from the report on (armed once the stream is known annotated) */
  let verdictWait: Promise<typeof NOTHING_YET> | undefined;
  try {
    for (;;) {
      const next = iterator.next();
      if (annotated)
        verdictWait ??= new Promise((resolve) => {
          timer = setDeadline(() => resolve(NOTHING_YET), VERDICT_WAIT_MS);
        });
      const read = Promise.race([
        next,
        verdictWait ?? new Promise<typeof NOTHING_YET>((resolve) => setImmediate(resolve, NOTHING_YET)),
      ]);
      // a failure after the report (the provider's error event, a dropped connection, its silence) leaves it whole
      const result = await read.catch(() => null);
      if (result === NOTHING_YET) return { unread: next };
      if (result === null || result.done) return { unread: null };
      annotated ||= filterAnnotated(result.value);
      if ((result.value.choices?.length ?? 0) > 0 && api.chunkText(result.value) === '')
        sink.chunk(result.value);
    }
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Reads a whole answer's stream on, in the background, from the read under way (`unread`), to the provider's end of
 * it (the connection then goes back to the pool); a provider that stalls before it has its call cancelled after
 * `END_READ_MS`.
 */
function readToEnd<K>(
  iterator: AsyncIterator<K>,
  unread: Promise<IteratorResult<K>> | null,
  cancel: Cancellation,
): void {
  if (!unread) return;
  const cap = setTimeout(() => cancel.abort(), END_READ_MS);
  const read = (next: Promise<IteratorResult<K>>): Promise<void> =>
    next.then((r) => (r.done ? undefined : read(iterator.next())));
  void read(unread)
    .catch(() => undefined)
    .finally(() => clearTimeout(cap));
}

/** A provider's usage report: the figures the flow bills, and what it says beside them (OpenAI's `*_details`). */
interface Report {
  usage: Usage;
  details: Record<string, unknown>;
}

function reportOf(reported: Usage & Record<string, unknown>): Report {
  const { prompt_tokens, completion_tokens, total_tokens, ...details } = reported;
  return { usage: { prompt_tokens, completion_tokens, total_tokens, ...promptDetailsOf(details) }, details };
}

/** A deployment called without streaming: its whole answer's usage report, once the answer is in. */
interface Replay {
  report: Report | null;
}

/**
 * The stream of a deployment that is called without streaming (`exclude_parameters: [stream]`): the provider's whole
 * answer (its usage report kept in `replay`, when the adapter read one), then its chunks. A failure is the first
 * chunk's, so the request still fails over.
 */
async function* answerAsStream<B extends CompletionBody, K extends FlowChunk>(
  api: CompletionApi<B, K>,
  model: CatalogueModel,
  body: B,
  call: ProviderCall,
  replay: Replay,
): AsyncGenerator<K> {
  const { body: answer, usage } = await api.answer(model, body, call);
  // the usage the adapter read of the answer (figures that are counts, else none: the tokenizer counts), as a
  // provider's stream reports it, never the answer's raw member (a negative figure would credit the budget)
  const { usage: raw, ...rest } = answer;
  const reported = usage ? { ...(raw as object), ...usage } : null;
  if (reported) replay.report = reportOf(reported);
  yield* api.chunksOf(reported ? { ...rest, usage: reported } : rest);
}

/** What a chat request uses, for routing: images, audio, tools, a JSON response format. */
function chatTraits(body: ChatRequest, promptTokens: number): RequestTraits {
  const needs = new Set<string>();
  for (const message of body.messages as Array<{ content?: unknown }>) {
    if (!Array.isArray(message?.content)) continue;
    for (const part of message.content as Array<{ type?: unknown }>) {
      if (part?.type === 'image_url') needs.add('vision');
      else if (part?.type === 'input_audio') needs.add('audio');
    }
  }
  if (Array.isArray(body.tools) && body.tools.length > 0) needs.add('tools');
  const format = (body.response_format as { type?: unknown } | undefined)?.type;
  if (format === 'json_object' || format === 'json_schema') needs.add('json_mode');
  return { messages: body.messages.length, promptTokens, needs: [...needs] };
}

/** Chat completions: the messages counted as admission does, every deployment, `chat` on the provider. */
class ChatCompletionsApi implements CompletionApi<ChatRequest, ChatChunk> {
  readonly endpoint = 'chat.completions';
  readonly chunkObject = 'chat.completion.chunk';
  readonly idPrefix = 'chatcmpl-';
  readonly check = undefined;

  promptTokens(body: ChatRequest): number {
    return countChatPromptTokens(body);
  }

  bodyCheck(body: ChatRequest): DeploymentCheck {
    const sent = providerBody(body, body.stream === true);
    // asked once per adapter's refusal and reasoning, not per deployment: a translation reads the whole body
    const asked: Array<{ ask: unknown; reasons: boolean; refusal: string | null }> = [];
    return (model) => {
      const ask = model.adapter.chatRefusal;
      if (!ask) return;
      const reasons = model.capabilities?.reasoning !== false;
      let seen = asked.find((a) => a.ask === ask && a.reasons === reasons);
      if (!seen) {
        seen = { ask, reasons, refusal: ask.call(model.adapter, sent, { reasons }) };
        asked.push(seen);
      }
      if (seen.refusal) throw refusedForProvider(model.providerName, model.model_id, seen.refusal);
    };
  }

  choices(body: ChatRequest): number {
    return typeof body.n === 'number' ? body.n : 1;
  }

  traits(body: ChatRequest, promptTokens: number): RequestTraits {
    return chatTraits(body, promptTokens);
  }

  answer(model: CatalogueModel, body: ChatRequest, call: ProviderCall) {
    return model.adapter.chat(body, call);
  }

  stream(model: CatalogueModel, body: ChatRequest, call: ProviderCall): AsyncIterable<ChatChunk> {
    return model.adapter.chatStream(body, call);
  }

  chunksOf(answer: ChatCompletion): ChatChunk[] {
    return chatChunksOf(answer);
  }

  answerText(answer: Record<string, unknown>): string {
    return completionText(answer);
  }

  chunkText(chunk: ChatChunk): string {
    return chunkText(chunk);
  }
}

export const CHAT_COMPLETIONS: CompletionApi<ChatRequest, ChatChunk> = new ChatCompletionsApi();
