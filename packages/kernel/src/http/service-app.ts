import type { RequestListener } from 'node:http';
import express, { type Express, type Router } from 'express';
import { MethodNotAllowed } from '../errors';
import type { Logger } from '../logger';
import { createAdminHandler, type Readiness } from './admin-server';
import { registerDependencyGauge } from './dependency-metrics';
import { errorMiddleware, notFoundHandler } from './error-middleware';
import { compileTrustProxy } from './forwarding';
import { markSuspectJson, refuseSuspectJson } from './json-body-guards';
import { expressLeanHandler, type LeanRoute, leanListener } from './lean-routes';
import { type ListenOptions, noteListenOptions } from './listen-options';
import { createHttpMetrics, type HttpMetrics, LISTEN_ROUTE } from './metrics';
import { requestId } from './request-id';
import { expressMessages } from './server-messages';

export interface ServiceAppOptions {
  name: string;
  logger: Logger;
  /** largest JSON body accepted (bytes or a string such as '1mb') */
  bodyLimit?: number | string;
  /** the checks behind the admin listener's /readyz */
  readiness?: Readiness;
  metrics?: HttpMetrics;
  /** TRUST_PROXY: whose X-Forwarded-* the app believes (default: loopback and private ranges, i.e. the edge) */
  trustProxy?: string;
  /** mounts the service's own routes (after the common middleware, before the 404 and error handlers) */
  routes: (router: Router) => void;
  /** runs before body parsing (e.g. a principal check), after request id and metrics */
  before?: express.RequestHandler[];
  /**
   * hot `GET` routes answered without express's per-request work (docs/decisions/0076); they need the
   * service to listen with `app.listener`, and its `before` handlers to use node's request and response only
   */
  leanRoutes?: LeanRoute[];
}

/**
 * The public app and, apart, the admin listener (/healthz, /readyz, /metrics) for ADMIN_PORT.
 * `listener` is what a service listens with: the lean routes, then the app for everything else; `listen`
 * gives the server of either the request and response classes express wants (server-messages.ts).
 */
export type ServiceApp = Express & { admin: RequestListener; listener: RequestListener };

/** Services sit behind the edge: by default they believe forwarding headers from loopback and private ranges only. */
export const SERVICE_TRUST_PROXY = 'loopback, linklocal, uniquelocal';

/**
 * The common shape of every service: request id and logging context, metrics, JSON body parsing with
 * limits, the service's routes, then 404 and the one error middleware. /healthz, /readyz and /metrics
 * are not on this app: they are on `app.admin`, served on the admin port. It never listens; main.ts
 * or a test does.
 */
export function createServiceApp(options: ServiceAppOptions): ServiceApp {
  const app = express() as ServiceApp;
  app.disable('x-powered-by');
  app.set('etag', false);
  // One trust rule for req.ip, req.protocol and forwardedViewOf (kernel http/forwarding.ts).
  app.set('trust proxy', compileTrustProxy(options.trustProxy ?? SERVICE_TRUST_PROXY));
  const metrics = options.metrics ?? createHttpMetrics(options.name, false);
  app.admin = createAdminHandler({
    name: options.name,
    readiness: options.readiness ?? {},
    metrics: metrics.registry,
  });
  registerDependencyGauge(metrics.registry, options.readiness ?? {});

  app.use(requestId());
  // API answers carry identities and secrets: nothing is cached unless a route says so (JWKS, OpenAPI).
  app.use((_req, res, next) => {
    res.setHeader('cache-control', 'no-store');
    next();
  });
  app.use(metrics.middleware);
  for (const handler of options.before ?? []) app.use(handler);

  const router = express.Router();
  // in the router, so that the error handler a service mounts on a path (its own error shape) answers a body
  // that does not parse or is refused too
  router.use(
    express.json({
      limit: options.bodyLimit ?? '1mb',
      strict: true,
      type: ['application/json', 'application/*+json'],
      verify: markSuspectJson,
    }),
    refuseSuspectJson,
  );
  const routes = recordRoutes(router);
  const leanRoutes = options.leanRoutes ?? [];
  for (const route of leanRoutes) router.get(route.path, expressLeanHandler(route));
  options.routes(router);
  answerOtherMethods(router, routes);
  app.use(router);
  app.use(notFoundHandler());
  app.use(errorMiddleware(options.logger));
  app.listener = leanRoutes.length
    ? leanListener({
        app,
        routes: leanRoutes,
        metrics,
        before: options.before ?? [],
        logger: options.logger,
      })
    : app;
  // a server listening with either builds requests and responses that express need not re-prototype, and counts the
  // answers it writes itself (no Host or several, CONNECT, what Node cannot read) as the app's own
  const listenOptions: ListenOptions = {
    messages: expressMessages(app),
    observe: ({ method, status, seconds }) => metrics.observe(method, LISTEN_ROUTE, status, seconds),
  };
  noteListenOptions(app, listenOptions);
  noteListenOptions(app.listener, listenOptions);
  return app;
}

/** The routes made on `router` from now on, by path (`router.get(path, …)` and the like all go through `route`). */
function recordRoutes(router: express.Router): Map<string, express.IRoute[]> {
  const byPath = new Map<string, express.IRoute[]>();
  const route = router.route.bind(router);
  router.route = ((path: string) => {
    const made = route(path);
    if (typeof path === 'string') byPath.set(path, [...(byPath.get(path) ?? []), made]);
    return made;
  }) as typeof router.route;
  return byPath;
}

const METHOD_ORDER = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'];
const methodRank = (method: string) => {
  const rank = METHOD_ORDER.indexOf(method);
  return rank === -1 ? METHOD_ORDER.length : rank;
};

/**
 * A method no route of a path takes answers 405 in the envelope with `Allow` (RFC 9110 15.5.6), rather than the
 * 404 that says the path does not exist. Mounted after every route, so a path's own routes always come first.
 */
function answerOtherMethods(router: express.Router, byPath: Map<string, express.IRoute[]>): void {
  for (const [path, routes] of byPath) {
    const handled = routes.map((route) => (route as unknown as { methods: Record<string, boolean> }).methods);
    if (handled.some((methods) => methods._all)) continue; // a route of the path takes every method
    const methods = new Set(handled.flatMap((m) => Object.keys(m).map((method) => method.toUpperCase())));
    if (methods.has('GET')) methods.add('HEAD');
    const allowed = [...methods].sort((a, b) => methodRank(a) - methodRank(b));
    router.all(path, (req, res, next) => {
      // OPTIONS is the router's own answer (its Allow), or CORS's
      if (req.method === 'OPTIONS') return next();
      res.setHeader('allow', allowed.join(', '));
      next(new MethodNotAllowed(req.method, allowed));
    });
  }
}
