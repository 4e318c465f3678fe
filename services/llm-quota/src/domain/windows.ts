/**
 * Counting windows. Both are fixed, aligned and in UTC: a minute starts at second 0, a month at
 * 00:00 on its first day. A counter document is keyed by its window's start, so every instance
 * writing the same window writes the same document.
 */
export type WindowKind = 'minute' | 'month';

export function minuteStart(at: Date): Date {
  const ms = at.getTime();
  return new Date(ms - (((ms % 60_000) + 60_000) % 60_000));
}

export function monthStart(at: Date): Date {
  return new Date(Date.UTC(at.getUTCFullYear(), at.getUTCMonth(), 1));
}

export function nextMinuteStart(at: Date): Date {
  return new Date(minuteStart(at).getTime() + 60_000);
}

export function nextMonthStart(at: Date): Date {
  return new Date(Date.UTC(at.getUTCFullYear(), at.getUTCMonth() + 1, 1));
}

export const windowStart = (kind: WindowKind, at: Date): Date =>
  kind === 'minute' ? minuteStart(at) : monthStart(at);
export const windowEnd = (kind: WindowKind, at: Date): Date =>
  kind === 'minute' ? nextMinuteStart(at) : nextMonthStart(at);

/** `2025-01-31T23:59` for minutes, `2025-01` for months: readable ids that sort by time. */
export function windowLabel(kind: WindowKind, start: Date): string {
  const iso = start.toISOString();
  return kind === 'minute' ? iso.slice(0, 16) : iso.slice(0, 7);
}

/** Who a counter is about: the organization, one of its users, or one of its API keys. */
export type CounterScope =
  | { orgSlug: string; userId?: undefined; apiKeyId?: undefined }
  | { orgSlug: string; userId: string; apiKeyId?: undefined }
  | { orgSlug: string; userId?: undefined; apiKeyId: string };

/** what a gauge of the scope says it is about */
export const scopeName = (scope: CounterScope): 'org' | 'user' | 'api_key' =>
  scope.userId !== undefined ? 'user' : scope.apiKeyId !== undefined ? 'api_key' : 'org';

/**
 * The id of a counter document: `minute|2025-03-15T12:00|org|acme`, `month|2025-03|user|acme|u1`,
 * `month|2025-03|key|acme|k1`. Ids sort by window start within a kind. Parts are URI-encoded so that no org slug,
 * user id or key id can make two different counters share an id.
 */
export function counterId(scope: CounterScope, kind: WindowKind, start: Date): string {
  const who =
    scope.userId !== undefined
      ? `user|${enc(scope.orgSlug)}|${enc(scope.userId)}`
      : scope.apiKeyId !== undefined
        ? `key|${enc(scope.orgSlug)}|${enc(scope.apiKeyId)}`
        : `org|${enc(scope.orgSlug)}`;
  return `${kind}|${windowLabel(kind, start)}|${who}`;
}

/** The `_id` range of every counter of a kind whose window started before `before` (for retention). */
export function countersBefore(kind: WindowKind, before: Date): { $gte: string; $lt: string } {
  return { $gte: `${kind}|`, $lt: `${kind}|${windowLabel(kind, windowStart(kind, before))}` };
}

const enc = (part: string) => encodeURIComponent(part);
