import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import http from 'node:http';
import path from 'node:path';
import { freePort, waitFor } from '@platform/testkit';

/**
 * SIGTERM lets requests in flight finish for SHUTDOWN_DRAIN_SECONDS, then closes their connections: a long
 * streamed answer through the edge's production entry (here from a stand-in auth that streams for 3 s) is
 * answered whole with the default drain, and cut after a drain of 1 s.
 */
const ROOT = path.resolve(__dirname, '../../..');
const STREAM_MS = 3_000;

/** answers the edge's key fetch at once, and /account/login as a stream of six parts over STREAM_MS */
async function startSlowAuth(): Promise<{ url: string; close(): Promise<void> }> {
  const server = http.createServer((req, res) => {
    if (req.url?.startsWith('/oidc/jwks')) {
      res.setHeader('content-type', 'application/json');
      res.end('{"keys":[]}');
      return;
    }
    res.writeHead(200, { 'content-type': 'text/plain' });
    let part = 0;
    const timer = setInterval(() => {
      part += 1;
      res.write(`part ${part}\n`);
      if (part === 6) {
        clearInterval(timer);
        res.end('done\n');
      }
    }, STREAM_MS / 6);
    res.once('close', () => clearInterval(timer));
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${port}`,
    close: () => {
      server.closeAllConnections();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}

async function startEdge(authUrl: string, drain: Record<string, string>) {
  const [port, adminPort] = await Promise.all([freePort(), freePort()]);
  const child = spawn(process.execPath, ['--require', 'tsx/cjs', 'services/edge/src/main.ts'], {
    cwd: ROOT,
    env: {
      PATH: process.env.PATH,
      PLATFORM_INTERNAL_SECRET: 'a-test-secret-of-at-least-32-characters!!',
      AUTH_URL: authUrl,
      LLM_QUOTA_URL: authUrl,
      LEGACY_AGENT_URL: authUrl,
      PORT: String(port),
      ADMIN_PORT: String(adminPort),
      ADMIN_HOST: '127.0.0.1',
      LOG_LEVEL: 'warn',
      ...drain,
    },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const url = `http://127.0.0.1:${port}`;
  await waitFor(async () => (await fetch(`http://127.0.0.1:${adminPort}/healthz`).catch(() => null))?.ok, {
    what: 'the edge listening',
    timeoutMs: 30_000,
  });
  await waitFor(async () => Boolean(await fetch(`${url}/healthz`).catch(() => null)), {
    what: 'the edge’s public port',
    timeoutMs: 10_000,
  });
  return { url, child };
}

/** what a client reads of the streamed page when the edge is stopped once the answer has begun */
async function readWhileStopping(edge: { url: string; child: ChildProcess }): Promise<string> {
  const exited = once(edge.child, 'exit');
  const response = await fetch(`${edge.url}/account/login`);
  const reader = response.body!.getReader();
  const decoder = new TextDecoder();
  let text = '';
  edge.child.kill('SIGTERM');
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      text += decoder.decode(value, { stream: true });
    }
  } catch {
    // the connection was closed under the answer
  }
  await exited;
  return text;
}

describe('SIGTERM drains requests in flight for SHUTDOWN_DRAIN_SECONDS', () => {
  let auth: Awaited<ReturnType<typeof startSlowAuth>>;

  beforeAll(async () => {
    auth = await startSlowAuth();
  });
  afterAll(() => auth.close());

  it('answers a 3-second stream whole within the default drain', async () => {
    const text = await readWhileStopping(await startEdge(auth.url, {}));
    expect(text).toMatch(/part 6\ndone\n$/);
  }, 60_000);

  it('closes it after a drain of 1 second', async () => {
    const text = await readWhileStopping(await startEdge(auth.url, { SHUTDOWN_DRAIN_SECONDS: '1' }));
    expect(text).toMatch(/^part 1\n/);
    expect(text).not.toMatch(/done/);
  }, 60_000);
});
