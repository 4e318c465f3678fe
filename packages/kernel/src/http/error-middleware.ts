import type { ServerResponse } from 'node:http';
import type { ErrorRequestHandler, RequestHandler } from 'express';
import { NotFound } from '../errors';
import type { Logger } from '../logger';
import { envelopeOf, toAppError } from './envelope';

/** Unknown routes answer 404 in the envelope. */
export const notFoundHandler = (): RequestHandler => (req, _res, next) => {
  next(new NotFound(`No route for ${req.method} ${req.path}`, { error: 'RouteNotFound' }));
};

/**
 * The envelope of an error answer, its 5xx logged and its retry-after and x-should-retry set; null when
 * the answer had already started (the socket is destroyed: a half-sent answer must not look complete).
 */
function errorAnswer(err: unknown, requestId: string | undefined, res: ServerResponse, logger: Logger) {
  const body = envelopeOf(err, requestId);
  if (body.status >= 500) logger.error({ err }, 'request failed');
  if (res.headersSent) {
    res.destroy();
    return null;
  }
  if (body.retryAfter !== undefined) res.setHeader('retry-after', String(body.retryAfter));
  const retryable = toAppError(err)?.retryable;
  if (retryable !== undefined) res.setHeader('x-should-retry', String(retryable));
  return body;
}

/** The one place typed errors become HTTP answers. */
export const errorMiddleware =
  (logger: Logger): ErrorRequestHandler =>
  (err, req, res, _next) => {
    const body = errorAnswer(err, req.id, res, logger);
    if (body) res.status(body.status).json(body);
  };

/** A JSON answer written as express's `res.status(status).json(body)` writes it, without express. */
export function sendJson(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body) ?? '';
  res.statusCode = status;
  res.setHeader('Content-Type', 'application/json; charset=utf-8');
  res.setHeader('Content-Length', Buffer.byteLength(text));
  res.end(text);
}

/** The error middleware's answer, for requests served without express (kernel http/lean-routes.ts). */
export function sendErrorEnvelope(
  res: ServerResponse,
  err: unknown,
  requestId: string | undefined,
  logger: Logger,
): void {
  const body = errorAnswer(err, requestId, res, logger);
  if (body) sendJson(res, body.status, body);
}
