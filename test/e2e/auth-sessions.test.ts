import { createPublicKey } from 'node:crypto';
import { waitFor } from '@platform/testkit';
import jwt from 'jsonwebtoken';
import { startTestPlatform, type TestPlatform } from '../harness';

/** Anonymous sessions, the JWKS and the status route as a client reaches them: through the edge. */

async function call(
  p: TestPlatform,
  method: string,
  path: string,
  init: { token?: string; headers?: Record<string, string> } = {},
) {
  const headers: Record<string, string> = { ...init.headers };
  if (init.token) headers.authorization = `Bearer ${init.token}`;
  const res = await fetch(`${p.baseUrl}${path}`, { method, headers });
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: text ? JSON.parse(text) : null };
}

describe('auth through the edge: anonymous sessions', () => {
  let p: TestPlatform;
  beforeAll(async () => {
    p = await startTestPlatform({ env: { ANONYMOUS_LOGIN_RATE_LIMIT: '1000' } });
  });
  afterAll(() => p.stop());

  it('an anonymous login’s token verifies with jsonwebtoken against {base_url}/oidc/jwks', async () => {
    const login = await call(p, 'POST', '/v2/login/anonymous');
    expect(login.status).toBe(200);
    expect(Object.keys(login.body).sort()).toEqual(['sessionId', 'token', 'userId']);
    const jwks = await call(p, 'GET', '/oidc/jwks');
    expect(jwks.status).toBe(200);
    expect(jwks.headers.get('cache-control')).toMatch(/max-age=\d+/);
    const { header } = jwt.decode(login.body.token, { complete: true })!;
    const jwk = jwks.body.keys.find((k: { kid: string }) => k.kid === header.kid);
    expect(jwk).toMatchObject({ kty: 'RSA', alg: 'RS256', use: 'sig' });
    expect(jwk.d).toBeUndefined();
    const claims = jwt.verify(login.body.token, createPublicKey({ key: jwk, format: 'jwk' }), {
      algorithms: ['RS256'],
      issuer: 'http://localhost:8080',
      audience: 'platform-api',
    }) as jwt.JwtPayload;
    expect(claims).toMatchObject({
      sub: login.body.userId,
      platformSessionId: login.body.sessionId,
      scope: 'openid',
      client_id: expect.any(String),
      jti: expect.any(String),
    });
    expect(claims.exp! - claims.iat!).toBe(2_592_000);
  });

  it('the session works: GET /v2/me shows the anonymous user', async () => {
    const { body } = await call(p, 'POST', '/v2/login/anonymous');
    const me = await call(p, 'GET', '/v2/me', { token: body.token });
    expect(me.status).toBe(200);
    expect(me.body).toMatchObject({ id: body.userId, anonymous: true, activeOrgSlug: null, memberships: [] });
  });

  it('GET /v2/me without credentials, or with a forged identity header, is 401', async () => {
    expect((await call(p, 'GET', '/v2/me')).status).toBe(401);
    const forged = await call(p, 'GET', '/v2/me', {
      headers: { 'x-platform-user-id': 'someone', 'x-platform-principal': 'forged.seal' },
    });
    expect(forged.status).toBe(401);
  });

  it('GET / reports the platform’s name, version and the health of the store and the bus', async () => {
    const res = await call(p, 'GET', '/');
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      name: expect.any(String),
      version: expect.any(String),
      checks: { store: 'ok', bus: 'ok' },
    });
  });

  it('the internal principal route is not reachable through the edge, even with a valid session', async () => {
    const { body } = await call(p, 'POST', '/v2/login/anonymous');
    const res = await call(p, 'POST', '/internal/principal', {
      token: body.token,
      headers: { 'x-platform-internal-secret': 'guess-guess-guess-guess-guess-guess' },
    });
    expect(res.status).not.toBe(200);
    expect(res.body?.principal).toBeUndefined();
  });

  it('logout revokes the session at the edge', async () => {
    const { body } = await call(p, 'POST', '/v2/login/anonymous');
    expect((await call(p, 'GET', '/v2/me', { token: body.token })).status).toBe(200);
    expect((await call(p, 'POST', '/v2/logout', { token: body.token })).status).toBe(204);
    // The edge drops its cached answer on auth.credential.revoked.
    await waitFor(async () => (await call(p, 'GET', '/v2/me', { token: body.token })).status === 401, {
      timeoutMs: 10_000, // the event reaches the edge: a loaded machine may take seconds
      intervalMs: 100,
      what: 'the revoked session to be refused',
    });
  });
});

describe('auth through the edge: anonymous login rate limit', () => {
  let p: TestPlatform;
  beforeAll(async () => {
    p = await startTestPlatform({
      env: { ANONYMOUS_LOGIN_RATE_LIMIT: '3', ANONYMOUS_LOGIN_RATE_WINDOW_SECONDS: '60' },
    });
  });
  afterAll(() => p.stop());

  it('limits anonymous logins per client address: 429 RATE_LIMITED with Retry-After', async () => {
    for (let i = 0; i < 3; i++) expect((await call(p, 'POST', '/v2/login/anonymous')).status).toBe(200);
    const limited = await call(p, 'POST', '/v2/login/anonymous');
    expect(limited.status).toBe(429);
    expect(limited.body).toMatchObject({ error: 'RATE_LIMITED', status: 429 });
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0);
  });
});
