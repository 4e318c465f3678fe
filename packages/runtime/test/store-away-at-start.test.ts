import { type ChildProcess, spawn } from 'node:child_process';
import net from 'node:net';
import path from 'node:path';
import { freePort, waitFor } from '@platform/testkit';

/**
 * A service started while its MongoDB cannot be reached (no server can run here: a closed loopback port stands for
 * one that is away) waits for it: alive on its admin port, not ready, trying again; not a crash and a restart loop.
 */
const ROOT = path.resolve(__dirname, '../../..');

/** llm-quota's production entry on MongoDB at `mongoUrl`, logging at debug level; what it prints goes to `onOutput` */
function startQuota(mongoUrl: string, port: number, adminPort: number, onOutput: (text: string) => void) {
  const child = spawn(process.execPath, ['--require', 'tsx/cjs', 'services/llm-quota/src/main.ts'], {
    cwd: ROOT,
    env: {
      PATH: process.env.PATH,
      PLATFORM_INTERNAL_SECRET: 'a-test-secret-of-at-least-32-characters!!',
      MONGO_URL: mongoUrl,
      PORT: String(port),
      ADMIN_PORT: String(adminPort),
      ADMIN_HOST: '127.0.0.1',
      // every attempt to reach the database is a debug line (at info, the wait is one line, then one a minute)
      LOG_LEVEL: 'debug',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  for (const stream of [child.stdout!, child.stderr!])
    stream.on('data', (d: Buffer) => onOutput(d.toString()));
  return child;
}

/** the JSON lines of a service's output (a line still being written is left out) */
const logLines = (output: string): Array<Record<string, unknown>> =>
  output
    .split('\n')
    .slice(0, -1)
    .flatMap((line) => {
      try {
        return [JSON.parse(line)];
      } catch {
        return [];
      }
    });

const refused = (port: number) =>
  new Promise<boolean>((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(false);
    });
    socket.once('error', () => resolve(true));
  });

describe('a service whose MongoDB is away when it starts', () => {
  let child: ChildProcess;
  let output = '';
  let adminUrl: string;
  let port: number;

  beforeAll(async () => {
    const [adminPort, servicePort, closed] = await Promise.all([freePort(), freePort(), freePort()]);
    port = servicePort;
    adminUrl = `http://127.0.0.1:${adminPort}`;
    child = startQuota(
      `mongodb://127.0.0.1:${closed}/?serverSelectionTimeoutMS=200`,
      servicePort,
      adminPort,
      (text) => {
        output += text;
      },
    );
  });

  afterAll(async () => {
    if (child.exitCode === null && child.signalCode === null) {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await exited;
    }
  });

  it('is alive, says why it is not ready, keeps trying, and serves nothing meanwhile', async () => {
    await waitFor(async () => (await fetch(`${adminUrl}/healthz`).catch(() => null))?.status === 200, {
      what: 'the admin port answering',
      timeoutMs: 20_000,
    });
    const attempts = () =>
      logLines(output)
        .filter((line) => line.msg === 'store: an attempt to reach the database failed')
        .map((line) => line.attempt);
    await waitFor(() => attempts().includes(2), {
      what: 'a second attempt to reach MongoDB',
      timeoutMs: 20_000,
    });
    // the wait is said once, with why, however many attempts fail (a reminder comes a minute later); no line at
    // info level or above comes again with each attempt
    expect(
      logLines(output).filter((line) => /the database cannot be reached/.test(String(line.msg))),
    ).toEqual([expect.objectContaining({ level: 40, reason: expect.stringMatching(/ECONNREFUSED/) })]);
    const said = logLines(output)
      .filter((line) => Number(line.level) >= 30)
      .map((line) => line.msg);
    expect(new Set(said).size).toBe(said.length);
    const ready = await fetch(`${adminUrl}/readyz`);
    expect(ready.status).toBe(503);
    expect(await ready.json()).toMatchObject({
      status: 'not_ready',
      service: 'llm-quota',
      checks: { startup: expect.stringMatching(/^the store is unreachable: .*ECONNREFUSED/) },
    });
    expect(child.exitCode).toBeNull();
    expect(output).not.toMatch(/\n\s+at /); // no stack trace
    expect(await refused(port)).toBe(true);
  });

  it('stops at once, and cleanly, on SIGTERM', async () => {
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
    expect(output).toMatch(/stopped while waiting for the store/);
  });
});

describe('a service whose MongoDB URL cannot be used', () => {
  it('exits at once with the reason instead of waiting for a database it can never reach', async () => {
    let text = '';
    const child = startQuota(
      'mongodb://127.0.0.1:9/?authMechanism=BOGUS',
      await freePort(),
      await freePort(),
      (more) => {
        text += more;
      },
    );
    const code = await new Promise<number | null>((resolve) => child.once('exit', (c) => resolve(c)));
    expect(code).not.toBe(0);
    expect(text).toMatch(/the store cannot be opened: .*authMechanism.*check MONGO_URL/);
    expect(text).not.toMatch(/cannot be reached/);
    expect(text).not.toMatch(/\n\s+at /); // one line, no stack trace
  });
});
