import { Writable } from 'node:stream';
import { createNatsBus } from '@platform/bus';
import { createLogger, listen } from '@platform/kernel';
import { describeWithNats, freePort, startNatsServer, waitFor } from '@platform/testkit';
import {
  accessToken,
  type Backends,
  bearer,
  makeSigningKey,
  principalOf,
  rawRequest,
  request,
  signSession,
  startBackends,
  startEdge,
  startFakeAuth,
  type TestEdge,
} from './support';

/** Regression tests of issue 14 (black-box probe) for what the edge decides. */
describe('the edge against a black-box attacker', () => {
  const lines: Array<Record<string, unknown>> = [];
  let services: Backends;
  let edge: TestEdge;
  let token: string;
  const quotaToken = accessToken();

  beforeAll(async () => {
    services = await startBackends({
      quotaRoutes: {
        '/page': (_req, res) => {
          res.setHeader('content-security-policy', "default-src 'self'");
          res.setHeader('cache-control', 'public, max-age=60');
          res.end('<html></html>');
          return true;
        },
      },
    });
    const { auth } = services;
    auth.state.answers.set('session:session-1', () => ({
      principal: principalOf({ kind: 'session', userId: 'user-1', sessionId: 'session-1' }),
      expiresAt: null,
      cacheTtlSeconds: 60,
    }));
    auth.state.answers.set(quotaToken, () => ({
      principal: principalOf({ userId: 'quota-user', org: { slug: 'acme', permissions: ['models:read'] } }),
      expiresAt: null,
      cacheTtlSeconds: 60,
    }));
    const sink = new Writable({
      write(chunk, _enc, done) {
        lines.push(JSON.parse(chunk.toString()));
        done();
      },
    });
    edge = await startEdge({
      ...services.urls,
      logger: createLogger({ name: 'edge', level: 'info', destination: sink }),
      env: { ACCESS_LOG_SAMPLE_RATE: '0' },
    });
    token = signSession(services.key);
  });
  afterAll(async () => {
    await edge.close();
    await services.close();
  });

  describe('item 2: the path the edge checks is the path the service sees', () => {
    it('refuses a request target with a fragment (400), so a fragment cannot dodge the quota rate limit', async () => {
      const before = services.quota.received.length;
      const answer = await rawRequest(
        edge.port,
        `GET /llm/v1/quotas/usage#x HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${quotaToken}\r\nConnection: close\r\n\r\n`,
      );
      expect(answer.status).toBe(400);
      expect(answer.raw).toContain('"code":"INVALID_PATH"');
      const inQuery = await rawRequest(
        edge.port,
        `GET /llm/v1/quotas/usage?a=1#x HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${quotaToken}\r\nConnection: close\r\n\r\n`,
      );
      expect(inQuery.status).toBe(400);
      expect(services.quota.received.length).toBe(before);
    });

    it('refuses paths with characters that must be percent-encoded or malformed escapes (400 envelope)', async () => {
      for (const path of [
        '/legacy/v1/bots/a\\b',
        '/legacy/v1/bots/%zz',
        '/v2/workspaces/%u0041',
        '/legacy/v1/b"x',
      ]) {
        const answer = await rawRequest(
          edge.port,
          `GET ${path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`,
        );
        expect({ path, status: answer.status }).toEqual({ path, status: 400 });
        expect(answer.raw).toContain('"code":"INVALID_PATH"');
      }
    });
  });

  describe('item 5: service endpoints are never reachable through the edge', () => {
    it.each([
      '/healthz',
      '/readyz',
      '/metrics',
      '/METRICS',
      '/metrics/',
      '/Metrics//',
      '/%6detrics',
      '/internal/principal',
      '/INTERNAL/principal',
      '/%69nternal/principal',
      '/internal',
      '/legacy/metrics',
      '/legacy/healthz',
      '/legacy/readyz',
      '/legacy/internal/x',
      '/llm/metrics',
      '/llm/internal/usage',
    ])('%s answers 404 from the edge, with or without credentials', async (path) => {
      const before =
        services.quota.received.length + services.legacy.received.length + services.auth.received.length;
      for (const headers of [{}, bearer(token)]) {
        const answer = await request(edge.url, path, { headers });
        expect(answer.status).toBe(404);
        expect(answer.json).toMatchObject({ error: 'RouteNotFound', status: 404 });
      }
      expect(
        services.quota.received.length + services.legacy.received.length + services.auth.received.length,
      ).toBe(before);
    });

    it('refuses a doubled slash before internal too', async () => {
      const answer = await rawRequest(
        edge.port,
        'GET //internal/principal HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n',
      );
      expect(answer.status).toBe(404);
    });

    it('still proxies the public routes of each root, including paths that merely contain those words', async () => {
      expect((await request(edge.url, '/legacy/v2/metrics-report')).json.upstream).toBe('legacy-agent');
      expect((await request(edge.url, '/v2/internals', { headers: bearer(token) })).json.upstream).toBe(
        'auth',
      );
    });
  });

  describe('item 7: security headers on every answer', () => {
    it('sets nosniff, frame options, a CSP and no-store on proxied answers and on the edge’s own errors', async () => {
      const proxied = await request(edge.url, '/legacy/v2/bots');
      const refused = await request(edge.url, '/v2/me');
      for (const answer of [proxied, refused]) {
        expect(answer.headers).toMatchObject({
          'x-content-type-options': 'nosniff',
          'x-frame-options': 'DENY',
          'cache-control': 'no-store',
        });
        expect(answer.headers['content-security-policy']).toContain("default-src 'none'");
        // The client came over plain HTTP and no trusted proxy said otherwise.
        expect(answer.headers['strict-transport-security']).toBeUndefined();
      }
    });

    it('lets a service that serves a page set its own CSP and caching', async () => {
      const page = await request(edge.url, '/llm/page', { headers: bearer(token) });
      expect(page.headers['content-security-policy']).toBe("default-src 'self'");
      expect(page.headers['cache-control']).toBe('public, max-age=60');
      expect(page.headers['x-content-type-options']).toBe('nosniff');
    });
  });

  describe('item 8/9: forwarding headers are believed only from TRUST_PROXY', () => {
    it('by default, hands the service the client’s real address, host and scheme, never what it claims', async () => {
      const answer = await request(edge.url, '/legacy/v2/bots', {
        headers: {
          host: 'api.example',
          'x-forwarded-for': '203.0.113.9',
          'x-forwarded-host': 'evil.example',
          'x-forwarded-proto': 'https',
          'x-forwarded-prefix': '/evil',
        },
      });
      expect(answer.json.headers).toMatchObject({
        'x-forwarded-for': '127.0.0.1',
        'x-forwarded-host': 'api.example',
        'x-forwarded-proto': 'http',
        'x-forwarded-prefix': '/legacy',
      });
      expect(answer.headers['strict-transport-security']).toBeUndefined();
    });

    it('behind a trusted TLS proxy, keeps its forwarding headers, appends the hop and sends HSTS', async () => {
      const trusting = await startEdge({
        authUrl: services.auth.url,
        legacyUrl: services.legacy.url,
        env: { TRUST_PROXY: 'loopback' },
      });
      try {
        const answer = await request(trusting.url, '/legacy/v2/bots', {
          headers: {
            'x-forwarded-for': '203.0.113.9',
            'x-forwarded-host': 'api.example',
            'x-forwarded-proto': 'https',
          },
        });
        expect(answer.json.headers).toMatchObject({
          'x-forwarded-for': '203.0.113.9, 127.0.0.1',
          'x-forwarded-host': 'api.example',
          'x-forwarded-proto': 'https',
        });
        expect(answer.headers['strict-transport-security']).toMatch(/^max-age=\d+; includeSubDomains$/);
      } finally {
        await trusting.close();
      }
    });
  });

  describe('item 11: CSRF for cookie sessions (double-submit)', () => {
    const cookieHeaders = (extra: Record<string, string> = {}) => ({
      cookie: `access-token=${token}; csrf-token=abc123`,
      ...extra,
    });

    it('refuses a state change authenticated by the cookie without the matching x-csrf-token (403)', async () => {
      const before = services.auth.received.length;
      for (const headers of [
        cookieHeaders(),
        cookieHeaders({ 'x-csrf-token': 'other1' }),
        cookieHeaders({ 'x-csrf-token': '' }),
        { cookie: `access-token=${token}`, 'x-csrf-token': 'abc123' },
      ]) {
        const answer = await request(edge.url, '/v2/logout', { method: 'POST', headers });
        expect(answer.status).toBe(403);
        expect(answer.json).toMatchObject({ code: 'CSRF_TOKEN_INVALID', status: 403 });
      }
      expect(services.auth.received.length).toBe(before);
    });

    it('lets it through with the matching header, and never asks it of reads or header credentials', async () => {
      const ok = await request(edge.url, '/v2/logout', {
        method: 'POST',
        headers: cookieHeaders({ 'x-csrf-token': 'abc123' }),
      });
      expect(ok.json).toMatchObject({ upstream: 'auth', method: 'POST' });
      expect((await request(edge.url, '/v2/me', { headers: cookieHeaders() })).json.upstream).toBe('auth');
      const withBearer = await request(edge.url, '/v2/logout', { method: 'POST', headers: bearer(token) });
      expect(withBearer.json.upstream).toBe('auth');
      // On the legacy root Authorization is legacy-agent's token: with it, the cookie is not alone.
      const legacyWithToken = await request(edge.url, '/legacy/v2/auth/accessToken', {
        method: 'POST',
        headers: cookieHeaders({ authorization: 'Bearer legacy-session-token' }),
      });
      expect(legacyWithToken.json.upstream).toBe('legacy-agent');
      const legacyCookieOnly = await request(edge.url, '/legacy/v2/auth/accessToken', {
        method: 'POST',
        headers: cookieHeaders(),
      });
      expect(legacyCookieOnly.status).toBe(403);
      // A route the table lists as public (auth's forms) checks its own per-form token instead.
      const pageForm = await request(edge.url, '/account/logout', {
        method: 'POST',
        headers: cookieHeaders(),
      });
      expect(pageForm.json).toMatchObject({ upstream: 'auth', method: 'POST' });
    });
  });

  describe('item 6: a service that answers before reading a large body', () => {
    it('has its answer forwarded, not a 502, for HEAD and POST alike', async () => {
      // Answers at once, never reading the body, as a 404 or an early 401 does.
      const early = await listen(
        (_req, res) => {
          res.statusCode = 401;
          res.setHeader('content-type', 'application/json');
          res.end('{"error":"Unauthorized"}');
        },
        0,
        '127.0.0.1',
      );
      const e = await startEdge({ authUrl: services.auth.url, legacyUrl: early.url });
      try {
        const body = Buffer.alloc(1_100_000, 97);
        const seen: Record<string, number> = {};
        for (let i = 0; i < 20; i++) {
          const method = i % 2 ? 'HEAD' : 'POST';
          const answer = await rawRequest(
            e.port,
            `${method} /legacy/v2/auth/login HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n`,
            body,
          );
          seen[`${method} ${answer.status}`] = (seen[`${method} ${answer.status}`] ?? 0) + 1;
        }
        expect(seen).toEqual({ 'HEAD 401': 10, 'POST 401': 10 });
      } finally {
        await e.close();
        await early.close(100);
      }
    });
  });

  describe('issue 13: answers >= 400 are all logged', () => {
    it('logs every refused request with method, path, status and request id, even with sampling off', async () => {
      lines.length = 0;
      for (let i = 0; i < 30; i++)
        await request(edge.url, '/v2/me', { headers: { 'x-request-id': `probe-${i}` } });
      await waitFor(() => lines.filter((l) => l.msg === 'request').length >= 30);
      const logged = lines.filter((l) => l.msg === 'request');
      expect(logged).toHaveLength(30);
      expect(logged[0]).toMatchObject({ method: 'GET', path: '/v2/me', status: 401, requestId: 'probe-0' });
      // The path as the client sent it, prefix included.
      await request(edge.url, '/llm/v1/quotas/usage');
      await waitFor(() => lines.some((l) => l.path === '/llm/v1/quotas/usage' && l.status === 401));
      // Successes are sampled (0 here): none logged.
      await request(edge.url, '/legacy/v2/bots');
      expect(lines.filter((l) => l.msg === 'request')).toHaveLength(31);
    });

    it('never writes the legacy access token a revocation names in its path to the log', async () => {
      lines.length = 0;
      const secret = 'r:0123456789abcdef0123456789abcdef';
      const refused = await request(edge.url, `/legacy/v2/auth/accessToken/${secret}?x=1`, {
        method: 'DELETE',
        headers: { 'x-platform-api-version': 'yesterday', 'x-request-id': 'revoke-1' },
      });
      expect(refused.status).toBe(400);
      await waitFor(() => lines.some((l) => l.requestId === 'revoke-1'));
      expect(JSON.stringify(lines)).not.toContain('0123456789abcdef');
      expect(lines.find((l) => l.requestId === 'revoke-1')).toMatchObject({
        method: 'DELETE',
        path: '/legacy/v2/auth/accessToken/[redacted]',
        status: 400,
      });

      // nor when legacy-agent cannot be reached (the proxy's own warning)
      const down = await startEdge({
        authUrl: services.auth.url,
        legacyUrl: `http://127.0.0.1:${await freePort()}`,
        logger: createLogger({
          name: 'edge',
          level: 'info',
          destination: new Writable({
            write(chunk, _enc, done) {
              lines.push(JSON.parse(chunk.toString()));
              done();
            },
          }),
        }),
      });
      try {
        const unreachable = await request(down.url, `/legacy/v2/auth/accessToken/${secret}`, {
          method: 'DELETE',
          headers: { 'x-request-id': 'revoke-2' },
        });
        expect(unreachable.status).toBe(503);
        await waitFor(() => lines.filter((l) => l.requestId === 'revoke-2').length >= 2);
      } finally {
        await down.close();
      }
      expect(lines.find((l) => l.msg === 'upstream request failed')).toMatchObject({
        requestId: 'revoke-2',
        path: '/v2/auth/accessToken/[redacted]',
      });
      expect(JSON.stringify(lines)).not.toContain('0123456789abcdef');
    });
  });

  describe('what the server answers before the edge handler runs (kernel listen)', () => {
    /** the edge's count of the 400s its server wrote itself */
    const refusedCount = async () => {
      const metrics = await request(edge.adminUrl, '/metrics');
      const count = /http_requests_total\{method="GET",route="listen:refused",status="400"[^}]*\} (\d+)/.exec(
        metrics.text,
      );
      return Number(count?.[1] ?? 0);
    };

    it('refuses a request with two Host headers 400, so that no proxy in front can route it by the other', async () => {
      const before = services.legacy.received.length;
      const answer = await rawRequest(
        edge.port,
        'GET /legacy/v2/bots HTTP/1.1\r\nHost: legacy.example.test\r\nHost: api.example.test\r\nConnection: close\r\n\r\n',
      );
      expect(answer.status).toBe(400);
      expect(answer.raw).toContain('"error":"BadRequest"');
      expect(answer.raw).toMatch(/\r\nx-content-type-options: nosniff\r\n/i);
      expect(services.legacy.received.length).toBe(before);
    });

    it('refuses it too when the second Host comes after a thousand other fields', async () => {
      const before = services.legacy.received.length;
      const fields = Array.from({ length: 1100 }, (_, i) => `x-${i}: 1\r\n`).join('');
      const answer = await rawRequest(
        edge.port,
        `GET /legacy/v2/bots HTTP/1.1\r\nHost: legacy.example.test\r\n${fields}Host: api.example.test\r\nConnection: close\r\n\r\n`,
      );
      expect(answer.status).toBe(400);
      expect(services.legacy.received.length).toBe(before);
    });

    it('counts and logs those answers as its own refusals are (route listen:refused), at info', async () => {
      const before = await refusedCount();
      lines.length = 0;
      for (let i = 0; i < 3; i++)
        await rawRequest(edge.port, `GET /legacy/v2/bots HTTP/1.1\r\nX-Request-Id: no-host-${i}\r\n\r\n`);
      expect(await refusedCount()).toBe(before + 3);
      await waitFor(() => lines.filter((l) => l.msg === 'request').length >= 3);
      expect(lines.filter((l) => l.msg === 'request')).toEqual(
        [0, 1, 2].map((i) =>
          expect.objectContaining({
            level: 30,
            requestId: `no-host-${i}`,
            method: 'GET',
            path: '/legacy/v2/bots',
            route: 'listen:refused',
            status: 400,
          }),
        ),
      );
    });
  });
});

