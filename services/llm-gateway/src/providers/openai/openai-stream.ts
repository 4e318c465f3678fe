import { setDeadline } from '@platform/kernel';
import type { ProviderHttp, ProviderRequest } from '../http/provider-http';
import { invalidAnswer, sendForEvents } from '../http/provider-http';
import {
  type ChatCompletionChunk,
  incompleteStream,
  type ProviderCall,
  ProviderError,
  streamFailure,
  type TextCompletionChunk,
  type Usage,
} from '../types';
import { toUsage } from '../usage';
import { readOpenAiError } from './openai-errors';

/** a chunk of chat completions or of text completions (decision 0115): the stream reads their common members */
type Chunk = ChatCompletionChunk | TextCompletionChunk;
type RawChunk = Partial<Chunk> & { error?: unknown; x_groq?: { usage?: unknown } };

/**
 * how long a one-choice answer's whole report, riding on its finishing chunk, waits for the usage-only chunk the
 * provider sends right after it (asked for with `include_usage`): a provider silent so long stalled, and the answer
 * ends whole on the report in hand
 */
const REPORT_WAIT_MS = 250;
/** what the wait for the usage-only chunk says when the provider stayed silent */
const SILENT = Symbol('silent');
/** the provider's events read as over */
const ENDED = { done: true, value: undefined } as const;

/**
 * The provider's usage as it came (OpenAI's `prompt_tokens_details` and `completion_tokens_details`
 * included, as a plain answer keeps them), with its figures normalised; null without figures.
 */
function withFigures(raw: unknown): Usage | null {
  const figures = toUsage(raw);
  return figures && { ...(raw as object), ...figures };
}

/**
 * OpenAI-protocol SSE to chunks. Usage, wherever the provider puts it (the `include_usage` chunk, on
 * the last content chunk as Mistral does, or Groq's `x_groq.usage`), is yielded as a chunk with empty `choices`: a
 * usage-only chunk's report, or one riding on the chunk that finishes the last choice when no chunk before carried
 * one, as soon as every choice begun has its finish reason (the answer is whole then, whether or not `[DONE]` comes).
 * When the answer holds one choice (`call.choices`) and reports ride on every chunk, the finishing chunk's report is
 * whole too, but the usage-only chunk that follows at once says more (vLLM's cached prompt tokens): it is awaited
 * `REPORT_WAIT_MS`, and the finishing chunk's report yielded when the provider stays silent, ends or fails. Any other
 * report is yielded at the end, as is a later report that changed it. Chunks with neither choices nor usage (Azure's
 * prompt filter preamble) are dropped. A stream that ends without `[DONE]` before every choice begun has its finish
 * reason (`n`, a batch of prompts) was cut. `object` names the usage chunk's kind: chat's `chat.completion.chunk`, or
 * text completions' `text_completion`.
 */
