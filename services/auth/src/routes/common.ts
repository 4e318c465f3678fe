import { InvalidInput } from '@platform/kernel';
import { z } from 'zod';

/** An ISO 8601 date-time with an offset (`Z` or `+02:00`). */
export const IsoDateTime = z.iso.datetime({ offset: true });

/** a control character (C0, DEL, C1), or half of a surrogate pair without its other half (`u`: pairs are one) */
export const NOT_TEXT = /[\p{Cc}\p{Cs}]/u;

/**
 * A name a person gives and reads back (organizations, workspaces, tokens, keys, people): trimmed, 1 to `max`
 * characters, and text: no control character, which a page or a log line would show as nothing or break on, and no
 * lone surrogate, which is not text at all (a MongoDB document would keep U+FFFD in its place).
 */
export const displayName = (max: number) =>
  z
    .string()
    .trim()
    .min(1)
    .max(max)
    .refine((s) => !NOT_TEXT.test(s), 'holds a control character or a lone surrogate');

export const Name = displayName(100).meta({ description: 'a label' });

/** A 400 naming one field, shaped like parseInput's. */
export function invalidField(field: string, message: string): InvalidInput {
  return new InvalidInput(`Invalid body: ${field}: ${message}`, {
    details: { issues: [{ field, message }] },
  });
}

/** An expiry must lie in the future and, when a bound is given, not beyond it. */
export function checkExpiry(
  field: string,
  value: string | null | undefined,
  now: Date,
  maxMs?: number,
): Date | null {
  if (value === null || value === undefined) return null;
  const at = new Date(value);
  if (at.getTime() <= now.getTime()) throw invalidField(field, 'must be in the future');
  if (maxMs !== undefined && at.getTime() - now.getTime() > maxMs) {
    throw invalidField(field, `must be at most ${Math.round(maxMs / 86_400_000)} days from now`);
  }
  return at;
}

export const iso = (d: Date | null): string | null => (d ? d.toISOString() : null);