describeWithNats('the edge without NATS', () => {
  it('stays ready, reporting the bus, and keeps verifying sessions with the keys it has', async () => {
    const key = makeSigningKey();
    const nats = await startNatsServer();
    const auth = await startFakeAuth();
    auth.state.keys.push(key);
    auth.state.answers.set('session:session-1', () => ({
      principal: principalOf({ kind: 'session', userId: 'user-1', sessionId: 'session-1' }),
      expiresAt: null,
      cacheTtlSeconds: 60,
    }));
    const bus = await createNatsBus({ url: nats.url, name: 'edge-test' });
    const edge = await startEdge({ authUrl: auth.url, bus });
    try {
      expect((await request(edge.adminUrl, '/readyz')).json.checks).toEqual({ jwks: 'ok', bus: 'ok' });
      await nats.stop();
      const ready = await request(edge.adminUrl, '/readyz');
      expect(ready.status).toBe(200);
      expect(ready.json).toMatchObject({ status: 'degraded', degraded: ['bus'], checks: { jwks: 'ok' } });
      expect(ready.json.checks.bus).not.toBe('ok');
      const me = await request(edge.url, '/v2/me', { headers: bearer(signSession(key)) });
      expect(me.json).toMatchObject({ upstream: 'auth' });
    } finally {
      await edge.close();
      await bus.close().catch(() => undefined);
      await nats.dispose();
      await auth.close();
    }
  });
});
