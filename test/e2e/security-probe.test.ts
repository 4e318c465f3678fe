import { randomBytes } from 'node:crypto';
import { statSync } from 'node:fs';
import { get as httpGet } from 'node:http';
import { connect } from 'node:net';
import path from 'node:path';
import { createInProcessBus } from '@platform/bus';
import { listen, loadConfig, type RunningServer, silentLogger } from '@platform/kernel';
import { createEdgeService, edgeConfigSchema } from '../../services/edge/src';
import { callJson, startTestPlatform, type TestPlatform } from '../harness';

/**
 * Issue 14's black-box probe, replayed against the whole platform through the edge: each case is a
 * request that harmed a user or answered 5xx before the fix.
 */
const SECRET = randomBytes(32).toString('base64url');

interface Raw {
  status: number;
  headers: string;
  body: string;
}

/** Sends bytes as they are (fragments, bad escapes, odd bodies), reads the answer. */
function raw(base: string, head: string, body: Buffer | string = ''): Promise<Raw> {
  const { port } = new URL(base);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), '127.0.0.1');
    let text = '';
    socket.on('data', (d) => {
      text += d.toString('utf8');
    });
    socket.on('end', () => {
      const split = text.indexOf('\r\n\r\n');
      resolve({
        status: Number(text.slice(9, 12)),
        headers: text.slice(0, split),
        body: text.slice(split + 4),
      });
    });
    socket.on('error', reject);
    socket.write(`${head.replace(/\n/g, '\r\n')}\r\n\r\n`);
    socket.end(body);
  });
}

const request = async (
  url: string,
  method: string,
  headers: Record<string, string> = {},
  body?: string,
  // biome-ignore lint/suspicious/noExplicitAny: answers of many shapes, asserted field by field
): Promise<{ status: number; headers: Headers; body: any }> => {
  const res = await fetch(url, { method, headers, body });
  const text = await res.text();
  let parsed: unknown = text;
  try {
    parsed = text ? JSON.parse(text) : null;
  } catch {
    // not JSON
  }
  return { status: res.status, headers: res.headers, body: parsed };
};

