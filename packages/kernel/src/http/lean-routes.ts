import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import type { Principal } from '@platform/contracts';
import type { RequestHandler } from 'express';
import type { Logger } from '../logger';
import { requestContext } from '../request-context';
import { sendErrorEnvelope, sendJson } from './error-middleware';
import type { HttpMetrics } from './metrics';
import { resolveRequestId } from './request-id';

/** What a lean route's handler receives: node's request, with the request id and the edge's principal. */
export interface LeanRequest extends IncomingMessage {
  id: string;
  principal?: Principal | null;
}

/**
 * A `GET` route served without express (docs/decisions/0076): a hot read that needs no body, no path
 * parameters and none of express's request or response helpers. It is mounted in the express router
 * too (first, right after the common middleware), so both ways run the same steps and answer the same.
 */
export interface LeanRoute {
  /** the exact path; any other spelling (case, trailing slash) goes through express */
  path: string;
  /** the JSON body of the 200 answer; throws (an AppError) for the error envelope */
  handle(req: LeanRequest): unknown;
}

interface LeanSteps {
  /** the express app, for every request a lean route does not take */
  app: RequestListener;
  routes: LeanRoute[];
  metrics: HttpMetrics;
  /** the service's `before` handlers; with lean routes they may use node's request and response only */
  before: RequestHandler[];
  logger: Logger;
}

/** The route as express mounts it: the same handler, answered with res.json, errors to the error middleware. */
export const expressLeanHandler =
  (route: LeanRoute): RequestHandler =>
  async (req, res) => {
    res.json(await route.handle(req as unknown as LeanRequest));
  };

/**
 * Requests that carry a body (even an empty one) take the express way, where the body parser runs; so
 * do conditional ones, which express may answer 304.
 */
const needsExpress = ({ headers }: IncomingMessage) =>
  headers['content-length'] !== undefined ||
  headers['transfer-encoding'] !== undefined ||
  headers['if-none-match'] !== undefined ||
  headers['if-modified-since'] !== undefined;

/**
 * The service's request listener: `GET` of a lean route's exact path is answered here, through the
 * same common steps as the express stack (request id and its logging context, `cache-control: no-store`,
 * metrics, the `before` handlers, the one error envelope) but without express's per-request work
 * (prototype switching, a walk through every mounted layer, body parsing). Everything else is express's.
 */
export function leanListener(steps: LeanSteps): RequestListener {
  const { app, metrics, before, logger } = steps;
  const byPath = new Map(steps.routes.map((r) => [r.path, r]));

  const fail = (req: LeanRequest, res: ServerResponse, err: unknown) =>
    sendErrorEnvelope(res, err, req.id, logger);

  const handle = (route: LeanRoute, req: LeanRequest, res: ServerResponse) => {
    res.setHeader('cache-control', 'no-store');
    metrics.track(req, res, route.path);
    let step = 0;
    const next = (err?: unknown): void => {
      if (err) {
        fail(req, res, err);
        return;
      }
      const handler = before[step++];
      if (handler) {
        try {
          // as express 5 does: a handler's rejected promise is its error
          const returned: unknown = handler(req as never, res as never, next);
          if (returned instanceof Promise) returned.catch((thrown) => fail(req, res, thrown));
        } catch (thrown) {
          fail(req, res, thrown);
        }
        return;
      }
      new Promise((resolve) => resolve(route.handle(req))).then(
        (body) => sendJson(res, 200, body),
        (thrown) => fail(req, res, thrown),
      );
    };
    next();
  };

  const listener: RequestListener = (req, res) => {
    const q = req.url?.indexOf('?') ?? -1;
    const route =
      req.method === 'GET' && !needsExpress(req)
        ? byPath.get(q === -1 ? (req.url ?? '') : req.url!.slice(0, q))
        : undefined;
    if (!route) return app(req, res);
    const lean = req as LeanRequest;
    const id = resolveRequestId(req.headers['x-request-id']);
    lean.id = id;
    req.headers['x-request-id'] = id;
    res.setHeader('x-request-id', id);
    requestContext.run({ requestId: id }, handle, route, lean, res);
  };
  // for route introspection (kernel http/openapi.ts mountedRoutes)
  return Object.assign(listener, { expressApp: app });
}
