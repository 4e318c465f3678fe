import { Forbidden } from '@platform/kernel';
import type { Request, RequestHandler, Response } from 'express';
import type { Assistants } from '../domain/assistants';
import type { AssistantDoc } from '../persistence/collections';

/** The routes a web page calls with an assistant's client token: Messages and the widget's config. */
const CORS_PATH = /^\/v1\/(?:messages|widget\/config)\/?$/i;
const ALLOWED_METHODS = 'GET, POST, OPTIONS';
const ALLOWED_HEADERS = 'authorization, content-type, x-request-id';
const EXPOSED_HEADERS = 'x-request-id, retry-after';
/** how long a browser may reuse a preflight answer */
const PREFLIGHT_MAX_AGE_SECONDS = 600;

/**
 * The `Origin` of a cross-origin browser request, or undefined for a same-origin one (the demo page
 * served here) and for a caller that is not a browser page. The edge forwards the public host and scheme.
 */
function crossOrigin(req: Request): string | undefined {
  const origin = req.headers.origin;
  if (typeof origin !== 'string' || origin === '') return undefined;
  if (req.headers['sec-fetch-site'] === 'same-origin') return undefined;
  const host = (req.get('x-forwarded-host') ?? req.get('host') ?? '').split(',')[0]!.trim();
  if (origin.toLowerCase() === `${req.protocol}://${host}`.toLowerCase()) return undefined;
  return origin;
}

const allowHeaders = (res: Response, origin: string) => {
  res.setHeader('access-control-allow-origin', origin);
  res.setHeader('access-control-expose-headers', EXPOSED_HEADERS);
};

/**
 * Answers CORS preflights of the client-token routes. A preflight carries no token, so it can only be
 * asked whether some assistant allows the origin; the request itself is then checked against its own
 * assistant by `allowOrigin`. An origin no assistant allows gets no CORS headers: the browser refuses.
 */
export function corsPreflight(assistants: Assistants): RequestHandler {
  return (req, res, next) => {
    if (!CORS_PATH.test(req.path)) return next();
    res.vary('Origin');
    if (req.method !== 'OPTIONS') return next();
    const origin = crossOrigin(req);
    if (!origin || !req.headers['access-control-request-method']) return next();
    assistants.originAllowedByAny(origin.toLowerCase()).then(
      (allowed) => {
        if (allowed) {
          allowHeaders(res, origin);
          res.setHeader('access-control-allow-methods', ALLOWED_METHODS);
          res.setHeader('access-control-allow-headers', ALLOWED_HEADERS);
          res.setHeader('access-control-max-age', String(PREFLIGHT_MAX_AGE_SECONDS));
        }
        res.status(204).end();
      },
      (err: unknown) => next(err),
    );
  };
}

/**
 * A cross-origin request to a client-token route: allowed (CORS headers set) when the assistant lists
 * the page's origin in `allowedOrigins`; otherwise 403 before anything is processed, without CORS headers.
 */
export function allowOrigin(req: Request, res: Response, assistant: AssistantDoc): void {
  const origin = crossOrigin(req);
  if (!origin) return;
  if (!(assistant.allowedOrigins ?? []).includes(origin.toLowerCase())) {
    throw new Forbidden(
      `Pages of ${origin} may not call this assistant: add the origin to its allowedOrigins (PATCH /v1/bots)`,
      { error: 'OriginNotAllowed' },
    );
  }
  allowHeaders(res, origin);
}
