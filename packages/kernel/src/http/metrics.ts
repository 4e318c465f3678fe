import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Request, RequestHandler } from 'express';
import { Counter, collectDefaultMetrics, Histogram, Registry } from 'prom-client';

export interface HttpMetrics {
  /** rendered by the admin listener's /metrics */
  registry: Registry;
  middleware: RequestHandler;
  /** counts one request answered outside express (a lean route), labelled with its route */
  track(req: IncomingMessage, res: ServerResponse, route: string): void;
}

/** The route template, never the raw path, so label cardinality stays bounded. */
export function routeLabel(req: Request): string {
  const route = req.route?.path;
  return typeof route === 'string' ? `${req.baseUrl}${route}` : 'unmatched';
}

/** Prometheus request count and latency by route and status; one registry per app, no globals. */
export function createHttpMetrics(service: string, withDefaults = true): HttpMetrics {
  const registry = new Registry();
  registry.setDefaultLabels({ service });
  if (withDefaults) collectDefaultMetrics({ register: registry });
  const requests = new Counter({
    name: 'http_requests_total',
    help: 'HTTP requests answered, by method, route and status',
    labelNames: ['method', 'route', 'status'] as const,
    registers: [registry],
  });
  const duration = new Histogram({
    name: 'http_request_duration_seconds',
    help: 'HTTP request latency, by method, route and status',
    labelNames: ['method', 'route', 'status'] as const,
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
    registers: [registry],
  });
  const observe = (method: string | undefined, route: string, status: number, start: number) => {
    const labels = { method, route, status: String(status) };
    requests.inc(labels);
    duration.observe(labels, (performance.now() - start) / 1e3);
  };
  const middleware: RequestHandler = (req, res, next) => {
    const start = performance.now();
    res.once('finish', () => observe(req.method, routeLabel(req), res.statusCode, start));
    next();
  };
  const track = (req: IncomingMessage, res: ServerResponse, route: string) => {
    const start = performance.now();
    res.once('finish', () => observe(req.method, route, res.statusCode, start));
  };
  return { registry, middleware, track };
}
