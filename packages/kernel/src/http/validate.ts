import type { IncomingMessage } from 'node:http';
import type { z } from 'zod';
import { InvalidInput, UnsupportedMediaType } from '../errors';

/**
 * The request's JSON body, for a route that takes one; undefined when the request has no body. A body sent as
 * anything but JSON is refused with 415 rather than read as no body: curl's `-d` sends
 * application/x-www-form-urlencoded, and a merge patch read as `{}` answered 200 having changed nothing.
 */
export function jsonBody(req: IncomingMessage & { body?: unknown }): unknown {
  if (req.body !== undefined) return req.body;
  const length = req.headers['content-length'];
  if (req.headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0')) {
    const type = req.headers['content-type'];
    throw new UnsupportedMediaType(
      `Send the body as JSON, with Content-Type: application/json${type ? ` (not ${type.split(';')[0]})` : ''}`,
    );
  }
  return undefined;
}

type Issue = z.core.$ZodIssue;

/** how far into the value a branch's issues got: the one that matched its shape goes deepest */
const depthOf = (issues: readonly Issue[]) => Math.max(0, ...issues.map((i) => i.path.length));

/**
 * An issue as the caller reads it. A value none of a union's shapes took is "Invalid input" at the union; when one
 * shape took the value in and refused something inside it (`input: [{id: 42}]` against `string | item[]`), that
 * shape's issues are the ones that say what is wrong, and where.
 */
function reported(
  issue: Issue,
  prefix: readonly PropertyKey[],
): Array<{ path: PropertyKey[]; message: string }> {
  const path = [...prefix, ...issue.path];
  if (issue.code === 'invalid_union' && issue.errors.length > 0) {
    let best = issue.errors[0]!;
    for (const branch of issue.errors) if (depthOf(branch) > depthOf(best)) best = branch;
    if (depthOf(best) > 0) return best.flatMap((inner) => reported(inner, path));
  }
  return [{ path, message: issue.message }];
}

/** Parses input against a schema; failures become InvalidInput listing each offending field. */
export function parseInput<S extends z.ZodType>(schema: S, value: unknown, where = 'body'): z.infer<S> {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  const issues = result.error.issues
    .flatMap((issue) => reported(issue, []))
    .map((issue) => ({
      field: issue.path.length ? issue.path.join('.') : where,
      message: issue.message,
    }));
  throw new InvalidInput(`Invalid ${where}: ${issues.map((i) => `${i.field}: ${i.message}`).join('; ')}`, {
    code: 'INVALID_BODY',
    details: { issues },
  });
}
