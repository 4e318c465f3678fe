import { createEdgeMetrics } from './edge-metrics';

describe('edge metrics', () => {
  it('renders request counts and cumulative latency buckets per method, route and status', async () => {
    const metrics = createEdgeMetrics({
      jwksKeys: () => 2,
      jwtCacheEntries: () => 5,
      principalCacheEntries: () => 7,
    });
    metrics.observe('GET', 'gateway', 200, 0.003);
    metrics.observe('GET', 'gateway', 200, 0.004);
    metrics.observe('GET', 'gateway', 200, 9);
    metrics.observe('BREW', 'base', 401, 0.0001);
    const text = await metrics.registry.metrics();
    expect(text).toContain('http_requests_total{method="GET",route="gateway",status="200",service="edge"} 3');
    expect(text).toContain('http_requests_total{method="OTHER",route="base",status="401",service="edge"} 1');
    const bucket = (le: string) =>
      new RegExp(
        `http_request_duration_seconds_bucket\\{method="GET",route="gateway",status="200",le="${le.replace('+', '\\+')}",service="edge"\\} (\\d+)`,
      ).exec(text)?.[1];
    expect([bucket('0.0025'), bucket('0.005'), bucket('5'), bucket('+Inf')]).toEqual(['0', '2', '2', '3']);
    expect(text).toMatch(
      /http_request_duration_seconds_sum\{method="GET",route="gateway",status="200",service="edge"\} 9\.007/,
    );
    expect(text).toContain('edge_jwks_keys{service="edge"} 2');
    expect(text).toContain('edge_principal_cache_entries{service="edge"} 7');
  });
});
