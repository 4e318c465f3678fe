import type { RequestListener } from 'node:http';
import {
  LISTEN_ROUTE,
  type Logger,
  noteListenOptions,
  type ObserveRequest,
  requestMetrics,
  scrapedGauge,
} from '@platform/kernel';
import { Counter, collectDefaultMetrics, Registry } from 'prom-client';
import { loggedPath } from './request-target';

export interface EdgeMetrics {
  registry: Registry;
  /** one answered request; `route` is a root or route-table name, never a raw path */
  observe: ObserveRequest;
  jwksFetchFailures: Counter;
}

/**
 * Prometheus metrics of the edge: request count and latency by method, route and status, cache and key
 * gauges read at scrape time, JWKS fetch failures, and process metrics.
 */
export function createEdgeMetrics(gauges: {
  jwksKeys: () => number;
  jwtCacheEntries: () => number;
  principalCacheEntries: () => number;
}): EdgeMetrics {
  const registry = new Registry();
  registry.setDefaultLabels({ service: 'edge' });
  collectDefaultMetrics({ register: registry });
  const observe = requestMetrics(registry);
  const jwksFetchFailures = new Counter({
    name: 'edge_jwks_fetch_failures_total',
    help: 'JWKS fetches that failed (cached keys kept verifying)',
    registers: [registry],
  });
  scrapedGauge(registry, 'edge_jwks_keys', 'signing keys the edge holds', gauges.jwksKeys);
  scrapedGauge(
    registry,
    'edge_jwt_cache_entries',
    'verified session JWTs remembered',
    gauges.jwtCacheEntries,
  );
  scrapedGauge(
    registry,
    'edge_principal_cache_entries',
    'resolved principals remembered',
    gauges.principalCacheEntries,
  );
  return { registry, jwksFetchFailures, observe };
}

/**
 * The answers the edge's server writes itself, before `handler` (kernel `listen`: a request without Host or with
 * several, CONNECT, one Node cannot read), counted and logged as the handler's own refusals are, by route
 * `listen:refused`.
 */
export function observeEdgeListenAnswers(
  handler: RequestListener,
  metrics: EdgeMetrics,
  logger: Logger,
): void {
  noteListenOptions(handler, {
    observe: ({ method, url, status, requestId, seconds }) => {
      metrics.observe(method, LISTEN_ROUTE, status, seconds);
      const path = url === undefined ? undefined : loggedPath(url);
      logger.info(
        { requestId, method, path, route: LISTEN_ROUTE, status, ms: Math.round(seconds * 1000) },
        'request',
      );
    },
  });
}
