import { CountedLlmCompletion, ORG_SLUG_PATTERN } from '@platform/contracts';
import { costToMicros } from '../domain/gauges';

/**
 * A user or key id names counters URI-encoded, and a lone surrogate has no URI encoding: counting such an event
 * would throw for its whole batch, again at every delivery, and hold back every event delivered with it.
 */
const LONE_SURROGATE = /\p{Surrogate}/u;

/** A valid event, reduced to what counting needs, with the time it counts at. */
export interface CountableEvent {
  id: string;
  orgSlug: string;
  userId: string | null;
  /** the organization API key that made the request (its usage is counted apart, for its limits) */
  apiKeyId: string | null;
  model: string;
  provider: string;
  occurredAt: Date;
  /** occurredAt, or the arrival time when occurredAt lies in the future (a gateway clock ahead) */
  countedAt: Date;
  receivedAt: Date;
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  cost_micros: number;
}

export type Intake =
  | { ok: true; event: CountableEvent; clockAhead: boolean }
  | { ok: false; reason: string; details?: unknown; eventId?: string };

/**
 * Reads one `analytics.llm.completion` message. An event counts in the minute and the month of its
 * `occurredAt` (when the completion happened, not when llm-quota heard of it), so usage delivered
 * late after an outage lands in the month it belongs to. An `occurredAt` in the future is taken as
 * the arrival time, so a gateway whose clock runs ahead cannot fill windows that have not begun; one
 * older than `maxAgeMs` is refused (dead letter), so that closed months stay closed and the
 * duplicate-id memory, which outlives that age past the later of the event's arrival and its date (an
 * event dated ahead is not too old until its own date plus that age), is always there to refuse a replay.
 */
export function readCompletionEvent(raw: string, arrival: Date, maxAgeMs: number): Intake {
  let json: unknown;
  try {
    json = JSON.parse(raw);
  } catch {
    return { ok: false, reason: 'malformed_json' };
  }
  const eventId =
    json && typeof json === 'object' && typeof (json as { id?: unknown }).id === 'string'
      ? (json as { id: string }).id
      : undefined;
  const parsed = CountedLlmCompletion.safeParse(json);
  if (!parsed.success) {
    const issues = parsed.error.issues.map((i) => ({
      field: i.path.join('.') || '(event)',
      message: i.message,
    }));
    return { ok: false, reason: 'invalid_event', details: { issues }, eventId };
  }
  const event = parsed.data;
  if (!ORG_SLUG_PATTERN.test(event.orgSlug)) {
    return {
      ok: false,
      reason: 'invalid_event',
      details: { issues: [{ field: 'orgSlug', message: 'not an organization slug' }] },
      eventId,
    };
  }
  for (const field of ['userId', 'apiKeyId'] as const) {
    const id = event[field];
    if (id !== undefined && LONE_SURROGATE.test(id)) {
      return {
        ok: false,
        reason: 'invalid_event',
        details: { issues: [{ field, message: 'not well-formed Unicode (a lone surrogate)' }] },
        eventId,
      };
    }
  }
  const costMicros = costToMicros(event.cost);
  if (!Number.isSafeInteger(costMicros)) {
    return {
      ok: false,
      reason: 'invalid_event',
      details: { issues: [{ field: 'cost', message: 'too large to be counted exactly' }] },
      eventId,
    };
  }
  const occurredAt = new Date(event.occurredAt);
  if (arrival.getTime() - occurredAt.getTime() > maxAgeMs) {
    return { ok: false, reason: 'too_old', details: { occurredAt: event.occurredAt }, eventId };
  }
  const clockAhead = occurredAt.getTime() > arrival.getTime();
  return {
    ok: true,
    clockAhead,
    event: {
      id: event.id,
      orgSlug: event.orgSlug,
      userId: event.userId ?? null,
      apiKeyId: event.apiKeyId ?? null,
      model: event.model,
      provider: event.provider,
      occurredAt,
      countedAt: clockAhead ? arrival : occurredAt,
      receivedAt: arrival,
      prompt_tokens: event.usage.prompt_tokens,
      completion_tokens: event.usage.completion_tokens,
      total_tokens: event.usage.total_tokens,
      cost_micros: costMicros,
    },
  };
}
