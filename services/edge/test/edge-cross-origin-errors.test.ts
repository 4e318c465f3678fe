import http, { type ServerResponse } from 'node:http';
import {
  type Answer,
  type Backends,
  request,
  startBackends,
  startEdge,
  startUpstream,
  type TestEdge,
  type Upstream,
} from './support';

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
    // port 9 (discard), which nothing here listens on: a port found free a moment before may be another test's
    // server by the time the edge calls it (no test is given one below 1024)
    const alone = await startEdge({ authUrl: 'http://127.0.0.1:9' });
    try {
      for (const path of ['/oidc/.well-known/openid-configuration', '/oidc/jwks', '/oidc/me']) {
        const answer = await request(alone.url, path, { headers: { origin: PAGE } });
        expect({ path, status: answer.status }).toEqual({ path, status: 503 });
        expect(corsOf(answer)).toEqual(READABLE);
      }
      // A request a browser asks about first (userinfo with its Bearer token) never gets that far: the preflight
      // meets the 503, and a preflight that is not 2xx fails whatever its fields, so the page sees a network error.
      // The edge must not answer it as a passing preflight (auth alone says which origins may send such requests).
      const preflight = await request(alone.url, '/oidc/me', {
        method: 'OPTIONS',
        headers: {
          origin: PAGE,
          'access-control-request-method': 'GET',
          'access-control-request-headers': 'authorization',
        },
      });
      expect(preflight.status).toBe(503);
      expect(
        Object.keys(preflight.headers).filter((name) =>
          /^access-control-allow-(?!origin)|^access-control-max-age/.test(name),
        ),
      ).toEqual([]);
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

  it('name the Origin exactly as sent, and none when the request carries several', async () => {
    const tooLarge = (headers: Record<string, string> | string[]) =>
      request(edge.url, '/oidc/token', { method: 'POST', headers, body: 'x'.repeat(2048) });
    // a browser compares the field with its own serialization byte for byte: an echo is right in any letter case
    const upper = await tooLarge({ origin: 'HTTPS://APP.EXAMPLE' });
    expect(corsOf(upper)).toEqual({ ...READABLE, allowOrigin: 'HTTPS://APP.EXAMPLE' });
    // two Origin fields reach the edge joined (`a, b`); a list is no origin
    const twice = await tooLarge(['Host', 'x', 'Origin', PAGE, 'Origin', 'https://other.example']);
    const listed = await tooLarge({ origin: `${PAGE}, https://other.example` });
    for (const answer of [twice, listed]) {
      expect(answer.status).toBe(413);
      expect(corsOf(answer)).toEqual(UNREADABLE);
    }
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

describe("the edge's own errors on those endpoints when auth answers badly or not at all", () => {
  let auth: Upstream;
  let edge: TestEdge;
  let impatient: TestEdge;
  const silent: ServerResponse[] = [];

  beforeAll(async () => {
    auth = await startUpstream('auth', {
      // the connection closes under the edge's request
      '/oidc/me': (req) => {
        req.socket.destroy();
        return true;
      },
      '/oidc/.well-known/openid-configuration': (_req, res) => {
        silent.push(res);
        return true;
      },
      // auth's answer head with its own CORS fields, then its connection lost mid-body
      '/oidc/token/revocation': (_req, res) => {
        res.writeHead(200, {
          'access-control-allow-origin': PAGE,
          vary: 'Origin, Accept-Encoding',
          'content-type': 'application/json',
          'content-length': '100',
        });
        res.write('{"revoked":');
        setImmediate(() => res.socket?.destroy());
        return true;
      },
    });
    edge = await startEdge({ authUrl: auth.url });
    impatient = await startEdge({ authUrl: auth.url, env: { UPSTREAM_TIMEOUT_MS: '1000' } });
  });
  afterAll(async () => {
    for (const res of silent) res.destroy();
    await edge.close();
    await impatient.close();
    await auth.close();
  });

  it('are readable: a broken answer (502), a silent auth (504), a body that stops arriving (408)', async () => {
    const broken = await request(edge.url, '/oidc/me', { headers: { origin: PAGE } });
    expect(broken.status).toBe(502);
    expect(corsOf(broken)).toEqual(READABLE);

    const timedOut = await request(impatient.url, '/oidc/.well-known/openid-configuration', {
      headers: { origin: PAGE },
    });
    expect(timedOut.status).toBe(504);
    expect(corsOf(timedOut)).toEqual(READABLE);

    const stalled = await answerOf(impatient.url, '/oidc/token', {
      method: 'POST',
      headers: { origin: PAGE, 'content-length': '100' },
      body: 'grant_type',
    });
    expect(stalled.status).toBe(408);
    expect(corsOf(stalled)).toEqual(READABLE);
  });

  it("add nothing once auth's answer has begun: its head alone, then the connection cut", async () => {
    const cut = await answerOf(edge.url, '/oidc/token/revocation', {
      method: 'POST',
      headers: { origin: PAGE, 'content-length': '7' },
      body: 'token=x',
    });
    expect(cut.status).toBe(200);
    expect(cut.complete).toBe(false);
    expect(corsOf(cut)).toEqual({
      allowOrigin: PAGE,
      allowCredentials: undefined,
      exposed: undefined,
      vary: 'Origin, Accept-Encoding',
    });
  });
});

/**
 * One request whose body is written as given and the request left open (a body shorter than its Content-Length
 * stalls): the answer's head, and whether its body arrived whole.
 */
function answerOf(
  base: string,
  path: string,
  options: { method: string; headers: Record<string, string>; body: string },
): Promise<Answer & { complete: boolean }> {
  const url = new URL(path, base);
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: url.hostname,
        port: url.port,
        path,
        method: options.method,
        headers: options.headers,
        agent: false,
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          text += chunk;
        });
        const done = () =>
          resolve({
            status: res.statusCode!,
            headers: res.headers,
            text,
            json: undefined,
            complete: res.complete,
          });
        res.once('end', done);
        res.once('aborted', done);
        res.once('error', done);
      },
    );
    req.on('error', reject);
    req.write(options.body);
  });
}
