import { InvalidInput } from '@platform/kernel';
import { z } from 'zod';

/** An ISO 8601 date-time with an offset (`Z` or `+02:00`). */
export const IsoDateTime = z.iso.datetime({ offset: true });

export const Name = z.string().trim().min(1).max(100).meta({ description: 'a label' });

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
