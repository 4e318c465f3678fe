import { freePort } from '@platform/testkit';
import { type Answer, type Backends, request, startBackends, startEdge, type TestEdge } from './support';

const PAGE = 'https://app.example';

/** The CORS fields of an answer: what decides whether a browser shows it to the page that asked. */
const corsOf = (answer: Answer) => ({
  allowOrigin: answer.headers['access-control-allow-origin'],
  allowCredentials: answer.headers['access-control-allow-credentials'],
  exposed: answer.headers['access-control-expose-headers'],
  vary: answer.headers.vary,
});

const READABLE = {
  allowOrigin: PAGE,
  allowCredentials: undefined,
  exposed: 'WWW-Authenticate, Retry-After, X-Request-Id',
  vary: 'Origin',
};
const UNREADABLE = {
  allowOrigin: undefined,
  allowCredentials: undefined,
  exposed: undefined,
  vary: undefined,
};

describe("the edge's own errors on the OpenID Connect endpoints an application's page calls from its own origin", () => {
  let services: Backends;
  let edge: TestEdge;

  beforeAll(async () => {
    services = await startBackends();
    edge = await startEdge({ ...services.urls, env: { BODY_LIMIT_BYTES: '1024' } });
  });
  afterAll(async () => {
    await edge.close();
    await services.close();
  });

  it('are readable by the page: its origin named, Vary: Origin, the challenge and wait exposed, never credentials', async () => {
    const declared = await request(edge.url, '/oidc/token', {
      method: 'POST',
      headers: { origin: PAGE, 'content-type': 'application/x-www-form-urlencoded' },
      body: 'x'.repeat(2048),
    });
    expect(declared.status).toBe(413);
    expect(declared.json).toMatchObject({ code: 'PAYLOAD_TOO_LARGE' });
    expect(corsOf(declared)).toEqual(READABLE);

    // a chunked body counted as it streams to auth, refused past the limit by the proxy
    const streamed = await request(edge.url, '/oidc/token/revocation', {
      method: 'POST',
      headers: { origin: PAGE, 'content-type': 'application/x-www-form-urlencoded' },
      chunked: [Buffer.alloc(600, 97), Buffer.alloc(600, 97)],
    });
    expect(streamed.status).toBe(413);
    expect(corsOf(streamed)).toEqual(READABLE);

    const twoCredentials = await request(edge.url, '/oidc/me', {
      headers: ['Host', 'x', 'Origin', PAGE, 'Authorization', 'Bearer one', 'Authorization', 'Bearer two'],
    });
    expect(twoCredentials.status).toBe(401);
    expect(twoCredentials.headers['www-authenticate']).toBe('Bearer realm="platform"');
    expect(corsOf(twoCredentials)).toEqual(READABLE);
  });

  it('are readable when auth cannot be reached (503), so the page can say so', async () => {
    const nowhere = await freePort();
    const alone = await startEdge({ authUrl: `http://127.0.0.1:${nowhere}` });
    try {
      for (const path of ['/oidc/.well-known/openid-configuration', '/oidc/jwks', '/oidc/me']) {
        const answer = await request(alone.url, path, { headers: { origin: PAGE } });
        expect({ path, status: answer.status }).toEqual({ path, status: 503 });
        expect(corsOf(answer)).toEqual(READABLE);
      }
    } finally {
      await alone.close();
    }
  });

  it("leave auth's own answers as auth made them: the edge adds no CORS field to what it forwards", async () => {
    const forwarded = await request(edge.url, '/oidc/token', {
      method: 'POST',
      headers: { origin: PAGE, 'content-type': 'application/x-www-form-urlencoded' },
      body: 'grant_type=authorization_code',
    });
    expect([forwarded.status, forwarded.json.upstream]).toEqual([200, 'auth']);
    expect(corsOf(forwarded)).toEqual(UNREADABLE);
  });

  it('carry no CORS field elsewhere, without an Origin, or with an Origin no page of its own sends', async () => {
    const elsewhere = await request(edge.url, '/v2/me', { method: 'POST', headers: { origin: PAGE } });
    expect(elsewhere.status).toBe(401);
    expect(corsOf(elsewhere)).toEqual(UNREADABLE);
    for (const origin of [undefined, 'null', 'https://app.example/page', 'app.example']) {
      const answer = await request(edge.url, '/oidc/token', {
        method: 'POST',
        headers: origin === undefined ? {} : { origin },
        body: 'x'.repeat(2048),
      });
      expect({ origin, status: answer.status }).toEqual({ origin, status: 413 });
      expect(corsOf(answer)).toEqual(UNREADABLE);
    }
  });
});
