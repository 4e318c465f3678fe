import type { ServerResponse } from 'node:http';
import { envelopeOf, sendJson } from '@platform/kernel';
import { setErrorCors } from './cross-origin-errors';

/**
 * Answers an error in the platform envelope (kernel `envelopeOf`), with Retry-After when it has one, and the
 * Bearer challenge of RFC 6750 on a missing or refused credential (401) and on a token short of a scope (403), and
 * CORS fields where a page of another origin may read it (cross-origin-errors.ts).
 */
export function sendError(res: ServerResponse, err: unknown, requestId: string | undefined): void {
  const body = envelopeOf(err, requestId);
  setErrorCors(res);
  if (body.retryAfter !== undefined) res.setHeader('retry-after', String(body.retryAfter));
  if (body.status === 401) res.setHeader('www-authenticate', 'Bearer realm="platform"');
  else if (body.code === 'INSUFFICIENT_SCOPE')
    res.setHeader(
      'www-authenticate',
      `Bearer realm="platform", error="insufficient_scope", scope="${String((body.details as { scope?: unknown } | undefined)?.scope ?? '')}"`,
    );
  sendJson(res, body.status, body);
}
