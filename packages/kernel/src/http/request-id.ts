import { randomUUID } from 'node:crypto';
import type { RequestHandler } from 'express';
import { requestContext } from '../request-context';

const ACCEPTABLE_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** Accepts a well-formed client `x-request-id` or makes one; a malformed one is replaced, not echoed. */
export function resolveRequestId(sent: string | string[] | undefined): string {
  return typeof sent === 'string' && ACCEPTABLE_ID.test(sent) ? sent : randomUUID();
}

/** Sets `req.id`, answers it in `x-request-id`, and runs the rest of the request inside its context. */
export const requestId = (): RequestHandler => (req, res, next) => {
  const id = resolveRequestId(req.headers['x-request-id']);
  req.id = id;
  req.headers['x-request-id'] = id;
  res.setHeader('x-request-id', id);
  requestContext.run({ requestId: id }, next);
};
