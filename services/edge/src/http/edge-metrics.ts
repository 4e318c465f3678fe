import { Counter, collectDefaultMetrics, Gauge, type Metric, Registry } from 'prom-client';

export interface EdgeMetrics {
  registry: Registry;
  /** one answered request; `route` is a root or route-table name, never a raw path */
  observe(method: string, route: string, status: number, seconds: number): void;
  jwksFetchFailures: Counter;
}

const KNOWN_METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);
const BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5];

interface Series {
  labels: { method: string; route: string; status: string };
  count: number;
  sum: number;
  /** observations per bucket (not cumulative); the last slot is +Inf */
  buckets: Float64Array;
}

/**
 * `http_requests_total` and `http_request_duration_seconds` (the services' names and labels), counted
 * in plain numbers per (method, route, status) and rendered by prom-client's registry at scrape time:
 * the hot path does one map lookup and a few additions instead of hashing a label object twice.
 */
function requestMetrics(series: Map<string, Series>): Metric[] {
  const counter = {
    name: 'http_requests_total',
    help: 'HTTP requests answered, by method, route and status',
    type: 'counter',
    aggregator: 'sum',
    get: async () => ({
      name: 'http_requests_total',
      help: 'HTTP requests answered, by method, route and status',
      type: 'counter',
      aggregator: 'sum',
      values: [...series.values()].map((s) => ({ labels: s.labels, value: s.count })),
    }),
    reset: () => series.clear(),
  };
  const histogram = {
    name: 'http_request_duration_seconds',
    help: 'HTTP request latency, by method, route and status',
    type: 'histogram',
    aggregator: 'sum',
    get: async () => {
      const values: Array<{ labels: Record<string, string | number>; value: number; metricName: string }> =
        [];
      for (const s of series.values()) {
        let cumulative = 0;
        BUCKETS.forEach((le, i) => {
          cumulative += s.buckets[i] ?? 0;
          values.push({
            labels: { ...s.labels, le },
            value: cumulative,
            metricName: 'http_request_duration_seconds_bucket',
          });
        });
        values.push({
          labels: { ...s.labels, le: '+Inf' },
          value: s.count,
          metricName: 'http_request_duration_seconds_bucket',
        });
        values.push({ labels: s.labels, value: s.sum, metricName: 'http_request_duration_seconds_sum' });
        values.push({ labels: s.labels, value: s.count, metricName: 'http_request_duration_seconds_count' });
      }
      return {
        name: 'http_request_duration_seconds',
        help: histogram.help,
        type: 'histogram',
        aggregator: 'sum',
        values,
      };
    },
    reset: () => series.clear(),
  };
  return [counter, histogram] as unknown as Metric[];
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
  const series = new Map<string, Series>();
  for (const metric of requestMetrics(series)) registry.registerMetric(metric);
  const jwksFetchFailures = new Counter({
    name: 'edge_jwks_fetch_failures_total',
    help: 'JWKS fetches that failed (cached keys kept verifying)',
    registers: [registry],
  });
  const gauge = (name: string, help: string, read: () => number) =>
    new Gauge({
      name,
      help,
      registers: [registry],
      collect() {
        this.set(read());
      },
    });
  gauge('edge_jwks_keys', 'signing keys the edge holds', gauges.jwksKeys);
  gauge('edge_jwt_cache_entries', 'verified session JWTs remembered', gauges.jwtCacheEntries);
  gauge('edge_principal_cache_entries', 'resolved principals remembered', gauges.principalCacheEntries);

  return {
    registry,
    jwksFetchFailures,
    observe(method, route, status, seconds) {
      const m = KNOWN_METHODS.has(method) ? method : 'OTHER';
      const key = `${m} ${status} ${route}`;
      let s = series.get(key);
      if (!s) {
        s = {
          labels: { method: m, route, status: String(status) },
          count: 0,
          sum: 0,
          buckets: new Float64Array(BUCKETS.length + 1),
        };
        series.set(key, s);
      }
      s.count++;
      s.sum += seconds;
      let i = 0;
      while (i < BUCKETS.length && seconds > BUCKETS[i]!) i++;
      s.buckets[i] += 1;
    },
  };
}
