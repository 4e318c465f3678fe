import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Request, RequestHandler } from 'express';
import { collectDefaultMetrics, Registry } from 'prom-client';
import { type CounterSeries, counterFamily, type HistogramSeries, histogramFamily } from './plain-metrics';

export interface HttpMetrics {
  /** rendered by the admin listener's /metrics */
  registry: Registry;
  middleware: RequestHandler;
  /** counts one request answered outside express (a lean route), labelled with its route */
  track(req: IncomingMessage, res: ServerResponse, route: string): void;
  /** counts one answer already written (one `listen` wrote itself) */
  observe: ObserveRequest;
}

/** The route template, never the raw path, so label cardinality stays bounded. */
export function routeLabel(req: Request): string {
  const route = req.route?.path;
  return typeof route === 'string' ? `${req.baseUrl}${route}` : 'unmatched';
}

const KNOWN_METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);
const BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5];

/** Counts one answered request; `route` is a template or a route-table name, never a raw path. */
export type ObserveRequest = (
  method: string | undefined,
  route: string,
  status: number,
  seconds: number,
) => void;

/**
 * `http_requests_total` and `http_request_duration_seconds` by method, route and status, in plain numbers bound
 * once per (method, route, status): a request costs one map lookup and a few additions, where prom-client's
 * `inc(labels)` and `observe(labels)` would hash a label object twice.
 */
export function requestMetrics(registry: Registry): ObserveRequest {
  const counts = counterFamily(
    registry,
    'http_requests_total',
    'HTTP requests answered, by method, route and status',
  );
  const durations = histogramFamily(
    registry,
    'http_request_duration_seconds',
    'HTTP request latency, by method, route and status',
    BUCKETS,
  );
  const bound = new Map<string, { count: CounterSeries; duration: HistogramSeries }>();
  return (method, route, status, seconds) => {
    const m = method !== undefined && KNOWN_METHODS.has(method) ? method : 'OTHER';
    const key = `${m} ${status} ${route}`;
    let series = bound.get(key);
    if (!series) {
      const labels = { method: m, route, status: String(status) };
      series = { count: counts.series(labels), duration: durations.series(labels) };
      bound.set(key, series);
    }
    series.count.value++;
    series.duration.observe(seconds);
  };
}

/** Prometheus request count and latency by route and status; one registry per app, no globals. */
export function createHttpMetrics(service: string, withDefaults = true): HttpMetrics {
  const registry = new Registry();
  registry.setDefaultLabels({ service });
  if (withDefaults) collectDefaultMetrics({ register: registry });
  const observe = requestMetrics(registry);
  const middleware: RequestHandler = (req, res, next) => {
    const start = performance.now();
    res.once('finish', () =>
      observe(req.method, routeLabel(req), res.statusCode, (performance.now() - start) / 1e3),
    );
    next();
  };
  const track = (req: IncomingMessage, res: ServerResponse, route: string) => {
    const start = performance.now();
    res.once('finish', () => observe(req.method, route, res.statusCode, (performance.now() - start) / 1e3));
  };
  return { registry, middleware, track, observe };
}

/**
 * An answer `listen` wrote itself, before its handler or instead of it: a request refused (400 without Host or with
 * several, 405 CONNECT) or one Node could not read (400, 408, 413, 431), whose method and target are then unknown.
 */
export interface ListenAnswer {
  method?: string;
  /** the request target as sent */
  url?: string;
  status: number;
  requestId: string;
  /** from the moment the server had the request (or its failure) to the answer written */
  seconds: number;
}

/** Counts (and may log) an answer `listen` wrote itself, as the handler counts its own. */
export type ObserveListenAnswer = (answer: ListenAnswer) => void;

/** The route label of the answers `listen` writes itself (`http_requests_total{route}`). */
export const LISTEN_ROUTE = 'listen:refused';
