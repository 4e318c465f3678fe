import http from 'node:http';
import { ManualClock, type RunningServer } from '@platform/kernel';
import { describeWithNats, type NatsServerHandle, startNatsServer, waitFor } from '@platform/testkit';
import { startSecondEdge, startTestPlatform, type TestPlatform } from '../harness';

/** The edge as a client meets it, in front of the real auth, llm-quota and legacy-agent. */

interface Reply {
  status: number;
  headers: Headers;
  // biome-ignore lint/suspicious/noExplicitAny: asserted field by field
  body: any;
}

const call = async (
  base: string,
  method: string,
  path: string,
  options: { bearer?: string; headers?: Record<string, string>; body?: unknown } = {},
): Promise<Reply> => {
  const headers: Record<string, string> = { ...options.headers };
  if (options.bearer) headers.authorization = `Bearer ${options.bearer}`;
  if (options.body !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(`${base}${path}`, {
    method,
    headers,
    body:
      options.body === undefined
        ? undefined
        : typeof options.body === 'string'
          ? options.body
          : JSON.stringify(options.body),
  });
  const text = await res.text();
  let body: unknown = text;
  try {
    body = text ? JSON.parse(text) : null;
  } catch {
    // not JSON (metrics)
  }
  return { status: res.status, headers: res.headers, body };
};

describe('the edge in front of the platform', () => {
  const clock = new ManualClock('2026-11-23T09:00:00Z');
  let p: TestPlatform;
  let session: string;
  let userId: string;

  beforeAll(async () => {
    p = await startTestPlatform({ clock });
    const login = await call(p.baseUrl, 'POST', '/v2/login/anonymous');
    expect(login.status).toBe(200);
    session = login.body.token;
    userId = login.body.userId;
  });
  afterAll(() => p.stop());

  it('verifies the session JWT and hands auth the identity it verified, never one a client claims', async () => {
    const me = await call(p.baseUrl, 'GET', '/v2/me', {
      bearer: session,
      headers: { 'x-platform-user-id': 'someone-else', X_Platform_Principal: 'forged.seal' },
    });
    expect(me.status).toBe(200);
    expect(me.body.id).toBe(userId);
    expect(me.headers.get('x-platform-api-version-used')).toBe('2025-01-15');
    expect(me.headers.get('x-request-id')).toBeTruthy();

    const tampered = `${session.slice(0, -4)}AAAA`;
    const refused = await call(p.baseUrl, 'GET', '/v2/me', { bearer: tampered });
    expect(refused.status).toBe(401);
    expect(refused.body).toMatchObject({
      error: 'Unauthorized',
      status: 401,
      requestId: refused.headers.get('x-request-id'),
    });
    expect((await call(p.baseUrl, 'GET', '/v2/me')).status).toBe(401);
    expect(
      (await call(p.baseUrl, 'GET', '/v2/me', { headers: { cookie: `access-token=${session}` } })).body.id,
    ).toBe(userId);
  });

  it('answers its own health, readiness (JWKS loaded, bus) and metrics on its admin port only', async () => {
    expect((await call(p.admin.edge, 'GET', '/healthz')).body).toMatchObject({
      status: 'ok',
      service: 'edge',
    });
    const ready = await call(p.admin.edge, 'GET', '/readyz');
    expect(ready.status).toBe(200);
    expect(ready.body.checks).toEqual({ jwks: 'ok', bus: 'ok' });
    await call(p.baseUrl, 'GET', '/v2/me', { bearer: session });
    const metrics = await call(p.admin.edge, 'GET', '/metrics');
    expect(metrics.body).toMatch(/edge_jwks_keys\{service="edge"\} [1-9]/);
    expect(metrics.body).toMatch(/http_requests_total\{[^}]*route="base"/);
    for (const path of ['/healthz', '/readyz', '/metrics']) {
      expect((await call(p.baseUrl, 'GET', path)).status).toBe(404);
    }
  });

  it('guards the quota endpoint: 401, then 400 NO_ORG_CONTEXT, then it reaches llm-quota, then 429 past 60 a minute', async () => {
    expect((await call(p.gatewayUrl, 'GET', '/v1/quotas/usage')).status).toBe(401);
    const noOrg = await call(p.gatewayUrl, 'GET', '/v1/quotas/usage', { bearer: session });
    expect(noOrg.status).toBe(400);
    expect(noOrg.body).toMatchObject({ error: 'NO_ORG_CONTEXT', code: 'NO_ORG_CONTEXT' });

    const created = await call(p.baseUrl, 'POST', '/v2/orgs', {
      bearer: session,
      body: { slug: 'edge-e2e', name: 'Edge E2E' },
    });
    expect(created.status).toBe(201);
    // Membership changed: auth tells the edges, whose cached principal is dropped.
    const usage = await waitFor(async () => {
      const answer = await call(p.gatewayUrl, 'GET', '/v1/quotas/usage', { bearer: session });
      return answer.status === 200 ? answer : null;
    });
    expect(usage.body.orgSlug).toBe('edge-e2e');

    let last = usage;
    let allowed = 1;
    while (last.status === 200 && allowed < 70) {
      last = await call(p.gatewayUrl, 'GET', '/v1/quotas/usage', { bearer: session });
      if (last.status === 200) allowed++;
    }
    expect(last.status).toBe(429);
    expect(allowed).toBeLessThanOrEqual(60);
    expect(last.body).toMatchObject({ error: 'RATE_LIMITED', code: 'RATE_LIMITED', status: 429 });
    expect(Number(last.headers.get('retry-after'))).toBe(last.body.retryAfter);
  });

  it('lets the gateway refuse an upload expecting 100-continue before the client sends its body', async () => {
    const login = await call(p.baseUrl, 'POST', '/v2/login/anonymous');
    const owner = login.body.token as string;
    const org = { slug: 'edge-upload', name: 'Edge upload' };
    expect((await call(p.baseUrl, 'POST', '/v2/orgs', { bearer: owner, body: org })).status).toBe(201);
    await waitFor(
      async () => (await call(p.gatewayUrl, 'GET', '/v1/models', { bearer: owner })).status === 200,
    );
    /** an upload of `size` bytes (past the 64 KiB the edge reads whole) sent only once `100 Continue` arrives */
    const upload = (contentType: string, size: number) =>
      new Promise<{ continued: boolean; status: number; body: string }>((resolve, reject) => {
        let continued = false;
        const req = http.request(`${p.gatewayUrl}/v1/audio/transcriptions`, {
          method: 'POST',
          agent: false,
          headers: {
            authorization: `Bearer ${owner}`,
            'content-type': contentType,
            'content-length': String(size),
            expect: '100-continue',
          },
        });
        req.on('continue', () => {
          continued = true;
          req.end(Buffer.alloc(size, 97));
        });
        req.on('response', (res) => {
          let body = '';
          res.on('data', (d: Buffer) => {
            body += d.toString('utf8');
          });
          res.on('end', () => resolve({ continued, status: res.statusCode!, body }));
        });
        req.on('error', reject);
      });
    const refused = await upload('text/plain', 300_000);
    expect(refused).toMatchObject({ continued: false, status: 400 });
    expect(JSON.parse(refused.body).message).toMatch(/multipart\/form-data/);
    // a form the gateway reads: it asks for the body, then refuses what it read (no `file` part here)
    const read = await upload('multipart/form-data; boundary=x', 300_000);
    expect(read).toMatchObject({ continued: true, status: 400 });
  });

  it("applies a quota settings change from the gateway's next request, not when its cached copy expires", async () => {
    // the platform's clock stands still here: only llm.quota.settings.changed can refresh the gateway's copy
    const owner = (await call(p.baseUrl, 'POST', '/v2/login/anonymous')).body.token as string;
    expect(
      (await call(p.baseUrl, 'POST', '/v2/orgs', { bearer: owner, body: { slug: 'fresh-gov', name: 'Gov' } }))
        .status,
    ).toBe(201);
    const chat = () =>
      call(p.gatewayUrl, 'POST', '/v1/chat/completions', {
        bearer: owner,
        body: { model: 'mock/chat', messages: [{ role: 'user', content: 'hi' }] },
      });
    expect((await chat()).status).toBe(200);
    const patched = await call(p.gatewayUrl, 'PATCH', '/v1/quotas/settings', {
      bearer: owner,
      body: { models: { allowed: ['mock/embeddings'] } },
    });
    expect(patched.status).toBe(200);
    const refused = await chat();
    expect([refused.status, refused.body.code]).toEqual([403, 'MODEL_NOT_ALLOWED']);
    await call(p.gatewayUrl, 'PATCH', '/v1/quotas/settings', {
      bearer: owner,
      body: { models: { allowed: null } },
    });
    expect((await chat()).status).toBe(200);
  });

  it('retires legacy v1 (410, nothing processed) and, before the instant, serves it with deprecation headers', async () => {
    const retired = await call(p.legacyUrl, 'GET', '/v1/bots', { bearer: 'some-developer-token' });
    expect(retired.status).toBe(410);
    expect(retired.body).toMatchObject({ code: 'API_VERSION_RETIRED', migration: { targetVersion: 'v2' } });

    clock.set('2025-12-30T12:00:00Z');
    try {
      const deprecated = await call(p.legacyUrl, 'GET', '/v1/bots', { bearer: 'some-developer-token' });
      expect(deprecated.status).not.toBe(410);
      expect(deprecated.headers.get('x-platform-api-deprecation')).toContain('2025-12-31');
      expect(deprecated.headers.get('sunset')).toBe('Wed, 31 Dec 2025 00:00:00 GMT');
      expect(deprecated.headers.get('deprecation')).toMatch(/^@\d+$/);
    } finally {
      clock.set('2026-11-23T09:05:00Z');
    }
    // The legacy token paths under /v2 are not deprecated.
    const v2 = await call(p.legacyUrl, 'GET', '/v2/auth/accessToken');
    expect(v2.headers.get('x-platform-api-deprecation')).toBeNull();
  });

  it('passes a malformed JSON body to the service and its 400 INVALID_BODY back unchanged; refuses oversized bodies', async () => {
    const malformed = await call(p.baseUrl, 'POST', '/v2/user/accessTokens', {
      bearer: session,
      body: '{"name":',
    });
    expect(malformed.status).toBe(400);
    expect(malformed.body).toMatchObject({ code: 'INVALID_BODY', status: 400 });
    const big = await call(p.baseUrl, 'POST', '/v2/user/accessTokens', {
      bearer: session,
      body: `"${'x'.repeat(11 * 1024 * 1024)}"`,
    });
    expect(big.status).toBe(413);
    expect(big.body).toMatchObject({ code: 'PAYLOAD_TOO_LARGE' });
  });
});

const SECRET = 'edge-e2e-internal-secret-0123456789abcdef';

describeWithNats('two edges on one NATS in front of one auth', () => {
  let nats: NatsServerHandle;
  let p: TestPlatform;
  let second: { server: RunningServer; stop(): Promise<void> };

  beforeAll(async () => {
    nats = await startNatsServer();
    p = await startTestPlatform({ natsUrl: nats.url, env: { PLATFORM_INTERNAL_SECRET: SECRET } });
    second = await startSecondEdge(p, nats.url, SECRET);
  });
  afterAll(async () => {
    await second.stop();
    await p.stop();
    await nats.dispose();
  });

  // The principal cache would keep the token for its TTL: only auth's revocation event, over NATS, explains a
  // refusal before it. How fast (the 1 s) is measured by bench/edge/propagation.ts, not asserted here.
  it('an access token revoked through one edge is refused by both, before their caches expire', async () => {
    const login = await call(p.baseUrl, 'POST', '/v2/login/anonymous');
    const created = await call(p.baseUrl, 'POST', '/v2/user/accessTokens', {
      bearer: login.body.token,
      body: { name: 'e2e', expiresAt: new Date(Date.now() + 86_400_000).toISOString() },
    });
    expect(created.status).toBe(201);
    const token = created.body.token;
    for (const base of [p.baseUrl, second.server.url])
      expect((await call(base, 'GET', '/v2/me', { bearer: token })).status).toBe(200);

    const revoked = await call(p.baseUrl, 'DELETE', `/v2/user/accessTokens/${created.body._id}`, {
      bearer: login.body.token,
    });
    expect(revoked.status).toBeLessThan(300);
    const refused = (base: string) => async () =>
      (await call(base, 'GET', '/v2/me', { bearer: token })).status === 401;
    await Promise.all(
      [p.baseUrl, second.server.url].map((base) =>
        waitFor(refused(base), { timeoutMs: 10_000, what: `${base} to refuse the revoked token` }),
      ),
    );
  });
});
