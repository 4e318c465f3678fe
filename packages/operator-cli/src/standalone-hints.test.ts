import { spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { type AddressInfo, connect } from 'node:net';
import { hostname, tmpdir } from 'node:os';
import path from 'node:path';
import { runCli } from './cli';

/** What the CLI takes from DATA_DIR/standalone.json, against a stand-in for auth's internal API. */
describe('operator CLI: DATA_DIR/standalone.json', () => {
  let server: Server;
  let authUrl: string;
  let dir: string;
  const seen: string[] = [];

  beforeAll(async () => {
    server = createServer((req, res) => {
      seen.push(`${req.method} ${req.url} ${req.headers['x-internal-secret'] ?? ''}`);
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ keys: [] }));
    }).listen(0, '127.0.0.1');
    await once(server, 'listening');
    authUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => server.close());
  beforeEach(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'cli-hints-'));
    seen.length = 0;
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  const run = async () => {
    const lines: string[] = [];
    const code = await runCli(
      ['keys', 'list', '--json'],
      { DATA_DIR: dir },
      {
        out: (line) => lines.push(line),
        err: (line) => lines.push(line),
      },
    );
    return { code, said: lines.join('\n') };
  };

  it('reads the file of a pnpm start from before standalone.lock (no baseUrl, no lock beside it)', async () => {
    // a platform started before the update keeps running with its file: the CLI found it then
    writeFileSync(
      path.join(dir, 'standalone.json'),
      JSON.stringify({
        authUrl,
        llmQuotaUrl: authUrl,
        legacyAgentUrl: authUrl,
        internalSecret: 'old-secret',
      }),
    );
    expect(await run()).toEqual({ code: 0, said: JSON.stringify({ result: 'listed', data: [] }) });
    expect(seen).toEqual([expect.stringMatching(/^GET \/internal\/signing-keys /)]);
  });

  it('ignores the file of a pnpm start that is gone (its lock held by no process)', async () => {
    writeFileSync(path.join(dir, 'standalone.json'), JSON.stringify({ authUrl, internalSecret: 's' }));
    writeFileSync(path.join(dir, 'standalone.lock'), `${spawnSync(process.execPath, ['-e', '']).pid}\n`);
    const { code, said } = await run();
    expect(code).toBe(2);
    expect(said).toMatch(/AUTH_URL/);
    expect(seen).toEqual([]);
  });

  it('ignores the file of a pnpm start of an earlier boot, whatever program holds its process id now', async () => {
    writeFileSync(
      path.join(dir, 'standalone.json'),
      JSON.stringify({ state: 'running', authUrl, internalSecret: 's' }),
    );
    writeFileSync(
      path.join(dir, 'standalone.lock'),
      `${process.pid}\n${hostname()}\n00000000-0000-4000-8000-000000000000\n`,
    );
    const { code, said } = await run();
    expect(code).toBe(2);
    expect(said).toMatch(/AUTH_URL/);
    expect(seen).toEqual([]);
  });

  it('says that the pnpm start is still starting (its file lists processes, no URLs yet) when a command cannot run', async () => {
    writeFileSync(
      path.join(dir, 'standalone.json'),
      JSON.stringify({
        state: 'starting',
        internalSecret: 's',
        pids: { auth: process.pid },
        states: { auth: 'starting' },
      }),
    );
    writeFileSync(path.join(dir, 'standalone.lock'), `${process.pid}\n`);
    const { code, said } = await run();
    expect(code).toBe(2);
    expect(said).toContain(
      `The pnpm start on ${dir} is still starting: run this again once it prints "Platform ready".`,
    );
    expect(seen).toEqual([]);
  });

  it('does not use the URLs of a pnpm start that is stopping', async () => {
    writeFileSync(
      path.join(dir, 'standalone.json'),
      JSON.stringify({ state: 'stopping', authUrl, internalSecret: 's' }),
    );
    writeFileSync(path.join(dir, 'standalone.lock'), `${process.pid}\n`);
    const { code, said } = await run();
    expect(code).toBe(2);
    expect(said).toContain(`The pnpm start on ${dir} is stopping.`);
    expect(seen).toEqual([]);
  });

  it("ignores the file of a pnpm start on another host (a shared volume): its loopback addresses are that host's", async () => {
    writeFileSync(
      path.join(dir, 'standalone.json'),
      JSON.stringify({ state: 'running', authUrl, internalSecret: 's' }),
    );
    // whatever its process id means here
    writeFileSync(path.join(dir, 'standalone.lock'), `${process.pid}\nother-host.example\n`);
    const { code, said } = await run();
    expect(code).toBe(2);
    expect(said).toContain(`The pnpm start on ${dir} runs on host other-host.example`);
    expect(seen).toEqual([]);
  });

  /** what the CLI says, on both streams, to `argv` with `env` */
  const say = async (argv: string[], env: Record<string, string>) => {
    const lines: string[] = [];
    const code = await runCli(argv, env, { out: (l) => lines.push(l), err: (l) => lines.push(l) });
    return { code, lines };
  };

  it('says, when no pnpm start runs on DATA_DIR, to run the command with the DATA_DIR of the one running, without the whole help', async () => {
    expect(await say(['keys', 'list'], { DATA_DIR: dir })).toEqual({
      code: 2,
      lines: [
        'This command talks to auth directly: --auth-url or AUTH_URL',
        `Against a running pnpm start, run this with the same DATA_DIR (none runs on ${dir}).`,
      ],
    });
  });

  it('says so too when nothing answers where a pnpm start listens by default (localhost:8080)', async () => {
    const taken = await new Promise<boolean>((resolve) => {
      const socket = connect(8080, 'localhost');
      socket.once('connect', () => {
        socket.destroy();
        resolve(true);
      });
      socket.once('error', () => resolve(false));
    });
    if (taken) {
      console.warn('*** SKIPPED: something listens on localhost:8080, so it cannot be seen unreachable ***');
      return;
    }
    const { code, lines } = await say(['providers', 'list'], { DATA_DIR: dir, PLATFORM_TOKEN: 't' });
    expect(code).toBe(1);
    expect(lines[0]).toMatch(/^Cannot reach http:\/\/localhost:8080: /);
    expect(lines.slice(1)).toEqual([
      `Against a running pnpm start, run this with the same DATA_DIR (none runs on ${dir}).`,
    ]);
  });

  it('says nothing of DATA_DIR when the URL that cannot be reached was named', async () => {
    const closed = createServer().listen(0, '127.0.0.1');
    await once(closed, 'listening');
    const { port } = closed.address() as AddressInfo;
    closed.close();
    const { lines } = await say(['keys', 'list'], {
      DATA_DIR: dir,
      AUTH_URL: `http://127.0.0.1:${port}`,
      PLATFORM_INTERNAL_SECRET: 's',
    });
    expect(lines).toEqual([`Cannot reach http://127.0.0.1:${port}: connect ECONNREFUSED 127.0.0.1:${port}`]);
  });

  it('says nothing of DATA_DIR when a platform was named, by PLATFORM_URL or --url', async () => {
    for (const [argv, env] of [
      [['keys', 'list'], { PLATFORM_URL: 'https://platform.example.com' }],
      [['keys', 'list', '--url', 'https://platform.example.com'], {}],
    ] as const) {
      const { lines } = await say([...argv], { DATA_DIR: dir, ...env });
      expect(lines.some((line) => line.includes('DATA_DIR'))).toBe(false);
    }
  });
});
