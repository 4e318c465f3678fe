import { ManualClock } from '@platform/kernel';
import {
  type Backends,
  bearer,
  type Route,
  request,
  signSession,
  startBackends,
  startEdge,
  startUpstream,
  type TestEdge,
} from './support';

describe('API version lifecycle at the edge', () => {
  let services: Backends;
  const edges: TestEdge[] = [];

  beforeAll(async () => {
    services = await startBackends();
  });
  afterAll(async () => {
    for (const e of edges) await e.close();
    await services.close();
  });

  const edgeAt = async (clock: ManualClock, env: Record<string, string> = {}) => {
    const e = await startEdge({ ...services.urls, clock, env: { SESSION_PRINCIPAL_SOURCE: 'jwt', ...env } });
    edges.push(e);
    return e;
  };

  it('retires legacy v1 at 2025-12-31T00:00:00Z by default: 410 with migration information, processing nothing', async () => {
    const clock = new ManualClock('2025-12-30T23:59:59Z');
    const edge = await edgeAt(clock);

    const before = await request(edge.url, '/legacy/v1/bots', {
      headers: { authorization: 'Bearer dev-token' },
    });
    expect(before.status).toBe(200);
    expect(before.headers['x-platform-api-deprecation']).toMatch(/2025-12-31T00:00:00.000Z.*v2/);
    expect(before.headers.deprecation).toBe(`@${Date.parse('2024-12-31T00:00:00Z') / 1000}`);
    expect(before.headers.sunset).toBe('Wed, 31 Dec 2025 00:00:00 GMT');
    expect(before.headers.link).toContain('</legacy/v2>; rel="successor-version"');
    expect(before.headers.link).toContain('rel="deprecation"');

    clock.set('2025-12-31T00:00:00Z');
    const seen = services.legacy.received.length;
    const after = await request(edge.url, '/legacy/v1/Messages', {
      method: 'POST',
      headers: { authorization: 'Bearer client-token', 'content-type': 'application/json' },
      body: '{"userId":"u","platform":"web","text":"hi"}',
    });
    expect(after.status).toBe(410);
    expect(after.json).toMatchObject({
      error: 'ApiVersionRetired',
      code: 'API_VERSION_RETIRED',
      status: 410,
      migration: {
        retiredVersion: 'v1',
        targetVersion: 'v2',
        retiredAt: '2025-12-31T00:00:00.000Z',
        targetPath: '/legacy/v2',
      },
    });
    expect(after.json.migration.documentation).toMatch(/^https:\/\//);
    expect(services.legacy.received.length).toBe(seen);
    // Any spelling the service would route: case and trailing slashes too.
    expect((await request(edge.url, '/legacy/V1/intents/')).status).toBe(410);
  });

  it('names the successor where the client reaches it: at the root of a legacy host, under a trusted proxy prefix', async () => {
    const clock = new ManualClock('2025-06-01T00:00:00Z');
    const edge = await edgeAt(clock, { LEGACY_HOSTS: 'legacy.example.test', TRUST_PROXY: 'loopback' });
    const onHost = { host: 'legacy.example.test' };
    const behindProxy = { 'x-forwarded-prefix': '/api' };

    const deprecated = await request(edge.url, '/v1/bots', { headers: onHost });
    expect(deprecated.status).toBe(200);
    expect(deprecated.headers.link).toContain('</v2>; rel="successor-version"');
    const proxied = await request(edge.url, '/legacy/v1/bots', { headers: behindProxy });
    expect(proxied.headers.link).toContain('</api/legacy/v2>; rel="successor-version"');

    clock.set('2026-01-01T00:00:00Z');
    const retired = await request(edge.url, '/v1/bots', { headers: onHost });
    expect(retired.status).toBe(410);
    expect(retired.json.migration.targetPath).toBe('/v2');
    expect(retired.headers.link).toContain('</v2>; rel="successor-version"');
    const retiredProxied = await request(edge.url, '/legacy/v1/bots', { headers: behindProxy });
    expect(retiredProxied.json.migration.targetPath).toBe('/api/legacy/v2');
  });

  it("names no successor under a trusted proxy's prefix that is not a plain path (another host, another link)", async () => {
    const clock = new ManualClock('2025-06-01T00:00:00Z');
    const edge = await edgeAt(clock, { TRUST_PROXY: 'loopback' });
    for (const prefix of ['//elsewhere.example', '/a>; rel="next", <https://elsewhere.example', 'api']) {
      const deprecated = await request(edge.url, '/legacy/v1/bots', {
        headers: { 'x-forwarded-prefix': prefix },
      });
      expect([prefix, deprecated.status, String(deprecated.headers.link).split(', ')[0]]).toEqual([
        prefix,
        200,
        '</legacy/v2>; rel="successor-version"',
      ]);
      expect(deprecated.json.headers['x-forwarded-prefix']).toBe('/legacy');
    }
    clock.set('2026-01-01T00:00:00Z');
    const retired = await request(edge.url, '/legacy/v1/bots', {
      headers: { 'x-forwarded-prefix': '//elsewhere.example' },
    });
    expect([retired.status, retired.json.migration.targetPath]).toEqual([410, '/legacy/v2']);
  });

  it("keeps its deprecation Link when the service answers one of its own: the service's link-values follow the edge's", async () => {
    const legacy = await startUpstream('legacy-agent', {
      '/v1/bots': (_req, res) => {
        res.setHeader('link', ['</v1/bots?page=2>; rel="next"', '</v1/bots?page=9>; rel="last"']);
        res.end('[]');
        return true;
      },
      '/v2/bots': (_req, res) => {
        res.setHeader('link', '</v2/bots?page=2>; rel="next"');
        res.end('[]');
        return true;
      },
    });
    try {
      const edge = await startEdge({
        ...services.urls,
        legacyUrl: legacy.url,
        clock: new ManualClock('2025-06-01T00:00:00Z'),
      });
      edges.push(edge);
      const answer = await request(edge.url, '/legacy/v1/bots');
      expect(answer.status).toBe(200);
      expect(String(answer.headers.link).split(/,\s*/)).toEqual([
        '</legacy/v2>; rel="successor-version"',
        expect.stringMatching(/^<https:\/\/[^>]+>; rel="deprecation"; type="text\/html"$/),
        '</v1/bots?page=2>; rel="next"',
        '</v1/bots?page=9>; rel="last"',
      ]);
      // Where the edge sets no Link, the service's reaches the client as it sent it.
      const current = await request(edge.url, '/legacy/v2/bots');
      expect(current.headers.link).toBe('</v2/bots?page=2>; rel="next"');
    } finally {
      await legacy.close();
    }
  });

  it("answers its own lifecycle fields and request id, never a service's value for them", async () => {
    const edgeOwned: Route = (_req, res) => {
      res.setHeader('deprecation', '@0');
      res.setHeader('sunset', 'Fri, 01 Jan 2100 00:00:00 GMT');
      res.setHeader('x-platform-api-deprecation', 'from the service');
      res.setHeader('x-platform-api-version-used', '1999-01-01');
      res.setHeader('x-request-id', 'from-the-service');
      res.setHeader('x-service-field', 'kept');
      res.end('[]');
      return true;
    };
    const legacy = await startUpstream('legacy-agent', { '/v1/bots': edgeOwned, '/v2/bots': edgeOwned });
    try {
      const edge = await startEdge({
        ...services.urls,
        legacyUrl: legacy.url,
        clock: new ManualClock('2025-06-01T00:00:00Z'),
      });
      edges.push(edge);
      const deprecated = await request(edge.url, '/legacy/v1/bots', {
        headers: { 'x-request-id': 'client-id-1' },
      });
      expect(deprecated.status).toBe(200);
      expect(deprecated.headers).toMatchObject({
        deprecation: `@${Date.parse('2024-12-31T00:00:00Z') / 1000}`,
        sunset: 'Wed, 31 Dec 2025 00:00:00 GMT',
        'x-platform-api-deprecation':
          'API v1 is deprecated. It will be retired on 2025-12-31T00:00:00.000Z. Migrate to v2.',
        'x-platform-api-version-used': '2025-01-15',
        'x-request-id': 'client-id-1',
        'x-service-field': 'kept',
      });
      // Where the edge sets no deprecation fields, a service's do not reach the client either.
      const current = await request(edge.url, '/legacy/v2/bots', {
        headers: { 'x-request-id': 'client-id-2' },
      });
      expect(current.status).toBe(200);
      expect(current.headers.deprecation).toBeUndefined();
      expect(current.headers.sunset).toBeUndefined();
      expect(current.headers['x-platform-api-deprecation']).toBeUndefined();
      expect(current.headers['x-platform-api-version-used']).toBe('2025-01-15');
      expect(current.headers['x-request-id']).toBe('client-id-2');
    } finally {
      await legacy.close();
    }
  });

  it('is retired today (2026-11-23) unless LEGACY_V1_RETIREMENT_DATE moves the instant', async () => {
    const today = new ManualClock('2026-11-23T12:00:00Z');
    expect((await request((await edgeAt(today)).url, '/legacy/v1/intents')).status).toBe(410);
    const kept = await edgeAt(today, { LEGACY_V1_RETIREMENT_DATE: '2027-06-30' });
    const open = await request(kept.url, '/legacy/v1/intents');
    expect(open.status).toBe(200);
    expect(open.headers.sunset).toBe('Wed, 30 Jun 2027 00:00:00 GMT');
  });

  it('never deprecates the legacy /v2 token paths, the gateway /v1 or the platform v2', async () => {
    const edge = await edgeAt(new ManualClock('2026-11-23T12:00:00Z'));
    const token = signSession(services.key, { now: new Date('2026-11-23T12:00:00Z') });
    for (const [path, headers] of [
      ['/legacy/v2/auth/accessToken', {}],
      ['/legacy/v2/bots', {}],
      ['/llm/v1/quotas/things', bearer(token)],
      ['/v2/me', bearer(token)],
    ] as const) {
      const answer = await request(edge.url, path, { headers });
      expect(answer.status).toBe(200);
      expect(answer.headers['x-platform-api-deprecation']).toBeUndefined();
      expect(answer.headers.sunset).toBeUndefined();
      expect(answer.headers['x-platform-api-version-used']).toBe('2025-01-15');
    }
  });

  it('selects the newest implementation date not after X-Platform-API-Version and names it', async () => {
    const edge = await edgeAt(new ManualClock('2026-11-23T12:00:00Z'), {
      API_VERSIONS: JSON.stringify({
        'legacy/v2': { implementations: ['2025-01-15', '2025-09-01', '2027-01-01'] },
      }),
    });
    const used = async (header?: string) => {
      const answer = await request(edge.url, '/legacy/v2/bots', {
        headers: header ? { 'x-platform-api-version': header } : {},
      });
      return {
        status: answer.status,
        used: answer.headers['x-platform-api-version-used'],
        forwarded: answer.json?.headers?.['x-platform-api-version'],
        json: answer.json,
      };
    };
    expect(await used()).toMatchObject({ status: 200, used: '2025-09-01', forwarded: '2025-09-01' });
    expect(await used('2025-08-31')).toMatchObject({ used: '2025-01-15', forwarded: '2025-01-15' });
    expect(await used('2025-09-01')).toMatchObject({ used: '2025-09-01' });
    // A date beyond today gets today's latest, never an unreleased implementation.
    expect(await used('2030-01-01')).toMatchObject({ used: '2025-09-01' });
    for (const bad of ['2025-13-01', '2025-02-30', 'yesterday', '2025-1-1', '2025-01-15T00:00:00Z']) {
      const answer = await used(bad);
      expect(answer.status).toBe(400);
      expect(answer.json).toMatchObject({
        error: 'InvalidApiVersion',
        code: 'HEADER_POLICY_VIOLATION',
        status: 400,
      });
    }
    const early = await used('2024-01-01');
    expect(early.status).toBe(400);
    expect(early.json.details).toMatchObject({ earliest: '2025-01-15' });
  });
});
