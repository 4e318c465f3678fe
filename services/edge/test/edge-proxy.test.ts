import { once } from 'node:events';
import http from 'node:http';
import { connect, type Socket } from 'node:net';
import { createServiceApp, listen, silentLogger } from '@platform/kernel';
import { freePort, waitFor } from '@platform/testkit';
import {
  type Backends,
  bearer,
  rawRequest,
  request,
  signSession,
  startBackends,
  startEdge,
  startUpstream,
  type TestEdge,
} from './support';

describe('edge routing and proxying', () => {
  let services: Backends;
  let edge: TestEdge;
  let token: string;

  beforeAll(async () => {
    services = await startBackends({
      quotaRoutes: {
        '/slow': () => true, // never answers
        '/reset': (req) => {
          req.socket.destroy();
          return true;
        },
        '/cookies': (_req, res) => {
          res.setHeader('set-cookie', ['a=1; Path=/', 'b=2; Path=/']);
          res.setHeader('x-upstream', 'yes');
          res.setHeader('keep-alive', 'timeout=5');
          res.end('{}');
          return true;
        },
        '/stream': (_req, res) => {
          res.setHeader('content-type', 'text/plain');
          res.write('first ');
          setTimeout(() => res.end('second'), 20);
          return true;
        },
      },
    });
    edge = await startEdge({
      ...services.urls,
      env: {
        SESSION_PRINCIPAL_SOURCE: 'jwt',
        UPSTREAM_TIMEOUT_MS: '300',
        BODY_LIMIT_BYTES: '1024',
      },
    });
    token = signSession(services.key);
  });
  afterAll(async () => {
    await edge.close();
    await services.close();
  });

  it('sends each root to its service, stripping the gateway and legacy prefixes and keeping the query', async () => {
    const base = await request(edge.url, '/v2/me?x=1', { headers: bearer(token) });
    expect(base.json).toMatchObject({ upstream: 'auth', url: '/v2/me?x=1' });
    const gateway = await request(edge.url, '/llm/v1/quotas/things?y=2', { headers: bearer(token) });
    expect(gateway.json).toMatchObject({ upstream: 'llm-quota', url: '/v1/quotas/things?y=2' });
    const legacyRoot = await request(edge.url, '/legacy/v2/auth/accessToken');
    expect(legacyRoot.json).toMatchObject({ upstream: 'legacy-agent', url: '/v2/auth/accessToken' });
    const bare = await request(edge.url, '/llm?z=3', { headers: bearer(token) });
    expect(bare.json).toMatchObject({ upstream: 'llm-quota', url: '/?z=3' });
    // A name that merely starts like a prefix is the base root's.
    const lookalike = await request(edge.url, '/llmx/v2', { headers: bearer(token) });
    expect(lookalike.json).toMatchObject({ upstream: 'auth', url: '/llmx/v2' });
  });

  it('answers /healthz, /readyz and /metrics on its admin listener, labelling proxied requests by root', async () => {
    expect((await request(edge.adminUrl, '/healthz')).json).toEqual({ status: 'ok', service: 'edge' });
    const ready = await request(edge.adminUrl, '/readyz');
    expect(ready.status).toBe(200);
    expect(ready.json.checks).toEqual({ jwks: 'ok', bus: 'ok' });
    await request(edge.url, '/llm/v1/some/raw/path/123', { headers: bearer(token) });
    const metrics = await request(edge.adminUrl, '/metrics');
    expect(metrics.text).toMatch(/http_requests_total\{[^}]*route="gateway"[^}]*status="200"/);
    expect(metrics.text).toMatch(/http_request_duration_seconds_bucket\{[^}]*route="gateway"/);
    expect(metrics.text).not.toContain('/some/raw/path');
  });

  it('accepts, returns and forwards a request id, and makes one when there is none or it is malformed', async () => {
    const given = await request(edge.url, '/llm/v1/x', {
      headers: { ...bearer(token), 'x-request-id': 'abc-123' },
    });
    expect(given.headers['x-request-id']).toBe('abc-123');
    expect(given.json.headers['x-request-id']).toBe('abc-123');
    const made = await request(edge.url, '/llm/v1/x', { headers: bearer(token) });
    expect(made.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
    expect(made.json.headers['x-request-id']).toBe(made.headers['x-request-id']);
    const bad = await request(edge.url, '/llm/v1/x', {
      headers: { ...bearer(token), 'x-request-id': 'no spaces allowed' },
    });
    expect(bad.headers['x-request-id']).not.toBe('no spaces allowed');
    const refused = await request(edge.url, '/v2/me');
    expect(refused.json.requestId).toBe(refused.headers['x-request-id']);
  });

  it('reuses kept-alive upstream connections', async () => {
    const before = services.legacy.connections();
    for (let i = 0; i < 20; i++) await request(edge.url, '/legacy/v2/bots');
    expect(services.legacy.connections() - before).toBeLessThanOrEqual(1);
  });

  it('closes a connection it opened to a service and left unused before the service times it out (408)', async () => {
    const started: string[] = [];
    const timeouts: string[] = [];
    const sockets: Socket[] = [];
    const service = await listen(
      (req, res) => {
        started.push(req.url ?? '');
        if (req.url !== '/v2/slow') res.end('{}');
      },
      0,
      '127.0.0.1',
    );
    service.server.on('connection', (socket: Socket) => sockets.push(socket));
    service.server.on('clientError', (err: Error & { code?: string }) => {
      if (err.code === 'ERR_HTTP_REQUEST_TIMEOUT') timeouts.push(err.code);
    });
    const viaEdge = await startEdge({
      authUrl: services.auth.url,
      legacyUrl: service.url,
      env: { SESSION_PRINCIPAL_SOURCE: 'jwt' },
    });
    try {
      // an answer with the service's Keep-Alive field (65 s) first, on the connection the next request takes
      expect((await request(viaEdge.url, '/legacy/v2/ok')).status).toBe(200);
      const client = connect(viaEdge.port, '127.0.0.1');
      await once(client, 'connect');
      client.write('GET /legacy/v2/slow HTTP/1.1\r\nhost: x\r\n\r\n');
      await waitFor(() => started.includes('/v2/slow'), { what: 'the slow request to reach the service' });
      // the client leaves: the edge cancels the upstream request, and undici opens a connection for it anyway
      client.destroy();
      const unused = await waitFor(() => sockets[1], {
        what: "undici's connection for the cancelled request",
      });
      await waitFor(() => unused.destroyed, {
        timeoutMs: 20_000,
        what: 'the unused connection to be closed',
      });
      expect(unused.bytesRead).toBe(0);
      expect(timeouts).toEqual([]);
    } finally {
      await viaEdge.close();
      await service.close(100);
    }
  });

  it('passes the upstream answer headers through, repeated ones included, without hop-by-hop fields', async () => {
    const answer = await request(edge.url, '/llm/cookies', { headers: bearer(token) });
    expect(answer.headers['set-cookie']).toEqual(['a=1; Path=/', 'b=2; Path=/']);
    expect(answer.headers['x-upstream']).toBe('yes');
    expect(answer.headers['keep-alive']).toBeUndefined();
  });

  it('streams an upstream answer through as it comes', async () => {
    const answer = await request(edge.url, '/llm/stream', { headers: bearer(token) });
    expect(answer.status).toBe(200);
    expect(answer.text).toBe('first second');
  });

  it('answers 504 in the envelope when the upstream stays silent', async () => {
    const answer = await request(edge.url, '/llm/slow', { headers: bearer(token) });
    expect(answer.status).toBe(504);
    expect(answer.json).toMatchObject({
      error: 'GatewayTimeout',
      status: 504,
      requestId: answer.headers['x-request-id'],
    });
  });

  it('waits GATEWAY_UPSTREAM_TIMEOUT_MS for llm-gateway, whose completions are silent while the model answers', async () => {
    const thinking = (_req: http.IncomingMessage, res: http.ServerResponse) => {
      setTimeout(() => res.end('{"answer":true}'), 2_000);
      return true;
    };
    const gateway = await startUpstream('llm-gateway', { '/v1/thinking': thinking, '/v1/hung': () => true });
    const slowQuota = await startUpstream('llm-quota', { '/v1/quotas/thinking': thinking });
    const viaEdge = await startEdge({
      authUrl: services.auth.url,
      llmQuotaUrl: slowQuota.url,
      env: {
        SESSION_PRINCIPAL_SOURCE: 'jwt',
        LLM_GATEWAY_URL: gateway.url,
        UPSTREAM_TIMEOUT_MS: '300',
        GATEWAY_UPSTREAM_TIMEOUT_MS: '3500',
      },
    });
    try {
      // (undici's timers are coarse below a second or so: the delays leave room)
      const [slow, hung, quotaSlow] = await Promise.all(
        ['/llm/v1/thinking', '/llm/v1/hung', '/llm/v1/quotas/thinking'].map((path) =>
          request(viaEdge.url, path, { headers: bearer(token) }),
        ),
      );
      expect({ status: slow.status, body: slow.json }).toEqual({ status: 200, body: { answer: true } });
      expect(hung.json).toMatchObject({ error: 'GatewayTimeout', status: 504 });
      // llm-quota, under the same root, keeps UPSTREAM_TIMEOUT_MS
      expect(quotaSlow.json).toMatchObject({ error: 'GatewayTimeout', status: 504 });
    } finally {
      await viaEdge.close();
      await Promise.all([gateway.close(), slowQuota.close()]);
    }
  });

  it('answers 502 when the upstream breaks the connection', async () => {
    const answer = await request(edge.url, '/llm/reset', { headers: bearer(token) });
    expect(answer.status).toBe(502);
    expect(answer.json).toMatchObject({ error: 'BadGateway', status: 502 });
  });

  it('answers 503 in the envelope when the upstream is down', async () => {
    const down = await startEdge({
      authUrl: services.auth.url,
      llmQuotaUrl: `http://127.0.0.1:${await freePort()}`,
      env: { SESSION_PRINCIPAL_SOURCE: 'jwt' },
    });
    try {
      const answer = await request(down.url, '/llm/v1/quotas/x', { headers: bearer(token) });
      expect(answer.status).toBe(503);
      expect(answer.json).toMatchObject({ error: 'ServiceUnavailable', status: 503 });
    } finally {
      await down.close();
    }
  });

  describe('request bodies', () => {
    it('streams a body within the limit to the service unchanged', async () => {
      const body = JSON.stringify({ hello: 'x'.repeat(500) });
      const answer = await request(edge.url, '/legacy/v2/echo', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body,
      });
      expect(answer.json.body).toBe(body);
      const chunked = await request(edge.url, '/legacy/v2/echo', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        chunked: [Buffer.from('{"a":'), Buffer.from('1}')],
      });
      // chunked on, or with a Content-Length when the whole body had arrived before the upstream request left
      expect(chunked.json.body).toBe('{"a":1}');
    });

    it('starts no upstream request for a Content-Length body until it has arrived whole, nor when the client leaves first', async () => {
      const started: string[] = [];
      const service = await listen(
        (req, res) => {
          started.push(req.headers['content-length'] ?? '');
          req.resume();
          req.on('end', () => res.end('{}'));
        },
        0,
        '127.0.0.1',
      );
      const viaEdge = await startEdge({
        authUrl: services.auth.url,
        legacyUrl: service.url,
        env: { SESSION_PRINCIPAL_SOURCE: 'jwt' },
      });
      try {
        const socket = connect(Number(new URL(viaEdge.url).port), '127.0.0.1');
        await once(socket, 'connect');
        socket.write(
          'POST /legacy/v2/echo HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: 100\r\n\r\n{"half":',
        );
        await new Promise((resolve) => setTimeout(resolve, 100));
        expect(started).toEqual([]);
        socket.destroy();
        const whole = await request(viaEdge.url, '/legacy/v2/echo', {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: '{"whole":true}',
        });
        expect(whole.status).toBe(200);
        expect(started).toEqual(['14']);
      } finally {
        await viaEdge.close();
        await service.close(100);
      }
    });

    it('answers 408 in the envelope and closes when a Content-Length body does not arrive within the timeout', async () => {
      // this edge's UPSTREAM_TIMEOUT_MS is 300 ms; the body promises 100 bytes and sends 8
      const answer = await rawRequest(
        Number(new URL(edge.url).port),
        'POST /legacy/v2/echo HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: 100\r\n\r\n{"half":',
      );
      expect(answer.status).toBe(408);
      expect(answer.raw).toMatch(/connection: close/i);
      const body = JSON.parse(answer.raw.slice(answer.raw.indexOf('\r\n\r\n') + 4));
      expect(body).toMatchObject({ error: 'RequestTimeout', code: 'REQUEST_TIMEOUT', status: 408 });
      expect(body.message).toBe('The request body did not arrive within 300 ms');
    });

    it('answers 408 in the envelope and closes when a streamed body stops arriving for the timeout', async () => {
      // chunked: one chunk, then nothing for longer than this edge's 300 ms
      const chunked = await rawRequest(
        Number(new URL(edge.url).port),
        'POST /legacy/v2/echo HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n8\r\n{"half":\r\n',
      );
      // past the size the edge reads whole, so streamed (on an edge whose body limit allows it): 600 of 70,000 bytes
      const roomy = await startEdge({
        authUrl: services.auth.url,
        legacyUrl: services.legacy.url,
        env: { SESSION_PRINCIPAL_SOURCE: 'jwt', UPSTREAM_TIMEOUT_MS: '300' },
      });
      const large = await rawRequest(
        Number(new URL(roomy.url).port),
        'POST /legacy/v2/echo HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: 70000\r\n\r\n',
        Buffer.alloc(600, 'x'),
      ).finally(() => roomy.close());
      for (const answer of [chunked, large]) {
        expect(answer.status).toBe(408);
        expect(answer.raw).toMatch(/connection: close/i);
        const body = JSON.parse(answer.raw.slice(answer.raw.indexOf('\r\n\r\n') + 4));
        expect(body).toMatchObject({ error: 'RequestTimeout', code: 'REQUEST_TIMEOUT', status: 408 });
        expect(body.message).toBe('The request body stopped arriving for 300 ms');
      }
    });

    it('forwards a streamed body that arrives slowly, as long as no pause between its chunks reaches the timeout', async () => {
      // a timeout of 2 s, not this file's 300 ms: a pause of this process (client and edge alike) of a few hundred
      // ms on a loaded machine made the gap of two chunks 150 ms apart a timeout
      const patient = await startEdge({
        authUrl: services.auth.url,
        legacyUrl: services.legacy.url,
        env: { SESSION_PRINCIPAL_SOURCE: 'jwt', UPSTREAM_TIMEOUT_MS: '2000' },
      });
      const parts = ['{"slow":', '"a', 'b', 'c', '"}'].map((part) => Buffer.from(part));
      // 5 chunks 600 ms apart: 2.4 s in all, longer than the timeout
      const answer = await request(patient.url, '/legacy/v2/echo', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        chunked: parts,
        chunkDelayMs: 600,
      }).finally(() => patient.close());
      expect(answer.status).toBe(200);
      expect(answer.json.body).toBe('{"slow":"abc"}');
    });

    it('does not count the time a slow service holds a streamed body back against the client', async () => {
      // the service stops reading for 1.5 s once the first 64 KiB arrived: five times the 300 ms in which a client's
      // body must keep arriving. It is llm-gateway, whose own answer timeout is long, so that the only timer the
      // hold-back can trip is the client's (undici times a service that reads nothing out with the answer timeout).
      const service = await listen(
        (req, res) => {
          let received = 0;
          let paused = false;
          req.on('data', (chunk: Buffer) => {
            received += chunk.length;
            if (!paused && received >= 64 * 1024) {
              paused = true;
              req.pause();
              setTimeout(() => req.resume(), 1_500);
            }
          });
          req.on('end', () => res.end(JSON.stringify({ received })));
        },
        0,
        '127.0.0.1',
      );
      const viaEdge = await startEdge({
        authUrl: services.auth.url,
        env: {
          SESSION_PRINCIPAL_SOURCE: 'jwt',
          LLM_GATEWAY_URL: service.url,
          UPSTREAM_TIMEOUT_MS: '300',
          GATEWAY_UPSTREAM_TIMEOUT_MS: '30000',
          BODY_LIMIT_BYTES: String(32 << 20),
        },
      });
      try {
        // more than the loopback sockets' buffers hold, so the edge itself has to wait
        const answer = await request(viaEdge.url, '/llm/v1/upload', {
          method: 'POST',
          headers: { ...bearer(token), 'content-type': 'application/octet-stream' },
          body: Buffer.alloc(24 << 20, 'x'),
        });
        expect(answer.status).toBe(200);
        expect(answer.json).toEqual({ received: 24 << 20 });
      } finally {
        await viaEdge.close();
        await service.close(100);
      }
    });

    it('keeps a kept-alive connection answering after a service answered before reading a streamed body', async () => {
      // a service that answers without reading the body (an unknown route, an unsupported media type)
      const service = await listen(
        (_req, res) => {
          res.statusCode = 404;
          res.end('{"code":"NOT_FOUND"}');
        },
        0,
        '127.0.0.1',
      );
      const viaEdge = await startEdge({
        authUrl: services.auth.url,
        legacyUrl: service.url,
        env: { SESSION_PRINCIPAL_SOURCE: 'jwt' },
      });
      const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
      const send = (body?: Buffer, chunked = false) =>
        new Promise<number>((resolve, reject) => {
          const req = http.request(
            `${viaEdge.url}/legacy/v2/nowhere`,
            { method: body ? 'PUT' : 'GET', agent, headers: { 'content-type': 'application/json' } },
            (res) => {
              res.resume();
              res.on('end', () => resolve(res.statusCode!));
            },
          );
          req.on('error', reject);
          req.setTimeout(5_000, () => req.destroy(new Error('no answer within 5 s')));
          if (chunked && body) {
            for (let at = 0; at < body.length; at += 64 * 1024) req.write(body.subarray(at, at + 64 * 1024));
            req.end();
          } else req.end(body);
        });
      try {
        // past the size the edge reads whole (64 KiB), so the body streams to the service
        for (const [size, chunked] of [
          [300_000, false],
          [1_000_000, false],
          [1_000_000, true],
        ] as const) {
          expect(await send(Buffer.alloc(size, 97), chunked)).toBe(404);
          expect(await send()).toBe(404);
        }
      } finally {
        agent.destroy();
        await viaEdge.close();
        await service.close(100);
      }
    });

    /**
     * What the edge answers a request whose head (`Expect: 100-continue` added) is `head`: its body (`hello` unless
     * told) is sent once `100 Continue` arrives, if it does; the client is done at the end of the final answer.
     */
    const expectingContinue = (port: number, head: string, body: string | Buffer = 'hello') =>
      new Promise<string>((resolve, reject) => {
        const socket = connect(port, '127.0.0.1');
        let text = '';
        let sent = false;
        socket.on('data', (d: Buffer) => {
          text += d.toString('utf8');
          if (!sent && text.startsWith('HTTP/1.1 100 Continue\r\n\r\n')) {
            sent = true;
            socket.write(body);
          }
          const final = text.replace(/^HTTP\/1\.1 100 Continue\r\n\r\n/, '');
          const split = final.indexOf('\r\n\r\n');
          const length = Number(/\r\ncontent-length: (\d+)/i.exec(final.slice(0, split))?.[1] ?? -1);
          if (split > 0 && Buffer.byteLength(final.slice(split + 4)) === length) socket.end();
        });
        socket.on('close', () => resolve(text));
        socket.on('error', reject);
        socket.write(`${head}\r\nHost: x\r\nExpect: 100-continue\r\n\r\n`);
      });

    it('asks for a body (100 Continue) only once the request is to be forwarded, not when refused before it', async () => {
      for (const [head, status] of [
        ['POST /v2/me HTTP/1.1\r\nContent-Length: 5', 401],
        ['POST /legacy/v2/echo HTTP/1.1\r\nContent-Length: 5000', 413],
        ['POST /legacy/healthz HTTP/1.1\r\nContent-Length: 5', 404],
      ] as const) {
        const text = await expectingContinue(edge.port, head);
        expect({ head, status: Number(text.slice(9, 12)) }).toEqual({ head, status });
        expect(text).not.toMatch(/ 100 Continue/);
      }
      const before = services.legacy.received.length;
      const forwarded = await expectingContinue(
        edge.port,
        'POST /legacy/v2/echo HTTP/1.1\r\nContent-Length: 5\r\nContent-Type: text/plain',
      );
      expect(forwarded).toMatch(/^HTTP\/1\.1 100 Continue\r\n\r\nHTTP\/1\.1 200 /);
      expect(services.legacy.received.slice(before)).toMatchObject([{ body: 'hello' }]);
      // the service is not asked to expect anything: the edge has the body
      expect(services.legacy.received.at(-1)?.headers.expect).toBeUndefined();
    });

    it("leaves a streamed upload's 100 Continue to the service, so a body it refuses unread is never sent", async () => {
      // a service that refuses `/v2/refused` before reading its body and reads any other (kernel `listen` sends 100
      // Continue as its handler starts reading)
      const service = await listen(
        (req, res) => {
          if (req.url === '/v2/refused') {
            res.statusCode = 415;
            return void res.end('{"code":"UNSUPPORTED_MEDIA_TYPE"}');
          }
          let length = 0;
          req.on('data', (chunk: Buffer) => {
            length += chunk.length;
          });
          req.on('end', () => res.end(`read ${length} ${req.headers['transfer-encoding'] ?? ''}`));
        },
        0,
        '127.0.0.1',
      );
      const viaEdge = await startEdge({ authUrl: services.auth.url, legacyUrl: service.url });
      // past the size the edge reads whole (64 KiB), so the body streams to the service
      const body = Buffer.alloc(300_000, 97);
      try {
        const refused = await expectingContinue(
          viaEdge.port,
          'POST /legacy/v2/refused HTTP/1.1\r\nContent-Length: 300000',
          body,
        );
        expect(refused).toMatch(/^HTTP\/1\.1 415 /);
        expect(refused).toMatch(/UNSUPPORTED_MEDIA_TYPE/);
        const read = await expectingContinue(
          viaEdge.port,
          'POST /legacy/v2/read HTTP/1.1\r\nContent-Length: 300000',
          body,
        );
        expect(read).toMatch(/^HTTP\/1\.1 100 Continue\r\n\r\nHTTP\/1\.1 200 /);
        expect(read).toMatch(/read 300000 $/);
        const chunk = `${(100_000).toString(16)}\r\n${'a'.repeat(100_000)}\r\n`;
        const chunked = await expectingContinue(
          viaEdge.port,
          'PUT /legacy/v2/read HTTP/1.1\r\nTransfer-Encoding: chunked',
          `${chunk}${chunk}${chunk}0\r\n\r\n`,
        );
        expect(chunked).toMatch(/^HTTP\/1\.1 100 Continue\r\n\r\nHTTP\/1\.1 200 /);
        expect(chunked).toMatch(/read 300000 chunked$/);
      } finally {
        await viaEdge.close();
        await service.close(100);
      }
    });

    it("forwards a streamed upload's field values past ASCII (UTF-8 from the client) byte for byte", async () => {
      const before = services.legacy.received.length;
      const answer = await expectingContinue(
        edge.port,
        'POST /legacy/v2/echo HTTP/1.1\r\nTransfer-Encoding: chunked\r\nX-File-Name: résumé.pdf',
        '5\r\nhello\r\n0\r\n\r\n',
      );
      expect(answer).toMatch(/^HTTP\/1\.1 100 Continue\r\n\r\nHTTP\/1\.1 200 /);
      const [received] = services.legacy.received.slice(before);
      expect(received?.body).toBe('hello');
      // Node reads a field's bytes as latin1: the service sees what the client sent
      expect(Buffer.from(String(received?.headers['x-file-name']), 'latin1').toString('utf8')).toBe(
        'résumé.pdf',
      );
    });

    it('answers a streamed upload the service asked for in the envelope when it fails: past the limit, unanswered', async () => {
      const chunk = `400\r\n${'a'.repeat(1024)}\r\n`;
      const tooLarge = await expectingContinue(
        edge.port,
        'POST /legacy/v2/echo HTTP/1.1\r\nTransfer-Encoding: chunked',
        `${chunk}${chunk}0\r\n\r\n`,
      );
      expect(tooLarge).toMatch(/^HTTP\/1\.1 100 Continue\r\n\r\nHTTP\/1\.1 413 /);
      expect(tooLarge).toMatch(/"code":"PAYLOAD_TOO_LARGE"/);
      const silent = await expectingContinue(
        edge.port,
        `POST /llm/slow HTTP/1.1\r\nAuthorization: Bearer ${token}\r\nTransfer-Encoding: chunked`,
        '5\r\nhello\r\n0\r\n\r\n',
      );
      expect(silent).toMatch(/^HTTP\/1\.1 100 Continue\r\n\r\nHTTP\/1\.1 504 /);
      expect(silent).toMatch(/"error":"GatewayTimeout"/);
    });

    it('answers 504 when the service asks for a streamed upload (100 Continue), then stops reading it', async () => {
      const service = http.createServer();
      service.on('checkContinue', (req: http.IncomingMessage, res: http.ServerResponse) => {
        res.writeContinue();
        req.pause(); // never read, never answered
      });
      await new Promise<void>((resolve) => service.listen(0, '127.0.0.1', resolve));
      const { port } = service.address() as { port: number };
      const viaEdge = await startEdge({
        authUrl: services.auth.url,
        legacyUrl: `http://127.0.0.1:${port}`,
        env: { UPSTREAM_TIMEOUT_MS: '300', BODY_LIMIT_BYTES: String(128 * 1024 * 1024) },
      });
      try {
        // more than the sockets between the client and the service buffer, so the upload waits on the service
        const size = 64 * 1024 * 1024;
        const answer = await expectingContinue(
          viaEdge.port,
          `POST /legacy/v2/upload HTTP/1.1\r\nContent-Length: ${size}`,
          Buffer.alloc(size, 97),
        );
        expect(answer).toMatch(/^HTTP\/1\.1 100 Continue\r\n\r\nHTTP\/1\.1 504 /);
        expect(answer).toMatch(/"error":"GatewayTimeout"/);
      } finally {
        await viaEdge.close();
        service.closeAllConnections();
        service.close();
      }
    });

    it('reads the rest of a body after the answer for the lingering time at most, then closes the connection', async () => {
      // a service that answers without reading the body
      const service = await listen(
        (_req, res) => {
          res.statusCode = 404;
          res.end('{"code":"NOT_FOUND"}');
        },
        0,
        '127.0.0.1',
      );
      const viaEdge = await startEdge({
        authUrl: services.auth.url,
        legacyUrl: service.url,
        env: { SESSION_PRINCIPAL_SOURCE: 'jwt' },
        lingeringTimeMs: 300,
      });
      try {
        // refused by the edge (no credential), and by the service once forwarded: a chunked body sent on and on
        for (const [path, status] of [
          ['/v2/me', 401],
          ['/legacy/v2/nowhere', 404],
        ] as const) {
          const socket = connect(viaEdge.port, '127.0.0.1');
          let text = '';
          socket.on('data', (d: Buffer) => {
            text += d.toString('utf8');
          });
          // reset, as it sends still
          socket.on('error', () => undefined);
          const closed = new Promise((resolve) => socket.once('close', resolve));
          socket.write(`POST ${path} HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n`);
          const trickle = setInterval(() => {
            if (!socket.destroyed) socket.write(`64\r\n${'x'.repeat(100)}\r\n`);
          }, 20);
          try {
            await closed;
          } finally {
            clearInterval(trickle);
          }
          expect({ path, status: Number(text.slice(9, 12)) }).toEqual({ path, status });
          expect(text).toMatch(/\r\n\r\n\{.*\}$/);
        }
      } finally {
        await viaEdge.close();
        await service.close(100);
      }
    });

    it('answers 413 PAYLOAD_TOO_LARGE from Content-Length without reaching the service', async () => {
      const before = services.legacy.received.length;
      const answer = await request(edge.url, '/legacy/v2/echo', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: 'x'.repeat(2048),
      });
      expect(answer.status).toBe(413);
      expect(answer.json).toMatchObject({ code: 'PAYLOAD_TOO_LARGE', status: 413 });
      expect(services.legacy.received.length).toBe(before);
    });

    it('refuses a body in a transfer coding other than chunked (400), never forwarding its coded bytes as plain', async () => {
      const before = services.legacy.received.length;
      for (const coding of ['gzip, chunked', 'deflate,chunked', 'identity, chunked']) {
        const answer = await rawRequest(
          edge.port,
          `POST /legacy/v2/echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: ${coding}\r\nConnection: close\r\n\r\n` +
            '3\r\nabc\r\n0\r\n\r\n',
        );
        expect({ coding, status: answer.status }).toEqual({ coding, status: 400 });
        expect(answer.raw).toMatch(/"code":"HEADER_POLICY_VIOLATION"/);
      }
      expect(services.legacy.received.length).toBe(before);
      const chunked = await rawRequest(
        edge.port,
        'POST /legacy/v2/echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: Chunked\r\nConnection: close\r\n\r\n3\r\nabc\r\n0\r\n\r\n',
      );
      expect(chunked.status).toBe(200);
      expect(services.legacy.received.at(-1)?.body).toBe('abc');
    });

    it('counts a chunked body as it streams and answers 413 past the limit', async () => {
      const answer = await request(edge.url, '/legacy/v2/echo', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        chunked: [Buffer.alloc(600, 97), Buffer.alloc(600, 97)],
      });
      expect(answer.status).toBe(413);
      expect(answer.json).toMatchObject({ code: 'PAYLOAD_TOO_LARGE' });
    });

    it('lets a malformed JSON answer of the service (400 INVALID_BODY) reach the client unchanged', async () => {
      const app = createServiceApp({
        name: 'parser',
        logger: silentLogger(),
        routes: (r) => r.post('/v2/things', (req, res) => void res.json(req.body)),
      });
      const service = await listen(app, 0, '127.0.0.1');
      const viaEdge = await startEdge({
        authUrl: services.auth.url,
        legacyUrl: service.url,
        env: { SESSION_PRINCIPAL_SOURCE: 'jwt' },
      });
      try {
        const direct = await request(service.url, '/v2/things', {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-request-id': 'r-1' },
          body: '{"a":',
        });
        const proxied = await request(viaEdge.url, '/legacy/v2/things', {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-request-id': 'r-1' },
          body: '{"a":',
        });
        expect(proxied.status).toBe(400);
        expect(proxied.json).toEqual(direct.json);
        expect(proxied.json).toMatchObject({ code: 'INVALID_BODY', requestId: 'r-1' });
      } finally {
        await viaEdge.close();
        await service.close(100);
      }
    });
  });

  it('drains an in-flight request on close', async () => {
    let release: (() => void) | undefined;
    const slow = await startUpstream('slow', {
      '/wait': (_req, res) => {
        release = () => res.end('{"done":true}');
        return true;
      },
    });
    const e = await startEdge({
      authUrl: services.auth.url,
      legacyUrl: slow.url,
      env: { SESSION_PRINCIPAL_SOURCE: 'jwt' },
    });
    const pending = request(e.url, '/legacy/wait');
    await waitFor(() => release !== undefined);
    const closing = e.server.close(5_000);
    release!();
    const answer = await pending;
    await closing;
    expect(answer.json).toEqual({ done: true });
    await e.close(); // the admin listener and the service (the public server is already closed)
    await slow.close();
  });
});

