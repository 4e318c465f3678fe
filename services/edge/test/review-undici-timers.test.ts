import { createHook } from 'node:async_hooks';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { request, startEdge, type TestEdge } from './support';

const PART = 'data: {"t":"x"}\n\n';

/** the timers that keep this process alive: the proxy's deadlines among them */
const pendingTimers = () => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;

async function until(done: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!done()) {
    if (Date.now() > deadline) throw new Error(`still waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/**
 * The proxy's wait for a service's answer: one timer per request, whatever the number of parts, and none left once
 * the request is over, however it ended.
 */
describe("the edge's wait for a service's answer", () => {
  let upstream: http.Server;
  let upstreamUrl: string;
  /** a service's answer is awaited 30 s: a deadline left behind would still be pending when a test looks */
  let patient: TestEdge;
  /** awaited 1 s, for the answers that run out of it, or that a client holds back longer */
  let hasty: TestEdge;

  beforeAll(async () => {
    upstream = http.createServer((req, res) => {
      const url = new URL(req.url ?? '/', 'http://upstream');
      const parts = Number(url.searchParams.get('parts') ?? 0);
      const every = Number(url.searchParams.get('every') ?? 0);
      switch (url.pathname) {
        case '/v2/stream': {
          req.resume();
          res.writeHead(200, { 'content-type': 'text/event-stream' });
          // a turn between parts: each reaches the edge as a part of its own
          let sent = 0;
          const next = () => {
            if (res.destroyed) return;
            if (sent++ === parts) return res.end();
            res.write(PART);
            if (every) setTimeout(next, every);
            else setImmediate(next);
          };
          return next();
        }
        case '/v2/cut':
          req.resume();
          res.writeHead(200, { 'content-type': 'text/plain' });
          res.write('first part');
          return setImmediate(() => res.destroy());
        case '/v2/reset':
          return req.socket.destroy();
        case '/v2/hints':
          req.resume();
          res.writeEarlyHints({ link: '</style.css>; rel=preload; as=style' });
          return setImmediate(() => res.end('after the hints'));
        case '/v2/upload': {
          let received = 0;
          req.on('data', (chunk: Buffer) => {
            received += chunk.length;
          });
          return req.once('end', () => res.end(String(received)));
        }
        case '/v2/big':
          req.resume();
          res.writeHead(200, { 'content-type': 'application/octet-stream' });
          return res.end(Buffer.alloc(parts, 97));
        case '/v2/unanswered':
          // the client is gone before an answer comes
          return req.resume();
        default:
          res.writeHead(404).end();
      }
    });
    await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
    upstreamUrl = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`;
    patient = await startEdge({
      authUrl: upstreamUrl,
      legacyUrl: upstreamUrl,
      env: { UPSTREAM_TIMEOUT_MS: '30000', BODY_LIMIT_BYTES: String(1 << 20) },
    });
    hasty = await startEdge({
      authUrl: upstreamUrl,
      legacyUrl: upstreamUrl,
      env: { UPSTREAM_TIMEOUT_MS: '1000' },
    });
  }, 60_000);
  afterAll(async () => {
    await patient?.close();
    await hasty?.close();
    upstream.closeAllConnections();
    await new Promise((resolve) => upstream.close(resolve));
  });

  it('costs no timer per part of a streamed answer', async () => {
    let timers = 0;
    const hook = createHook({
      init(_id, type) {
        if (type === 'Timeout') timers++;
      },
    }).enable();
    try {
      const answer = await request(patient.url, '/legacy/v2/stream?parts=500');
      expect(answer.text).toBe(PART.repeat(500));
    } finally {
      hook.disable();
    }
    // the request's deadlines (its body's, its answer's), not one for each of the 500 parts
    expect(timers).toBeLessThan(50);
  });

  it('leaves no deadline pending once a request is over, however it ended', async () => {
    const before = pendingTimers();
    const client = (path: string, options: Parameters<typeof request>[2] = {}) =>
      request(patient.url, path, options).catch((err: Error & { code?: string }) => err.code ?? err.message);
    /** a request whose client leaves once `leaveAt` says so */
    const leaving = (path: string, method: string, leaveAt: (req: http.ClientRequest) => void) =>
      new Promise<string>((resolve) => {
        const req = http.request(`${patient.url}${path}`, { method, agent: false });
        req.on('error', () => resolve('left'));
        req.on('close', () => resolve('left'));
        leaveAt(req);
      });
    const ended = await Promise.all([
      client('/legacy/v2/stream?parts=50').then((a) => typeof a !== 'string' && a.text.length),
      client('/legacy/v2/cut'),
      client('/legacy/v2/reset').then((a) => typeof a !== 'string' && a.status),
      client('/legacy/v2/hints').then((a) => typeof a !== 'string' && a.text),
      client('/legacy/v2/upload', {
        method: 'POST',
        chunked: [Buffer.alloc(70_000), Buffer.alloc(70_000)],
      }).then((a) => typeof a !== 'string' && a.text),
      // past BODY_LIMIT_BYTES midway: 413, or the connection closed while the client still sends
      client('/legacy/v2/upload', {
        method: 'POST',
        chunked: Array.from({ length: 40 }, () => Buffer.alloc(64 << 10)),
      }).then((a) => (typeof a === 'string' ? 413 : a.status)),
      // the client leaves while its answer is awaited, while it streams, and midway through its upload
      leaving('/legacy/v2/unanswered', 'GET', (req) => {
        req.end();
        setTimeout(() => req.destroy(), 200);
      }),
      leaving('/legacy/v2/stream?parts=1000&every=5', 'GET', (req) => {
        req.end();
        req.on('response', (res) => res.once('data', () => req.destroy()));
      }),
      leaving('/legacy/v2/upload', 'POST', (req) => {
        req.setHeader('transfer-encoding', 'chunked');
        req.write(Buffer.alloc(100_000));
        setTimeout(() => req.destroy(), 200);
      }),
    ]);
    expect(ended).toEqual([
      50 * PART.length,
      'ECONNRESET',
      502,
      'after the hints',
      '140000',
      413,
      'left',
      'left',
      'left',
    ]);
    await until(() => pendingTimers() <= before, 'the deadlines of requests that are over to be gone');
  }, 30_000);

  it('waits for each part of an answer the answer timeout after the last, however long the whole answer takes', async () => {
    // parts 0.4 of a timeout apart: the whole answer takes longer than the timeout
    const answer = await request(hasty.url, '/legacy/v2/stream?parts=4&every=400');
    expect({ status: answer.status, text: answer.text }).toEqual({ status: 200, text: PART.repeat(4) });
  }, 30_000);

  it('does not count the time a client holds the answer back, then serves it whole', async () => {
    const size = 32 << 20;
    const received = await new Promise<number>((resolve, reject) => {
      http.get(`${hasty.url}/legacy/v2/big?parts=${size}`, (res) => {
        let bytes = 0;
        res.on('data', (chunk: Buffer) => {
          bytes += chunk.length;
        });
        res.on('end', () => resolve(bytes));
        res.on('error', reject);
        // not read for twice the answer timeout: the edge holds the service's answer back meanwhile
        res.pause();
        setTimeout(() => res.resume(), 2_000);
      });
    });
    expect(received).toBe(size);
  }, 30_000);
});
