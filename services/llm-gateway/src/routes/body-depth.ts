import { InvalidInput } from '@platform/kernel';
import type { RequestHandler } from 'express';

/**
 * How deeply a JSON body may nest: far deeper than any request of the gateway's APIs (a tool's JSON schema, content
 * parts, metadata), far shallower than what serialising it again can take. JSON.parse reads a body nested 100,000
 * deep; JSON.stringify, sending it to a provider or writing it to the store, overflows the stack at a few thousand
 * levels, which answered a 500 (and, on inference, a usage event blaming the provider).
 */
export const MAX_BODY_DEPTH = 128;

/** Whether `value` nests objects and arrays more than `max` levels deep (read without recursion). */
export function nestedDeeperThan(value: unknown, max: number): boolean {
  const values: unknown[] = [value];
  const depths: number[] = [1];
  const visit = (child: unknown, depth: number) => {
    if (typeof child === 'object' && child !== null) {
      values.push(child);
      depths.push(depth);
    }
  };
  while (values.length > 0) {
    const current = values.pop() as Record<string, unknown>;
    const depth = depths.pop()!;
    if (depth > max) return true;
    if (Array.isArray(current)) for (const child of current) visit(child, depth + 1);
    // a parsed body's members are all its own: no prototype to walk
    else for (const key in current) visit(current[key], depth + 1);
  }
  return false;
}

/** Refuses a JSON body nested deeper than `MAX_BODY_DEPTH` with 400 INVALID_BODY, before any route reads it. */
export const refuseDeepBodies: RequestHandler = (req, _res, next) => {
  const body: unknown = req.body;
  if (typeof body === 'object' && body !== null && nestedDeeperThan(body, MAX_BODY_DEPTH))
    throw new InvalidInput(`Invalid body: nested more than ${MAX_BODY_DEPTH} levels deep`, {
      code: 'INVALID_BODY',
      details: { issues: [{ field: 'body', message: `nested more than ${MAX_BODY_DEPTH} levels deep` }] },
    });
  next();
};