describe('roots chosen by host name (GATEWAY_HOSTS, LEGACY_HOSTS)', () => {
  let services: Backends;
  const edges: TestEdge[] = [];
  const hosts = { GATEWAY_HOSTS: 'gateway.example.test', LEGACY_HOSTS: 'legacy.example.test' };

  beforeAll(async () => {
    services = await startBackends();
  });
  afterAll(async () => {
    for (const e of edges) await e.close();
    await services.close();
  });

  const edgeTrusting = async (trustProxy: string) => {
    const e = await startEdge({
      ...services.urls,
      env: { SESSION_PRINCIPAL_SOURCE: 'jwt', ...hosts, TRUST_PROXY: trustProxy },
    });
    edges.push(e);
    return e;
  };

  it("behind a trusted proxy that rewrites Host (nginx's proxy_pass), the root is the one of its X-Forwarded-Host", async () => {
    const edge = await edgeTrusting('loopback');
    const viaProxy = (publicHost: string) => ({ host: 'edge.internal:8080', 'x-forwarded-host': publicHost });

    const legacy = await request(edge.url, '/v2/bots', { headers: viaProxy('legacy.example.test') });
    expect([legacy.status, legacy.json.upstream, legacy.json.url]).toEqual([200, 'legacy-agent', '/v2/bots']);
    expect(legacy.json.headers['x-forwarded-host']).toBe('legacy.example.test');
    const quota = await request(edge.url, '/v1/quotas/me', {
      headers: { ...viaProxy('Gateway.Example.Test:443'), ...bearer(signSession(services.key)) },
    });
    expect([quota.status, quota.json.upstream, quota.json.url]).toEqual([200, 'llm-quota', '/v1/quotas/me']);
    // the host the proxy names wins over its Host; without X-Forwarded-Host its Host is the public one
    const base = await request(edge.url, '/legacy/v2/bots', {
      headers: { host: 'legacy.example.test', 'x-forwarded-host': 'api.example.test' },
    });
    expect([base.status, base.json.upstream, base.json.url]).toEqual([200, 'legacy-agent', '/v2/bots']);
    const byHost = await request(edge.url, '/v2/bots', { headers: { host: 'legacy.example.test' } });
    expect([byHost.status, byHost.json.upstream]).toEqual([200, 'legacy-agent']);
  });

  it('a host name written fully qualified, with its final dot, is the same host', async () => {
    const edge = await edgeTrusting('loopback');
    const viaProxy = await request(edge.url, '/v2/bots', {
      headers: { host: 'edge.internal:8080', 'x-forwarded-host': 'Legacy.Example.Test.:443' },
    });
    expect([viaProxy.status, viaProxy.json.upstream, viaProxy.json.url]).toEqual([
      200,
      'legacy-agent',
      '/v2/bots',
    ]);
    const byHost = await request(edge.url, '/v2/bots', { headers: { host: 'legacy.example.test.' } });
    expect([byHost.status, byHost.json.upstream]).toEqual([200, 'legacy-agent']);
  });

  it("ignores an untrusted peer's X-Forwarded-Host: Host alone chooses the root", async () => {
    const edge = await edgeTrusting('false');
    const seen = services.legacy.received.length;
    const spoofed = await request(edge.url, '/v2/bots', {
      headers: { host: 'api.example.test', 'x-forwarded-host': 'legacy.example.test' },
    });
    expect(spoofed.status).toBe(401);
    expect(services.legacy.received.length).toBe(seen);
    const byHost = await request(edge.url, '/v2/bots', {
      headers: { host: 'legacy.example.test', 'x-forwarded-host': 'api.example.test' },
    });
    expect([byHost.status, byHost.json.upstream]).toEqual([200, 'legacy-agent']);
  });
});
