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

/** Parses input against a schema; failures become InvalidInput listing each offending field. */
export function parseInput<S extends z.ZodType>(schema: S, value: unknown, where = 'body'): z.infer<S> {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  const issues = result.error.issues.map((issue) => ({
    field: issue.path.length ? issue.path.join('.') : where,
    message: issue.message,
  }));
  throw new InvalidInput(`Invalid ${where}: ${issues.map((i) => `${i.field}: ${i.message}`).join('; ')}`, {
    code: 'INVALID_BODY',
    details: { issues },
  });
}
