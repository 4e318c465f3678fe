import { type Clock, setDeadline } from '@platform/kernel';
import { Cancellation } from '../cancellation';
import { type ProviderCall, ProviderError, ProviderTimeoutError } from '../types';
import { DestinationRefused } from './destinations';
import { type SseEvent, SseLineTooLong, SseParser } from './sse';
import type { ProviderResponse, ProviderTransport } from './transport';

/** How one provider family names its errors inside an error body. */
export type ErrorTypeReader = (body: unknown) => { type: string | null; message: string | null };

export interface ProviderHttp {
  provider: string;
  send: ProviderTransport;
  clock: Clock;
  readError: ErrorTypeReader;
}

export interface ProviderRequest {
  url: string;
  headers: Record<string, string>;
  body?: string | FormData;
  method?: 'GET' | 'POST';
}

/**
 * One attempt's lifetime: aborted by the caller's signal, or by the timer (then it is a timeout).
 * The deadline moves with every read of a stream, so a stream's silence is bounded too. The timer is
 * lazy: a read only moves the deadline, and the timer, when it fires early, sleeps again until it. The timer is a
 * `setDeadline`: bytes that arrived while the gateway's process stalled are read before the silence is judged.
 */
class CallGuard {
  readonly controller = new Cancellation();
  timedOut = false;
  private timer: NodeJS.Timeout | undefined;
  private deadline = 0;
  private running = false;
  private readonly onAbort = () => this.controller.abort(this.call.signal.reason);

  constructor(private readonly call: ProviderCall) {
    if (call.signal.aborted) this.controller.abort(call.signal.reason);
    else call.signal.addEventListener('abort', this.onAbort, { once: true });
    this.arm();
  }

  arm(): void {
    this.deadline = performance.now() + this.call.timeoutMs;
    this.running = true;
    if (!this.timer) this.schedule(this.call.timeoutMs);
  }

  /** while the caller holds an event, the provider's silence is not counted */
  pause(): void {
    this.running = false;
  }

  private schedule(ms: number): void {
    this.timer = setDeadline(() => {
      this.timer = undefined;
      if (!this.running) return;
      const left = this.deadline - performance.now();
      if (left > 1) {
        this.schedule(left);
        return;
      }
      this.timedOut = true;
      this.controller.abort(new Error('provider timeout'));
    }, ms);
  }

  /** stops the timer and the listener; with `cancel`, also ends the upstream request */
  dispose(cancel: boolean): void {
    this.running = false;
    clearTimeout(this.timer);
    this.timer = undefined;
    this.call.signal.removeEventListener('abort', this.onAbort);
    if (cancel && !this.controller.signal.aborted) this.controller.abort(new Error('provider call finished'));
  }
}

const NETWORK_CODES =
  /ECONNREFUSED|ECONNRESET|EPIPE|ETIMEDOUT|ENOTFOUND|EAI_AGAIN|EHOSTUNREACH|UND_ERR_SOCKET|terminated|other side closed/i;

function networkDetail(err: unknown): string {
  const e = err as { code?: string; cause?: { code?: string; message?: string } } | null;
  const cause = e?.cause;
  return (
    cause?.code ??
    cause?.message ??
    (typeof e?.code === 'string' && e.code !== 'UND_ERR_ABORTED' ? e.code : undefined) ??
    (err instanceof Error ? err.message : String(err))
  );
}

/** Seconds from `retry-after-ms` (OpenAI) or `retry-after` (seconds or an HTTP date). */
function retryAfterSeconds(res: ProviderResponse, clock: Clock): number | null {
  const ms = Number(res.header('retry-after-ms'));
  if (res.header('retry-after-ms') && Number.isFinite(ms) && ms >= 0) return Math.ceil(ms / 1000);
  const value = res.header('retry-after');
  if (!value) return null;
  const seconds = Number(value);
  if (Number.isFinite(seconds) && seconds >= 0) return Math.ceil(seconds);
  const date = Date.parse(value);
  if (Number.isNaN(date)) return null;
  return Math.max(0, Math.ceil((date - clock.now().getTime()) / 1000));
}

const isRetryableStatus = (status: number) => status === 408 || status === 429 || status >= 500;

/** The provider's own `x-should-retry` (OpenAI, Anthropic) overrides what its status suggests. */
function shouldRetry(res: ProviderResponse): boolean {
  const hint = res.header('x-should-retry');
  if (hint === 'true') return true;
  if (hint === 'false') return false;
  return isRetryableStatus(res.status);
}

