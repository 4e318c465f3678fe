import type { ErrorRequestHandler, RequestHandler } from 'express';
import { NotFound } from '../errors';
import type { Logger } from '../logger';
import { envelopeOf } from './envelope';

/** Unknown routes answer 404 in the envelope. */
export const notFoundHandler = (): RequestHandler => (req, _res, next) => {
  next(new NotFound(`No route for ${req.method} ${req.path}`, { error: 'RouteNotFound' }));
};

/** The one place typed errors become HTTP answers. */
export const errorMiddleware =
  (logger: Logger): ErrorRequestHandler =>
  (err, req, res, _next) => {
    const body = envelopeOf(err, req.id);
    if (body.status >= 500) logger.error({ err }, 'request failed');
    if (res.headersSent) {
      res.destroy();
      return;
    }
    if (body.retryAfter !== undefined) res.setHeader('retry-after', String(body.retryAfter));
    res.status(body.status).json(body);
  };
