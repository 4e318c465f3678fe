import { createServiceApp, edgePrincipal, listen, requirePrincipal, silentLogger } from '@platform/kernel';
import {
  accessToken,
  type Backends,
  bearer,
  orgKey,
  principalOf,
  rawRequest,
  request,
  SECRET,
  signSession,
  startBackends,
  startEdge,
  type TestEdge,
  workspaceKey,
} from './support';

describe('header hygiene', () => {
  let services: Backends;
  let edge: TestEdge;
  let token: string;

  beforeAll(async () => {
    services = await startBackends();
    edge = await startEdge({ ...services.urls, env: { SESSION_PRINCIPAL_SOURCE: 'jwt' } });
    token = signSession(services.key, { sub: 'real-user' });
  });
  afterAll(async () => {
    await edge.close();
    await services.close();
  });

  const raw = (path: string, lines: string[]) =>
    rawRequest(
      edge.port,
      `GET ${path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n${lines.join('\r\n')}\r\n\r\n`,
    );

  it('removes every client-sent x-platform-* header in any case or underscore spelling, keeping the API version', async () => {
    const answer = await raw('/llm/v1/x', [
      `Authorization: Bearer ${token}`,
      'X-Platform-User-Id: attacker',
      'x_platform_user_id: attacker',
      'X-PLATFORM-PRINCIPAL: forged',
      'x-platform_org-slug: acme',
      'X_Platform_Api_Key: wak_sneaky',
      'X-Platform-Api-Version: 2025-06-01',
      'x-platformer: not ours',
      'Forwarded: for=203.0.113.9;proto=https',
      'X-Real-IP: 203.0.113.9',
    ]);
    expect(answer.status).toBe(200);
    const echo = JSON.parse(answer.raw.slice(answer.raw.indexOf('\r\n\r\n') + 4));
    const names = Object.keys(echo.headers);
    expect(names.filter((n) => /^x[-_]platform[-_]/i.test(n)).sort()).toEqual([
      'x-platform-api-version',
      'x-platform-principal',
      'x-platform-user-id',
    ]);
    expect(echo.headers['x-platform-user-id']).toBe('real-user');
    expect(echo.headers['x-platformer']).toBe('not ours');
    // where the client is, only as the edge says it
    expect(echo.headers.forwarded).toBeUndefined();
    expect(echo.headers['x-real-ip']).toBeUndefined();
    expect(echo.headers['x-forwarded-for']).not.toContain('203.0.113.9');
  });

  it('drops the fields a client names in Connection (hop-by-hop, RFC 9110 7.6.1), never the ones the edge sets', async () => {
    const answer = await rawRequest(
      edge.port,
      [
        'GET /legacy/v2/bots HTTP/1.1',
        'Host: localhost',
        'Connection: close, X-Hop-Secret, x-legacy-session-token,x-forwarded-for , X-Request-Id, x-platform-user-id',
        'connection: Cookie',
        'Authorization: Bearer legacy-developer-token',
        'X-Hop-Secret: for the first hop only',
        'X-Legacy-Session-Token: r:hop',
        `Cookie: access-token=${token}; theme=dark`,
        'X-Request-Id: hop-request-1',
        'X-Kept: yes',
        '',
        '',
      ].join('\r\n'),
    );
    expect(answer.status).toBe(200);
    const echo = JSON.parse(answer.raw.slice(answer.raw.indexOf('\r\n\r\n') + 4));
    expect(echo.headers['x-hop-secret']).toBeUndefined();
    expect(echo.headers['x-legacy-session-token']).toBeUndefined();
    expect(echo.headers.cookie).toBeUndefined();
    expect(echo.headers['x-kept']).toBe('yes');
    // the edge, the hop they are meant for, still reads them (the cookie session), and what it sets itself reaches
    // the service whatever the client listed
    expect(echo.headers['x-platform-user-id']).toBe('real-user');
    expect(echo.headers['x-forwarded-for']).toBe('127.0.0.1');
    expect(echo.headers['x-request-id']).toBe('hop-request-1');
    // the legacy root's own credential is still forwarded when it is not listed
    expect(echo.headers.authorization).toBe('Bearer legacy-developer-token');
  });

  it('answers 401 to two Authorization or two x-platform-api-key fields, on every root', async () => {
    for (const path of ['/v2/me', '/llm/v1/x', '/legacy/v2/auth/accessToken', '/legacy/v2/bots']) {
      const two = await raw(path, [`Authorization: Bearer ${token}`, `authorization: Bearer ${token}`]);
      expect(two.status).toBe(401);
      const keys = await raw(path, [
        `x-platform-api-key: ${workspaceKey()}`,
        `X-Platform-Api-Key: ${workspaceKey()}`,
      ]);
      expect(keys.status).toBe(401);
    }
  });

  it('removes credentials the service does not need on the base and gateway roots', async () => {
    const answer = await request(edge.url, '/llm/v1/x', {
      headers: { ...bearer(token), cookie: `access-token=${token}`, 'x-legacy-session-token': 'legacy' },
    });
    expect(answer.status).toBe(200);
    expect(answer.json.headers.authorization).toBeUndefined();
    expect(answer.json.headers.cookie).toBeUndefined();
    expect(answer.json.headers['x-legacy-session-token']).toBeUndefined();

    const k = orgKey('acme');
    services.auth.state.answers.set(k, () => ({
      principal: principalOf({ kind: 'org_api_key', userId: null, org: { slug: 'acme' } }),
      expiresAt: null,
      cacheTtlSeconds: 30,
    }));
    const withKey = await request(edge.url, '/llm/v1/x', { headers: { 'x-platform-api-key': k } });
    expect(withKey.status).toBe(200);
    expect(withKey.json.headers['x-platform-api-key']).toBeUndefined();
    expect(withKey.json.headers['x-platform-user-id']).toBeUndefined();
    expect(withKey.json.headers['x-platform-principal']).toBeDefined();
  });

  it('passes the legacy credentials through on the legacy root, which validates them itself', async () => {
    const answer = await request(edge.url, '/legacy/v2/auth/accessToken', {
      headers: {
        authorization: 'Bearer legacy-developer-token',
        'x-legacy-session-token': 'r:abc',
        'x-platform-user-id': 'x',
      },
    });
    expect(answer.status).toBe(200);
    expect(answer.json.headers.authorization).toBe('Bearer legacy-developer-token');
    expect(answer.json.headers['x-legacy-session-token']).toBe('r:abc');
    expect(answer.json.headers['x-platform-user-id']).toBeUndefined();
    expect(answer.json.headers['x-platform-principal']).toBeUndefined();
  });

  it('forwards a valid principal on a public route when credentials are present, and ignores invalid ones', async () => {
    const anonymous = await request(edge.url, '/v2/login/anonymous', { method: 'POST' });
    expect(anonymous.status).toBe(200);
    expect(anonymous.json.headers['x-platform-principal']).toBeUndefined();
    const known = await request(edge.url, '/v2/login/anonymous', { method: 'POST', headers: bearer(token) });
    expect(known.json.headers['x-platform-user-id']).toBe('real-user');
    const stale = await request(edge.url, '/v2/login/anonymous', {
      method: 'POST',
      headers: bearer('not-a-token'),
    });
    expect(stale.status).toBe(200);
    expect(stale.json.headers['x-platform-principal']).toBeUndefined();
    const withCookieOnLegacy = await request(edge.url, '/legacy/v2/bots', {
      headers: { cookie: `access-token=${token}` },
    });
    expect(withCookieOnLegacy.json.headers['x-platform-user-id']).toBe('real-user');
    expect(withCookieOnLegacy.json.headers.cookie).toBeUndefined();
  });

  it('answers 401 on authenticated routes without credentials, and refuses path dot segments', async () => {
    for (const path of ['/v2/me', '/llm/v1/quotas/usage', '/v2/workspaces']) {
      const answer = await request(edge.url, path);
      expect(answer.status).toBe(401);
      expect(answer.json).toMatchObject({
        error: 'Unauthorized',
        status: 401,
        requestId: answer.headers['x-request-id'],
      });
    }
    expect((await request(edge.url, '/', {})).status).toBe(200);
    expect((await request(edge.url, '/oidc/jwks')).status).toBe(200);
    const dots = await raw('/v2/login/anonymous/../../v2/me', []);
    expect(dots.status).toBe(400);
    const encoded = await raw('/v2/login/anonymous/%2e%2e/%2E%2E/v2/me', []);
    expect(encoded.status).toBe(400);
  });

  it('hands a principal that a kernel service accepts through edgePrincipal, and a forged one is refused', async () => {
    const app = createServiceApp({
      name: 'svc',
      logger: silentLogger(),
      before: [edgePrincipal(SECRET)],
      routes: (r) => r.get('/v1/whoami', (req, res) => void res.json(requirePrincipal(req).user)),
    });
    const svc = await listen(app, 0, '127.0.0.1');
    const viaEdge = await startEdge({
      authUrl: services.auth.url,
      llmQuotaUrl: svc.url,
      env: { SESSION_PRINCIPAL_SOURCE: 'jwt' },
    });
    try {
      const answer = await request(viaEdge.url, '/llm/v1/whoami', {
        headers: { ...bearer(token), 'x-platform-principal': 'forged.seal' },
      });
      expect(answer.status).toBe(200);
      expect(answer.json.id).toBe('real-user');
      const direct = await request(svc.url, '/v1/whoami', {
        headers: { 'x-platform-principal': 'forged.seal' },
      });
      expect(direct.status).toBe(401);
    } finally {
      await viaEdge.close();
      await svc.close(100);
    }
  });

  it('refuses malformed opaque credentials and credentials in the wrong place without any lookup', async () => {
    const calls = services.auth.state.principalCalls.length;
    const cases: Array<Record<string, string>> = [
      bearer('at:short'),
      bearer(orgKey('acme')),
      bearer(workspaceKey()),
      { 'x-platform-api-key': accessToken() },
      { 'x-platform-api-key': 'wak_tooshort' },
      { 'x-platform-api-key': 'iak_acme_not-a-uuid' },
      { authorization: `Basic ${Buffer.from('a:b').toString('base64')}` },
      { ...bearer(token), 'x-platform-api-key': workspaceKey() },
    ];
    for (const headers of cases) {
      const answer = await request(edge.url, '/llm/v1/x', { headers });
      expect(answer.status).toBe(401);
    }
    expect(services.auth.state.principalCalls.length).toBe(calls);
  });
});
