import { z } from 'zod';
import { isPlainObject } from './model-entry';

/** What is wrong with a catalogue entry: the member it lies in (its path) and why. */
export interface EntryIssue {
  path: string[];
  message: string;
}

/** Issues as answers give them: `field` is the member's dotted path, `entry` for the whole entry. */
export const fieldsOf = (issues: EntryIssue[]) =>
  issues.map((i) => ({ field: i.path.length ? i.path.join('.') : 'entry', message: i.message }));

/** an issue's place and reason, to find it again in another validation */
export const issueKey = (issue: EntryIssue) => JSON.stringify([issue.path, issue.message]);

/**
 * The schema's issues; an unknown member is one issue of its own, so that a member the schema has dropped since it
 * was stored is told apart from one a request adds.
 */
export const schemaIssues = (error: z.ZodError): EntryIssue[] =>
  error.issues.flatMap((i) => {
    const path = i.path.map(String);
    return i.code === 'unrecognized_keys'
      ? i.keys.map((key) => ({ path: [...path, key], message: `Unrecognized key: "${key}"` }))
      : [{ path, message: i.message }];
  });

/**
 * Whether a merge patch writes the member at `path` of `stored`: the member itself, one inside it, or one around it.
 * An object merged into an object writes its own members alone; over anything else it replaces the value whole,
 * even an empty one (`{rank: {}}` over a stored `rank: 3`).
 */
export function writes(patch: unknown, stored: unknown, path: string[]): boolean {
  if (!isPlainObject(patch) || !isPlainObject(stored)) return true;
  const [key, ...rest] = path;
  if (key === undefined) return Object.keys(patch).length > 0;
  return Object.hasOwn(patch, key) && writes(patch[key], stored[key], rest);
}

/**
 * `schema` taking whatever lies at `path` as it is; everything else is parsed as before, defaults applied. A path
 * into an array, a record or a union takes that whole value as it is.
 */
export function acceptingAsIs(schema: z.ZodType, path: string[]): z.ZodType {
  const [key, ...rest] = path;
  if (key === undefined) return z.unknown();
  if (schema instanceof z.ZodOptional) return acceptingAsIs(schema.unwrap() as z.ZodType, path).optional();
  if (schema instanceof z.ZodDefault)
    return acceptingAsIs(schema.unwrap() as z.ZodType, path).default(schema.def.defaultValue);
  if (schema instanceof z.ZodObject)
    return (schema as z.ZodObject).safeExtend({
      [key]: acceptingAsIs((schema.shape[key] as z.ZodType | undefined) ?? z.unknown(), rest),
    });
  return z.unknown();
}
