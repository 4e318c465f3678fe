import { InvalidInput } from '@platform/kernel';
import { z } from 'zod';

/** An ISO 8601 date-time with an offset (`Z` or `+02:00`). */
export const IsoDateTime = z.iso.datetime({ offset: true });

/**
 * a control character (C0, DEL, C1); a bidirectional embedding, override or isolate (U+202A-U+202E, U+2066-U+2069),
 * which reorders the text shown after it, so that a name could make a page, a list or a log line read otherwise; or
 * half of a surrogate pair without its other half (`u`: pairs are one)
 */
export const NOT_TEXT = /[\p{Cc}\p{Cs}\u202A-\u202E\u2066-\u2069]/u;

/** what draws nothing: spaces, default-ignorable characters (zero-width ones, fillers, tags), the blank braille cell */
const INVISIBLE = /[\p{White_Space}\p{Default_Ignorable_Code_Point}\u2800]/gu;

/** Whether `s` shows anything: a name of zero-width spaces alone is as empty as no name. */
export const showsSomething = (s: string): boolean => s.replace(INVISIBLE, '') !== '';

/** NOT_TEXT but for the tab and line breaks of a text of several lines */
const NOT_FREE_TEXT = new RegExp(`(?![\\t\\n\\r])${NOT_TEXT.source}`, 'u');

const NOT_TEXT_MESSAGE = 'holds a control character, a bidirectional override or a lone surrogate';

/** trimmed, NFC, at most `max` characters, none of `notText` */
const text = (max: number, notText: RegExp) =>
  z
    .string()
    .trim()
    .normalize('NFC')
    .max(max)
    .refine((s) => !notText.test(s), NOT_TEXT_MESSAGE);

/**
 * Free text a person writes (a description): text as `displayName` takes it, but possibly empty and of several lines
 * (tabs and line breaks kept).
 */
export const freeText = (max: number) => text(max, NOT_FREE_TEXT);

/**
 * A name a person gives and reads back (organizations, workspaces, tokens, keys, people): trimmed, in Unicode's
 * composed form (NFC: `é` typed as one character or as `e` and an accent is one name), 1 to `max` characters, and
 * text: no control character, which a page or a log line would show as nothing or break on, no bidirectional override,
 * which would reorder what is shown after the name, and no lone surrogate, which is not text at all (a MongoDB
 * document would keep U+FFFD in its place). It shows something: zero-width and other invisible characters alone are
 * no name.
 */
export const displayName = (max: number) =>
  text(max, NOT_TEXT)
    .min(1, { abort: true })
    .refine(showsSomething, 'shows nothing: only spaces or invisible characters');

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
