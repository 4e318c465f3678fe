import express, { type Express, type Router } from 'express';
import type { Logger } from '../logger';
import { errorMiddleware, notFoundHandler } from './error-middleware';
import { createHttpMetrics, type HttpMetrics } from './metrics';
import { requestId } from './request-id';

export type ReadinessCheck = () => Promise<void>;
/** A dependency reported by /readyz that does not make the service unready: requests are served without it. */
export interface ReportedCheck {
  check: ReadinessCheck;
  required: false;
}

export interface ServiceAppOptions {
  name: string;
  logger: Logger;
  /** largest JSON body accepted (bytes or a string such as '1mb') */
  bodyLimit?: number | string;
  /**
   * named checks behind /readyz; each throws when its dependency is not ready. Only what a request
   * cannot be served without makes the service unready; the others are `{check, required: false}`.
   */
  readiness?: Record<string, ReadinessCheck | ReportedCheck>;
  metrics?: HttpMetrics;
  /** mounts the service's own routes (after the common middleware, before the 404 and error handlers) */
  routes: (router: Router) => void;
  /** runs before body parsing (e.g. a principal check), after request id and metrics */
  before?: express.RequestHandler[];
}

/** Runs every readiness check; a map of name -> 'ok' or the failure message. */
export async function checkReadiness(checks: Record<string, ReadinessCheck | ReportedCheck>) {
  const results: Record<string, string> = {};
  let ready = true;
  await Promise.all(
    Object.entries(checks).map(async ([name, entry]) => {
      const required = typeof entry === 'function';
      try {
        await (required ? entry : entry.check)();
        results[name] = 'ok';
      } catch (err) {
        if (required) ready = false;
        const message = err instanceof Error ? err.message : String(err);
        results[name] = required ? message : `degraded: ${message}`;
      }
    }),
  );
  return { ready, checks: results };
}

/**
 * The common shape of every service: request id and logging context, metrics, JSON body parsing with
 * limits, /healthz, /readyz, /metrics, the service's routes, then 404 and the one error middleware.
 * It never listens; main.ts or a test does.
 */
export function createServiceApp(options: ServiceAppOptions): Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  app.set('trust proxy', 'loopback, linklocal, uniquelocal');
  const metrics = options.metrics ?? createHttpMetrics(options.name, false);

  app.use(requestId());
  app.use(metrics.middleware);
  app.get('/healthz', (_req, res) => {
    res.json({ status: 'ok', service: options.name });
  });
  app.get('/readyz', async (_req, res) => {
    const { ready, checks } = await checkReadiness(options.readiness ?? {});
    res.status(ready ? 200 : 503).json({ status: ready ? 'ready' : 'not_ready', checks });
  });
  app.get('/metrics', metrics.handler);
  for (const handler of options.before ?? []) app.use(handler);
  app.use(
    express.json({
      limit: options.bodyLimit ?? '1mb',
      strict: true,
      type: ['application/json', 'application/*+json'],
    }),
  );

  const router = express.Router();
  options.routes(router);
  app.use(router);
  app.use(notFoundHandler());
  app.use(errorMiddleware(options.logger));
  return app;
}
