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
type Reported = { path: PropertyKey[]; message: string };

/** how far into the value a branch's issues got (a loop: a branch may list one issue per item of a long array) */
function depthOf(issues: readonly Reported[]): number {
  let depth = 0;
  for (const issue of issues) if (issue.path.length > depth) depth = issue.path.length;
  return depth;
}

/**
 * Whether the first path is further along the value than the second: at a later item of the same array, or inside
 * the place the second names. 0 when neither is (the same place, or two members of an object, which have no order).
 */
function further(a: readonly PropertyKey[], b: readonly PropertyKey[]): -1 | 0 | 1 {
  for (let i = 0; i < Math.min(a.length, b.length); i++) {
    const [x, y] = [a[i], b[i]];
    if (x === y) continue;
    return typeof x === 'number' && typeof y === 'number' ? (x > y ? 1 : -1) : 0;
  }
  return a.length === b.length ? 0 : a.length > b.length ? 1 : -1;
}

/**
 * The branch of a union that took the value: the one whose issues go deepest into it, and when several go as deep,
 * the one that accepted most of it before its first issue (`['a', 7]` against `string[] | number[]`: the strings,
 * refused at item 1). Undefined when that is a guess (`[{}]` against the same, or two objects each refused at a
 * different member): the union's own message says it then.
 */
function takenBranch(branches: readonly Reported[][], at: number): Reported[] | undefined {
  const depths = branches.map((branch) => depthOf(branch) - at);
  const deepest = Math.max(...depths);
  if (deepest <= 0) return undefined;
  const candidates = branches.filter((_, i) => depths[i] === deepest);
  return candidates.find((branch) =>
    candidates.every((other) => other === branch || further(branch[0]!.path, other[0]!.path) === 1),
  );
}

/**
 * An issue as the caller reads it. A value none of a union's shapes took is the union's own message ("Invalid input",
 * or the one its schema gives); when one shape took the value in (`input: [{id: 42}]` against `string | item[]`),
 * that shape's issues are the ones that say what is wrong, and where. A union inside a branch is read the same way
 * before the branch is measured.
 */
function reported(issue: Issue, prefix: readonly PropertyKey[]): Reported[] {
  const path = [...prefix, ...issue.path];
  if (issue.code === 'invalid_union' && issue.errors.length > 0) {
    const branches = issue.errors.map((branch) => branch.flatMap((inner) => reported(inner, path)));
    const taken = takenBranch(branches, path.length);
    if (taken) return taken;
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