export async function* openAiChunks<K extends Chunk = ChatCompletionChunk>(
  http: ProviderHttp,
  call: ProviderCall,
  request: ProviderRequest,
  object: K['object'] = 'chat.completion.chunk',
): AsyncGenerator<K> {
  let usage: Usage | null = null;
  /** the usage report last yielded */
  let sent: Usage | null = null;
  let last: K | undefined;
  // the choices begun and not finished yet, and those finished: with several, the first finish is not the end (a
  // finished choice's later chunk, such as Azure's content filter results, does not begin it again)
  const open = new Set<unknown>();
  const finished = new Set<unknown>();
  let done = false;
  let yielded = false;
  /**
   * a report rode on an earlier choice's chunk: the provider reports as it goes, maybe per choice (a choice of one
   * chunk, the next not begun yet, looked like a whole answer's end)
   */
  let running = false;
  /** a one-choice answer's whole report from its finishing chunk, while the usage-only chunk is awaited */
  let held: Usage | null = null;
  const events = sendForEvents(http, call, request, (e) => e.data === '[DONE]');
  try {
    for (;;) {
      const next = events.next();
      // a failure once a one-choice answer's whole report is held ends the answer whole, as a stall there does
      let step = held ? await orSilence(next).catch(() => ENDED) : await next;
      if (step === SILENT) {
        sent = held;
        held = null;
        yield usageChunk(sent!);
        step = await next;
      }
      if (step.done) break;
      const event = step.value;
      if (event.data === '[DONE]') {
        done = true;
        break;
      }
      let raw: RawChunk;
      try {
        raw = JSON.parse(event.data) as RawChunk;
      } catch {
        throw invalidAnswer(http, call, 'a stream event that is not JSON');
      }
      // `data: null`, a number, or a choice that is not an object: read further, each would throw a TypeError (a 500)
      if (typeof raw !== 'object' || raw === null || Array.isArray(raw))
        throw invalidAnswer(http, call, 'a stream event that is not a JSON object');
      if (Array.isArray(raw.choices) && raw.choices.some((c) => typeof c !== 'object' || c === null))
        throw invalidAnswer(http, call, 'a stream chunk with a choice that is not an object');
      if (raw.error !== undefined) {
        const { type, message } = readOpenAiError(raw);
        throw new ProviderError({
          provider: http.provider,
          model: call.model,
          upstreamStatus: null,
          providerErrorType: type ?? 'stream_error',
          retryable: !yielded,
          message: message ?? 'the provider reported an error in the stream',
        });
      }
      const reported = withFigures(raw.usage) ?? withFigures(raw.x_groq?.usage);
      usage = reported ?? usage;
      const hasChoices = Array.isArray(raw.choices) && raw.choices.length > 0;
      if (hasChoices) {
        const { usage: _usage, x_groq: _groq, ...chunk } = raw;
        // Azure's content filter annotations have an empty id, object and model, created 0: they are this stream's,
        // and say so, or a client (and the usage chunk, which takes the last chunk's) would see another completion
        const { id, object, created, model } = last ?? chunk;
        last = (chunk.id || !last ? chunk : { ...chunk, id, object, created, model }) as K;
        for (const c of last.choices) {
          if (c.finish_reason) {
            finished.add(c.index);
            open.delete(c.index);
          } else if (!finished.has(c.index)) open.add(c.index);
        }
        yielded = true;
        yield last;
      }
      // the report of a chunk without choices (`include_usage`'s) counts every choice, as does one sent once on the
      // chunk that finishes the answer (Mistral's, Groq's); reports riding on every chunk may count their own choice
      // alone (vLLM's `continuous_usage_stats`), so the end's report is awaited after them, unless the answer holds
      // one choice: then its own count is the whole answer's, held for the end's
      const whole = finished.size > 0 && open.size === 0;
      if (reported && whole && !(hasChoices && running)) {
        held = null;
        sent = reported;
        yield usageChunk(reported);
      } else if (reported && whole && call.choices === 1) held = reported;
      if (reported && hasChoices) running = true;
    }
    // `[DONE]` is the protocol's own end: servers that never send a finish reason (Gemini's compatibility layer, some
    // proxies) end so, and their answers are whole
    if (!done && (finished.size === 0 || open.size > 0)) {
      throw incompleteStream(http.provider, call.model, yielded, 'the stream ended before its last chunk');
    }
  } catch (err) {
    // a usage report before the failure (some servers send one on every chunk) is what the call consumed
    throw streamFailure(err, usage, yielded);
  } finally {
    await events.return(undefined);
  }
  if (usage && usage !== sent) yield usageChunk(usage);

  /** the provider's next event, or `SILENT` when it sends none for `REPORT_WAIT_MS` */
  async function orSilence<T>(next: Promise<T>): Promise<T | typeof SILENT> {
    let timer: NodeJS.Timeout | undefined;
    const silence = new Promise<typeof SILENT>((resolve) => {
      timer = setDeadline(() => resolve(SILENT), REPORT_WAIT_MS);
    });
    return Promise.race([next, silence]).finally(() => clearTimeout(timer));
  }

  function usageChunk(usage: Usage): K {
    return {
      id: last?.id ?? '',
      object,
      created: last?.created ?? 0,
      model: last?.model ?? call.model,
      choices: [],
      usage,
    } as unknown as K;
  }
}
