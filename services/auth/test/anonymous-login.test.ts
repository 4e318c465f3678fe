import { createInProcessBus } from '@platform/bus';
import { createEmbeddedStore } from '@platform/store';
import jwt from 'jsonwebtoken';
import { type AuthHarness, kidOf, startAuth, verifyWithJwks } from './helpers';

describe('anonymous login, JWKS, status and /v2/me', () => {
  let h: AuthHarness;
  beforeAll(async () => {
    h = await startAuth({
      env: { ANONYMOUS_LOGIN_RATE_LIMIT: '3', ANONYMOUS_LOGIN_RATE_WINDOW_SECONDS: '60' },
    });
  });
  afterAll(() => h.stop());

  it('issues {userId, sessionId, token} whose JWT carries the spec 2.5 claims and verifies against /oidc/jwks', async () => {
    const res = await h.http.post('/v2/login/anonymous').set('x-forwarded-for', '198.51.100.1');
    expect(res.status).toBe(200);
    expect(Object.keys(res.body).sort()).toEqual(['sessionId', 'token', 'userId']);
    const jwks = await h.http.get('/oidc/jwks');
    expect(jwks.status).toBe(200);
    expect(jwks.headers['cache-control']).toMatch(/max-age=\d+/);
    const claims = verifyWithJwks(res.body.token, jwks.body, h.config, h.clock);
    expect(claims).toEqual({
      sub: res.body.userId,
      platformSessionId: res.body.sessionId,
      jti: expect.any(String),
      iat: Math.floor(h.clock.now().getTime() / 1000),
      exp: Math.floor(h.clock.now().getTime() / 1000) + 2_592_000,
      scope: 'openid',
      client_id: 'platform-anonymous',
      iss: 'http://localhost:8080',
      aud: 'platform-api',
    });
    const header = jwt.decode(res.body.token, { complete: true })!.header;
    expect(header.alg).toBe('RS256');
    expect(jwks.body.keys.map((k: { kid: string }) => k.kid)).toContain(kidOf(res.body.token));
  });

  it('serves only public key parts, each with kid, alg and use', async () => {
    const { body } = await h.http.get('/oidc/jwks');
    expect(body.keys.length).toBeGreaterThan(0);
    for (const key of body.keys) {
      expect(Object.keys(key).sort()).toEqual(['alg', 'e', 'kid', 'kty', 'n', 'use']);
      expect(key).toMatchObject({ kty: 'RSA', alg: 'RS256', use: 'sig' });
    }
    const text = JSON.stringify(body);
    for (const privatePart of ['"d"', '"p"', '"q"', '"dp"', '"dq"', '"qi"', 'PRIVATE KEY']) {
      expect(text).not.toContain(privatePart);
    }
  });

  it('rate limits anonymous logins per client address (first X-Forwarded-For hop past trusted proxies)', async () => {
    const from = (address: string) => h.http.post('/v2/login/anonymous').set('x-forwarded-for', address);
    for (let i = 0; i < 3; i++) expect((await from('198.51.100.7')).status).toBe(200);
    const limited = await from('198.51.100.7');
    expect(limited.status).toBe(429);
    expect(limited.body).toMatchObject({ error: 'RATE_LIMITED', code: 'RATE_LIMITED', status: 429 });
    expect(limited.body.retryAfter).toBeGreaterThan(0);
    expect(limited.headers['retry-after']).toBe(String(limited.body.retryAfter));
    // Another client is unaffected.
    expect((await from('198.51.100.8')).status).toBe(200);
    // A client cannot dodge the limit by prepending its own X-Forwarded-For entry: the edge appends the
    // real address, and that untrusted hop is the one counted.
    expect((await from('10.9.9.9, 198.51.100.7')).status).toBe(429);
  });

  it('counts one limit across every auth instance on the same store', async () => {
    const store = createEmbeddedStore();
    const bus = createInProcessBus();
    const env = { ANONYMOUS_LOGIN_RATE_LIMIT: '4', ANONYMOUS_LOGIN_RATE_WINDOW_SECONDS: '60' };
    const a = await startAuth({ store, bus, env });
    const b = await startAuth({ store, bus, env });
    try {
      const statuses: number[] = [];
      for (let i = 0; i < 6; i++) {
        const instance = i % 2 ? a : b;
        statuses.push(
          (await instance.http.post('/v2/login/anonymous').set('x-forwarded-for', '192.0.2.44')).status,
        );
      }
      expect(statuses).toEqual([200, 200, 200, 200, 429, 429]);
    } finally {
      await a.stop();
      await b.stop();
      await store.close();
    }
  });

  it('GET /v2/me shows the user, anonymous flag, creation time, active organization and memberships', async () => {
    const user = await h.newUser();
    const me = await h.call(user, 'get', '/v2/me');
    expect(me.status).toBe(200);
    expect(me.body).toEqual({
      id: user.userId,
      anonymous: true,
      email: null,
      createdAt: h.clock.now().toISOString(),
      activeOrgSlug: null,
      activeOrgSource: null,
      memberships: [],
      credential: { kind: 'session', id: user.sessionId },
    });
  });

  it('GET /v2/me without identity is 401 in the envelope', async () => {
    const res = await h.call(null, 'get', '/v2/me');
    expect(res.status).toBe(401);
    expect(res.body).toMatchObject({ error: 'Unauthorized', status: 401, requestId: expect.any(String) });
  });

  it('refuses a principal that the edge did not seal', async () => {
    const res = await h.http.get('/v2/me').set('x-platform-principal', 'forged.seal');
    expect(res.status).toBe(401);
  });

  it('GET / reports name, version and the health of the store and the bus', async () => {
    const res = await h.http.get('/');
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      name: 'ai-platform',
      version: expect.stringMatching(/^\d+\.\d+\.\d+/),
      status: 'ok',
      checks: { store: 'ok', bus: 'ok' },
    });
  });

  it('logout revokes the session: its principal no longer resolves', async () => {
    const user = await h.newUser();
    expect((await h.call(user, 'post', '/v2/logout')).status).toBe(204);
    expect((await h.call(user, 'get', '/v2/me')).status).toBe(401);
  });
});
