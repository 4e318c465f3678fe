import type { ServerResponse } from 'node:http';
import { envelopeOf, sendJson } from '@platform/kernel';

/** Answers an error in the platform envelope (kernel `envelopeOf`), with Retry-After when it has one. */
export function sendError(res: ServerResponse, err: unknown, requestId: string | undefined): void {
  const body = envelopeOf(err, requestId);
  if (body.retryAfter !== undefined) res.setHeader('retry-after', String(body.retryAfter));
  sendJson(res, body.status, body);
}