/** The most of an error answer read: its type and message come first; an error page of any size is not held. */
const MAX_ERROR_BYTES = 64 * 1024;

/** The start of an error answer's body (the rest is dropped with its connection); what arrived when it fails. */
async function errorText(res: ProviderResponse): Promise<string> {
  const parts: Uint8Array[] = [];
  let size = 0;
  try {
    const reader = res.chunks();
    for (;;) {
      const { done, value } = await reader.next();
      if (done) break;
      parts.push(value);
      size += value.length;
      if (size > MAX_ERROR_BYTES) {
        await res.cancel();
        break;
      }
    }
  } catch {
    // what arrived is all there is
  }
  return Buffer.concat(parts).subarray(0, MAX_ERROR_BYTES).toString('utf8');
}

async function errorFromResponse(
  http: ProviderHttp,
  model: string,
  res: ProviderResponse,
): Promise<ProviderError> {
  const text = await errorText(res);
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  const { type, message } = parsed === undefined ? { type: null, message: null } : http.readError(parsed);
  return new ProviderError({
    provider: http.provider,
    model,
    upstreamStatus: res.status,
    providerErrorType: type ?? `http_${res.status}`,
    retryable: shouldRetry(res),
    retryAfterSeconds: retryAfterSeconds(res, http.clock),
    message: message ?? (text.replace(/\s+/g, ' ').slice(0, 200) || `HTTP ${res.status}`),
  });
}

/** the destination check's refusal, thrown directly or by the connection's lookup (as a cause) */
function refusedDestination(err: unknown): DestinationRefused | null {
  for (let e = err, depth = 0; e && depth < 5; e = (e as { cause?: unknown }).cause, depth++)
    if (e instanceof DestinationRefused) return e;
  return null;
}

function translate(
  http: ProviderHttp,
  call: ProviderCall,
  guard: CallGuard,
  err: unknown,
  midStream: boolean,
): unknown {
  if (err instanceof ProviderError || err instanceof ProviderTimeoutError) return err;
  if (guard.timedOut) return new ProviderTimeoutError(http.provider, call.model, call.timeoutMs, midStream);
  if (call.signal.aborted) return call.signal.reason ?? err;
  const refused = refusedDestination(err);
  if (refused)
    return new ProviderError({
      provider: http.provider,
      model: call.model,
      upstreamStatus: null,
      providerErrorType: 'destination_refused',
      retryable: false,
      message: `the provider's address is not allowed (${refused.message})`,
    });
  const detail = networkDetail(err);
  return new ProviderError({
    provider: http.provider,
    model: call.model,
    upstreamStatus: null,
    providerErrorType: 'connection_error',
    // before any byte reached the caller another attempt is safe; after, the caller has half an answer
    retryable: !midStream,
    message: `${midStream ? 'connection lost in the middle of the stream' : 'could not reach the provider'} (${NETWORK_CODES.test(detail) ? detail : 'network error'})`,
  });
}

/** Sends the request under the guard's signal; a provider's error answer is thrown as its ProviderError. */
async function sendOk(
  http: ProviderHttp,
  call: ProviderCall,
  request: ProviderRequest,
  guard: CallGuard,
): Promise<ProviderResponse> {
  const res = await http.send(request.url, {
    method: request.method ?? 'POST',
    headers: request.headers,
    body: request.body,
    signal: guard.controller.signal,
  });
  if (!res.ok) throw await errorFromResponse(http, call.model, res);
  return res;
}

/** Sends one request and reads the whole answer; the timeout covers both. */
export async function sendForAnswer(
  http: ProviderHttp,
  call: ProviderCall,
  request: ProviderRequest,
): Promise<{ res: ProviderResponse; text: string }> {
  const guard = new CallGuard(call);
  try {
    const res = await sendOk(http, call, request, guard);
    return { res, text: await res.text() };
  } catch (err) {
    throw translate(http, call, guard, err, false);
  } finally {
    guard.dispose(false);
  }
}

/** `sendForAnswer` for a JSON answer: a body that is not JSON is the provider's error. */
export async function sendForJson<T>(
  http: ProviderHttp,
  call: ProviderCall,
  request: ProviderRequest,
): Promise<T> {
  const { text, res } = await sendForAnswer(http, call, request);
  try {
    return JSON.parse(text) as T;
  } catch {
    throw invalidAnswer(
      http,
      call,
      `expected JSON, got ${res.header('content-type') ?? 'no content type'}`,
      res.status,
    );
  }
}