describe('the platform against the issue 14 probe', () => {
  let p: TestPlatform;
  let session: string;
  let browserSession: string;
  /** a user in 1,000 organizations (item 1) */
  let member: string;

  beforeAll(async () => {
    // item 1 makes 1,000 organizations as one user, past the default ORGANIZATIONS_PER_USER_LIMIT
    p = await startTestPlatform({
      env: { PLATFORM_INTERNAL_SECRET: SECRET, ORGANIZATIONS_PER_USER_LIMIT: '1000' },
    });
    session = (await callJson(`${p.baseUrl}/v2/login/anonymous`, 'POST')).body.token;
    browserSession = (await callJson(`${p.baseUrl}/v2/login/anonymous`, 'POST')).body.token;
  });
  afterAll(() => p.stop());

  it('item 1: a user in 1,000 organizations keeps working, and the identity the edge hands on stays under 4 KB', async () => {
    member = (await callJson(`${p.baseUrl}/v2/login/anonymous`, 'POST')).body.token;
    const slugs = Array.from({ length: 1000 }, (_, i) => `org-${i}-${'x'.repeat(48)}`);
    for (let i = 0; i < slugs.length; i += 20) {
      const batch = slugs.slice(i, i + 20);
      const created = await Promise.all(
        batch.map((slug) =>
          callJson(`${p.baseUrl}/v2/orgs`, 'POST', { bearer: member, body: { slug, name: slug } }),
        ),
      );
      expect(created.map((c) => c.status)).toEqual(batch.map(() => 201));
    }
    const me = await callJson(`${p.baseUrl}/v2/me`, 'GET', { bearer: member });
    expect(me.status).toBe(200);
    expect(me.body.memberships ?? me.body.orgs ?? []).toHaveLength(1000);

    // The header as a service receives it: an edge on the real auth, its gateway root on a capture.
    let principalHeader = '';
    const capture: RunningServer = await listen(
      (req, res) => {
        principalHeader = String(req.headers['x-platform-principal'] ?? '');
        res.end('{}');
      },
      0,
      '127.0.0.1',
    );
    const edge = await createEdgeService({
      config: loadConfig(edgeConfigSchema, {
        PLATFORM_INTERNAL_SECRET: SECRET,
        AUTH_URL: p.upstreams.auth,
        LLM_QUOTA_URL: capture.url,
        LEGACY_AGENT_URL: capture.url,
        LOG_LEVEL: 'silent',
      }),
      logger: silentLogger(),
      clock: { now: () => new Date() },
      bus: createInProcessBus(),
    });
    await edge.start();
    const server = await listen(edge.handler, 0, '127.0.0.1');
    try {
      const viaEdge = await callJson(`${server.url}/llm/v1/anything`, 'GET', { bearer: member });
      expect(viaEdge.status).toBe(200);
      expect(principalHeader.length).toBeGreaterThan(100);
      expect(Buffer.byteLength(principalHeader)).toBeLessThan(4096);
    } finally {
      await server.close(100);
      await edge.stop();
      await capture.close(100);
    }
  }, 120_000);

  it('item 1: a request the edge accepts (a head near its 16 KB limit) never gets a 431 from a service', async () => {
    // The edge replaces the JWT by the principal of the active organization (an owner's role).
    const big = await request(`${p.baseUrl}/v2/me`, 'GET', {
      authorization: `Bearer ${member}`,
      cookie: `pref=${'x'.repeat(15_200)}`,
    });
    expect(big.status).toBe(200);
  });

  it('a Host that is no host and port is refused 400 in the envelope; IPv6 literals and ports are served', async () => {
    for (const host of ['evil example', 'a/b', 'user@127.0.0.1', '<script>']) {
      const answer = await raw(
        p.baseUrl,
        `GET /v2/me HTTP/1.1\nHost: ${host}\nAuthorization: Bearer ${session}`,
      );
      expect({ host, status: answer.status }).toEqual({ host, status: 400 });
      expect(JSON.parse(answer.body)).toMatchObject({
        status: 400,
        error: 'BadRequest',
        code: 'HEADER_POLICY_VIOLATION',
      });
    }
    const { port } = new URL(p.baseUrl);
    for (const host of [`[::1]:${port}`, '[::1]', `127.0.0.1:${port}`, 'api.example.test:8443']) {
      const status = await new Promise<number | undefined>((resolve, reject) =>
        httpGet(
          {
            host: '127.0.0.1',
            port,
            path: '/v2/me',
            headers: { host, authorization: `Bearer ${session}` },
            agent: false,
          },
          (res) => resolve(res.resume().statusCode),
        ).on('error', reject),
      );
      expect({ host, status }).toEqual({ host, status: 200 });
    }
  });

  it("a request Node cannot read is answered in the envelope with a request id, not Node's bare status line", async () => {
    const cases: Array<[string, number, string]> = [
      ['GET /v2/me HTTP/1.1\nHost: x\nBad Header: space in its name', 400, 'BadRequest'],
      ['GET /v2/me HTTP/1.1\nHost: x\nContent-Length: 1\nContent-Length: 2', 400, 'BadRequest'],
      ['NOT HTTP AT ALL', 400, 'BadRequest'],
      [`GET /v2/me HTTP/1.1\nHost: x\nX-Big: ${'y'.repeat(20_000)}`, 431, 'RequestHeaderFieldsTooLarge'],
    ];
    for (const [head, status, error] of cases) {
      const answer = await raw(p.baseUrl, head);
      expect({ head: head.slice(0, 40), status: answer.status }).toEqual({ head: head.slice(0, 40), status });
      const envelope = JSON.parse(answer.body);
      expect(envelope).toMatchObject({
        status,
        error,
        message: expect.any(String),
        requestId: expect.any(String),
      });
      expect(answer.headers).toContain(`x-request-id: ${envelope.requestId}`);
      expect(answer.headers.toLowerCase()).toContain('content-type: application/json');
      // the edge's fixed security headers, as on every other answer of it (item 7)
      expect(answer.headers).toContain('x-content-type-options: nosniff');
      expect(answer.headers).toContain('cache-control: no-store');
    }
  });

  it('item 2: a fragment cannot dodge the quota endpoint’s checks (400, as HTTP never sends one)', async () => {
    const answer = await raw(
      p.baseUrl,
      `GET /llm/v1/quotas/usage#x HTTP/1.1\nHost: x\nAuthorization: Bearer ${session}\nConnection: close`,
    );
    expect(answer.status).toBe(400);
    expect(JSON.parse(answer.body)).toMatchObject({ status: 400, code: 'INVALID_PATH' });
  });

  it('item 3: an unsupported or undecodable Content-Encoding is a 4xx in the envelope on every root, never a 500', async () => {
    const targets: Array<[string, string, Record<string, string>]> = [
      [p.legacyUrl, '/v2/auth/login', {}],
      [p.baseUrl, '/v2/orgs', { authorization: `Bearer ${session}` }],
      [p.gatewayUrl, '/v1/quotas/settings', { authorization: `Bearer ${session}` }],
    ];
    for (const [root, route, auth] of targets) {
      for (const [encoding, expected] of [
        ['gzip', 400],
        ['compress', 415],
        ['x-unknown', 415],
      ] as const) {
        const answer = await request(
          `${root}${route}`,
          'POST',
          { ...auth, 'content-type': 'application/json', 'content-encoding': encoding },
          '{}',
        );
        expect({ route, encoding, status: answer.status }).toEqual({ route, encoding, status: expected });
        expect(answer.body.status ?? answer.body.status?.code).toBe(expected);
      }
    }
  });

  it('item 4: malformed percent-encoding in a path parameter is a 400 in the envelope', async () => {
    for (const [root, method, route] of [
      [p.baseUrl, 'GET', '/v2/workspaces/%zz'],
      [p.legacyUrl, 'GET', '/v2/bots/%zz'],
      [p.baseUrl, 'DELETE', '/v2/user/accessTokens/%u0041'],
    ] as const) {
      const answer = await raw(
        root,
        `${method} ${new URL(root).pathname.replace(/\/$/, '')}${route} HTTP/1.1\nHost: x\nAuthorization: Bearer ${session}\nConnection: close`,
      );
      expect({ route, status: answer.status }).toEqual({ route, status: 400 });
      expect(JSON.parse(answer.body)).toMatchObject({ status: 400 });
    }
    // And on a service's own port, past the edge, the kernel answers the same.
    const direct = await request(`${p.upstreams.legacyAgent}/v1/intents/%zz`, 'GET');
    expect(direct.status).toBe(400);
  });

  it('item 5: metrics, health and internal routes are not served through the edge nor on the services’ public ports', async () => {
    for (const url of [
      `${p.legacyUrl}/metrics`,
      `${p.legacyUrl}/healthz`,
      `${p.legacyUrl}/readyz`,
      `${p.baseUrl}/METRICS`,
      `${p.baseUrl}/metrics/`,
      `${p.gatewayUrl}/metrics`,
    ]) {
      const answer = await request(url, 'GET', { authorization: `Bearer ${session}` });
      expect({ url, status: answer.status }).toEqual({ url, status: 404 });
    }
    for (const upstream of Object.values(p.upstreams)) {
      expect((await request(`${upstream}/metrics`, 'GET')).status).toBe(404);
    }
    for (const admin of Object.values(p.admin)) {
      expect((await request(`${admin}/readyz`, 'GET')).status).toBe(200);
      expect((await request(`${admin}/metrics`, 'GET')).body).toContain('http_requests_total');
    }
  });

  it('item 7: security headers on every answer, no-store on answers carrying secrets', async () => {
    const anonymous = await request(`${p.baseUrl}/v2/login/anonymous`, 'POST');
    const token = await request(
      `${p.baseUrl}/v2/user/accessTokens`,
      'POST',
      {
        authorization: `Bearer ${session}`,
        'content-type': 'application/json',
      },
      JSON.stringify({ name: 'probe', expiresAt: new Date(Date.now() + 86_400_000).toISOString() }),
    );
    const username = `probe${randomBytes(4).toString('hex')}`;
    const signup = await request(
      `${p.legacyUrl}/v2/auth/signup`,
      'POST',
      { 'content-type': 'application/json' },
      JSON.stringify({ username, password: 'a-long-password' }),
    );
    const login = await request(
      `${p.legacyUrl}/v2/auth/login`,
      'POST',
      { 'content-type': 'application/json' },
      JSON.stringify({ username, password: 'a-long-password' }),
    );
    const notFound = await request(`${p.baseUrl}/nowhere`, 'GET');
    for (const answer of [anonymous, token, signup, login, notFound]) {
      expect(answer.status).toBeLessThan(500);
      expect(answer.headers.get('x-content-type-options')).toBe('nosniff');
      expect(answer.headers.get('x-frame-options')).toBe('DENY');
      expect(answer.headers.get('content-security-policy')).toContain("frame-ancestors 'none'");
      expect(answer.headers.get('cache-control')).toBe('no-store');
    }
    expect([anonymous.status, token.status, signup.status, login.status]).toEqual([200, 201, 200, 200]);
    // The public JWKS stays cacheable, as its route says.
    expect((await request(`${p.baseUrl}/oidc/jwks`, 'GET')).headers.get('cache-control')).toMatch(/public/);
  });

  it('item 8: a client’s X-Forwarded-Host never names the server of an OpenAPI document', async () => {
    for (const root of [p.baseUrl, p.gatewayUrl, p.legacyUrl]) {
      const doc = await request(`${root}/openapi.json`, 'GET', {
        'x-forwarded-host': 'evil.example',
        'x-forwarded-proto': 'https',
      });
      expect(doc.status).toBe(200);
      const server = doc.body.servers[0].url as string;
      expect(server).not.toContain('evil.example');
      expect(server.startsWith(root.replace('localhost', '127.0.0.1'))).toBe(true);
    }
  });

  it('item 9: a new X-Forwarded-For value does not give a new anonymous-login budget', async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 25; i++) {
      const answer = await request(`${p.baseUrl}/v2/login/anonymous`, 'POST', {
        'x-forwarded-for': `10.1.2.${i}`,
      });
      statuses.push(answer.status);
    }
    expect(statuses).toContain(429);
    expect(statuses.filter((s) => s === 200).length).toBeLessThanOrEqual(20);
  });

  it('item 10: the signing key’s secret and the data files are readable by their owner only', () => {
    const mode = (file: string) => statSync(file).mode & 0o777;
    expect(mode(path.join(p.dataDir, 'signing-keys.secret'))).toBe(0o600);
    expect(mode(path.join(p.dataDir, 'auth', 'signing_keys.db'))).toBe(0o600);
    expect(mode(path.join(p.dataDir, 'auth'))).toBe(0o700);
  });

  it('item 11: logout by a cross-site request (cookie only) is refused; with the CSRF header it works', async () => {
    const cookie = `access-token=${browserSession}; csrf-token=tok-123`;
    const crossSite = await request(`${p.baseUrl}/v2/logout`, 'POST', { cookie });
    expect(crossSite.status).toBe(403);
    expect(crossSite.body).toMatchObject({ code: 'CSRF_TOKEN_INVALID' });
    expect((await callJson(`${p.baseUrl}/v2/me`, 'GET', { bearer: browserSession })).status).toBe(200);
    const sameSite = await request(`${p.baseUrl}/v2/logout`, 'POST', { cookie, 'x-csrf-token': 'tok-123' });
    expect(sameSite.status).toBe(204);
  });
});
