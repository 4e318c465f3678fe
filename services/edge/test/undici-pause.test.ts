import type { ChildProcess } from 'node:child_process';
import http from 'node:http';
import path from 'node:path';
import { createLogger } from '@platform/kernel';
import { forkParty, partyReady, stall, stopParty } from '@platform/testkit';
import { request, startEdge, type TestEdge } from './support';

/**
 * When the edge's own process stalls past its wait for a service's answer or for auth's signing keys (a long garbage
 * collection, a starved container) while the other party answers in time, the answer counts: the bytes that arrived
 * during the stall are read before the wait is judged. The services run in a process of their own
 * (undici-pause-services.ts), which goes on answering while the test blocks this one (the edge's) for longer than the
 * wait.
 */
describe("an answer that arrived while the edge's process stalled", () => {
  let services: ChildProcess;
  let servicesUrl: string;
  let edge: TestEdge;
  const logged: Array<{ msg: string; code?: string; path?: string }> = [];

  beforeAll(async () => {
    services = forkParty(path.join(__dirname, 'undici-pause-services.ts'));
    ({ url: servicesUrl } = await partyReady<{ url: string }>(services, 'the services'));
    edge = await startEdge({
      authUrl: servicesUrl,
      legacyUrl: servicesUrl,
      // a service's answer (head, then each part of its body) is awaited 1.4 s; the stalls below last 2 s
      env: { UPSTREAM_TIMEOUT_MS: '1400', BODY_LIMIT_BYTES: String(128 << 20) },
      logger: createLogger({
        name: 'undici-pause',
        destination: { write: (line: string) => logged.push(JSON.parse(line)) },
      }),
    });
  }, 60_000);
  afterAll(async () => {
    await edge?.close();
    await stopParty(services);
  });

  /** stalls this process 2 s once the services' process says the moment has come; tells whether it did */
  const stallOnPause = () => {
    let stalled = false;
    const onPause = (m: unknown) => {
      if (m !== 'pause') return;
      services.off('message', onPause);
      // a turn later: what this process has already received is read first
      setImmediate(() => {
        stall(2_000);
        stalled = true;
      });
    };
    services.on('message', onPause);
    return () => stalled;
  };

  it("a service's answer sent within the timeout while the edge stalled past it is served, not a 504", async () => {
    const stalled = stallOnPause();
    const answer = await request(edge.url, '/legacy/v2/late-head');
    expect(stalled()).toBe(true);
    expect({ status: answer.status, body: answer.json }).toEqual({
      status: 200,
      body: { answered: 'in time' },
    });
  }, 30_000);

  it("a service's answer to an upload expecting 100-continue, sent within the timeout while the edge stalled past it, is served", async () => {
    const stalled = stallOnPause();
    // a streamed upload whose client expects 100-continue goes to the service on node:http, with the expectation
    const answer = await request(edge.url, '/legacy/v2/late-head', {
      method: 'POST',
      headers: { 'content-type': 'application/json', expect: '100-continue' },
      chunked: [Buffer.from('{"upload":'), Buffer.from('"whole"}')],
    });
    expect(stalled()).toBe(true);
    expect({ status: answer.status, body: answer.json }).toEqual({
      status: 200,
      body: { answered: 'in time' },
    });
  }, 30_000);

  it("an answer's last part sent within the timeout while the edge stalled past it ends the answer whole, not cut", async () => {
    const stalled = stallOnPause();
    const answer = await request(edge.url, '/legacy/v2/late-tail').catch((err: Error) => err);
    expect(stalled()).toBe(true);
    expect(answer).toMatchObject({ status: 200, text: 'first part, last part in time' });
  }, 30_000);

  it("an answer's part sent within the timeout while the edge stalled past it keeps the answer going to its end", async () => {
    const stalled = stallOnPause();
    // the last part is sent once the middle one, read after the stall, has reached the client: the deadline that ran
    // out during the stall has been judged by then, and the middle part moved the wait for the next one on
    const answer = await new Promise<{ status?: number; text: string; cut?: Error }>((resolve) => {
      http.get(`${edge.url}/legacy/v2/late-middle`, (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (part: string) => {
          text += part;
          if (part.includes('middle part')) services.send('resume');
        });
        res.on('end', () => resolve({ status: res.statusCode, text }));
        res.on('error', (cut) => resolve({ status: res.statusCode, text, cut }));
      });
    });
    expect(stalled()).toBe(true);
    expect(answer).toEqual({ status: 200, text: 'first part, middle part, last part' });
  }, 30_000);

  it("auth's signing keys sent within the fetch timeout while the edge stalled past it are loaded: the edge is ready", async () => {
    const stalled = stallOnPause();
    // the JWKS is fetched as the edge starts; its fetch is awaited 1 s
    const starting = await startEdge({
      authUrl: servicesUrl,
      env: { JWKS_URL: `${servicesUrl}/paused/jwks`, JWKS_FETCH_TIMEOUT_MS: '1000' },
    });
    try {
      expect(stalled()).toBe(true);
      const ready = await request(starting.adminUrl, '/readyz');
      expect({ status: ready.status, jwks: ready.json?.checks?.jwks }).toEqual({ status: 200, jwks: 'ok' });
    } finally {
      await starting.close();
    }
  }, 30_000);

  it('keeps its timeouts for a party that really is silent: 504 without a head, a cut answer without its end, no JWKS', async () => {
    logged.length = 0;
    const [noHead, noEnd, unread, noKeys] = await Promise.all([
      request(edge.url, '/legacy/v2/silent-head'),
      request(edge.url, '/legacy/v2/silent-tail').catch((err: Error) => err),
      // more than the sockets between the client and the service buffer, so the upload waits on the service
      request(edge.url, '/legacy/v2/unread-upload', {
        method: 'POST',
        headers: { 'content-type': 'application/octet-stream' },
        body: Buffer.alloc(64 << 20, 97),
      }),
      // the JWKS is fetched as the edge starts, which a fetch that does not end would hold
      startEdge({
        authUrl: servicesUrl,
        env: { JWKS_URL: `${servicesUrl}/silent/jwks`, JWKS_FETCH_TIMEOUT_MS: '1000' },
      }),
    ]);
    try {
      expect((await request(noKeys.adminUrl, '/readyz')).json?.checks).toMatchObject({
        jwks: 'JWKS not loaded yet',
      });
    } finally {
      await noKeys.close();
    }
    for (const silent of [noHead, unread])
      expect({ status: silent.status, body: silent.json }).toEqual({
        status: 504,
        body: expect.objectContaining({
          error: 'GatewayTimeout',
          status: 504,
          requestId: silent.headers['x-request-id'],
        }),
      });
    expect(noEnd).toMatchObject({ code: 'ECONNRESET' });
    const failures = logged
      .filter((line) => line.msg === 'upstream request failed')
      .map(({ path, code }) => ({ path, code }));
    expect(failures).toEqual(
      expect.arrayContaining([
        { path: '/v2/silent-head', code: 'UND_ERR_HEADERS_TIMEOUT' },
        { path: '/v2/unread-upload', code: 'UND_ERR_HEADERS_TIMEOUT' },
      ]),
    );
    // an answer cut once its head was sent is not logged
    expect(failures).toHaveLength(2);
  }, 30_000);
});