export function invalidAnswer(
  http: ProviderHttp,
  call: ProviderCall,
  why: string,
  status: number | null = null,
) {
  return new ProviderError({
    provider: http.provider,
    model: call.model,
    upstreamStatus: status,
    providerErrorType: 'invalid_response',
    retryable: false,
    message: `the provider's answer is not its API: ${why}`,
  });
}

/**
 * Sends one request and answers its body as it arrives (audio): the promise settles with the provider's first
 * bytes in hand, so a failure before them can still be retried or failed over. The timeout bounds the wait for
 * them and then every silence between two reads (not the time the caller holds a chunk). Ending the iteration
 * early, or the caller's signal, cancels the upstream request.
 */
export async function sendForBytes(
  http: ProviderHttp,
  call: ProviderCall,
  request: ProviderRequest,
): Promise<{ contentType: string; body: AsyncIterable<Uint8Array> }> {
  const guard = new CallGuard(call);
  let reader: AsyncIterator<Uint8Array>;
  let first: IteratorResult<Uint8Array>;
  let contentType: string;
  try {
    const res = await sendOk(http, call, request, guard);
    contentType = res.header('content-type') ?? '';
    reader = res.chunks();
    first = await reader.next();
    if (first.done) throw invalidAnswer(http, call, 'an empty body', res.status);
  } catch (err) {
    guard.dispose(true);
    throw translate(http, call, guard, err, false);
  }
  guard.pause();
  async function* body(): AsyncGenerator<Uint8Array> {
    let finished = false;
    try {
      for (let next = first; !next.done; next = await reader.next()) {
        guard.pause();
        yield next.value;
        guard.arm();
      }
      finished = true;
    } catch (err) {
      throw translate(http, call, guard, err, true);
    } finally {
      guard.dispose(!finished);
    }
  }
  return { contentType, body: body() };
}

/** How long the end of a body may lag behind its last event before the connection is dropped. */
const DRAIN_MS = 250;

/**
 * Reads what follows the last event (normally just the end of the body, already on its way) so the
 * connection goes back to the pool for the next call instead of being torn down.
 */
async function drain(reader: AsyncIterator<Uint8Array>, controller: Cancellation): Promise<void> {
  const cap = setTimeout(
    () => controller.abort(new Error('stream did not end after its last event')),
    DRAIN_MS,
  );
  try {
    for (;;) if ((await reader.next()).done) break;
  } catch {
    // the connection is dropped instead; nothing was lost
  } finally {
    clearTimeout(cap);
  }
}

/**
 * Sends one request and yields its server-sent events, up to and including the one `isLast` names.
 * The timeout bounds the wait for the first bytes and then every silence in between. Ending the
 * iteration early cancels the upstream request.
 */
export async function* sendForEvents(
  http: ProviderHttp,
  call: ProviderCall,
  request: ProviderRequest,
  isLast: (event: SseEvent) => boolean,
): AsyncGenerator<SseEvent> {
  const guard = new CallGuard(call);
  let yielded = false;
  let finished = false;
  let rest: AsyncIterator<Uint8Array> | undefined;
  try {
    const res = await sendOk(http, call, request, guard);
    const type = res.header('content-type') ?? '';
    if (!type.includes('text/event-stream')) {
      await res.cancel();
      throw invalidAnswer(
        http,
        call,
        `expected an event stream, got ${type || 'no content type'}`,
        res.status,
      );
    }
    const reader = res.chunks();
    const parser = new SseParser();
    for (;;) {
      const { done, value } = await reader.next();
      const events = done ? parser.end() : parser.push(value);
      for (const event of events) {
        guard.pause();
        yielded = true;
        if (isLast(event)) {
          finished = true;
          rest = reader;
          yield event;
          return;
        }
        yield event;
      }
      if (done) break;
      guard.arm();
    }
    finished = true;
  } catch (err) {
    if (err instanceof SseLineTooLong) throw invalidAnswer(http, call, err.message);
    throw translate(http, call, guard, err, yielded);
  } finally {
    guard.dispose(!finished);
    if (rest) await drain(rest, guard.controller);
  }
}
