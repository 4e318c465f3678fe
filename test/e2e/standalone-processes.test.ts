import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { runCli } from '@platform/operator-cli';
import { processAlive as alive, startProviderSimulator, tempDir, waitFor } from '@platform/testkit';
import { callJson } from '../harness';
import { providersAddSim } from './cli-providers';

/**
 * `pnpm start` as a newcomer runs it: one command, each service in its own process, events between
 * them over the parent's IPC bus, a dead service restarted, SIGTERM draining everything.
 */

const ROOT = path.resolve(__dirname, '../..');

/** kills a supervisor and the services it listed, held still ones included (SIGCONT lets them take the SIGKILL) */
const killAll = (platform: ChildProcess, pids: Record<string, number>) => {
  if (platform.exitCode === null) platform.kill('SIGKILL');
  for (const pid of Object.values(pids))
    if (alive(pid)) {
      process.kill(pid, 'SIGKILL');
      process.kill(pid, 'SIGCONT');
    }
};

describe('pnpm start: every service in its own process', () => {
  const data = tempDir('standalone-processes-');
  /** an operator's own internal secret: pnpm start uses it rather than one it keeps */
  const operatorSecret = randomBytes(32).toString('base64url');
  let platform: ChildProcess;
  let stdout = '';
  let stderr = '';
  let baseUrl = '';
  const hints = () => JSON.parse(readFileSync(path.join(data.dir, 'standalone.json'), 'utf8'));

  beforeAll(async () => {
    platform = spawn(process.execPath, ['--require', 'tsx/cjs', 'services/standalone/src/main.ts'], {
      cwd: ROOT,
      env: {
        ...process.env,
        PORT: '0',
        HOST: '127.0.0.1',
        DATA_DIR: data.dir,
        PLATFORM_INTERNAL_SECRET: operatorSecret,
        GATEWAY_PATH_PREFIX: '/gw',
        // long enough that only the revocation event (not the cache's expiry) can explain a quick 401
        PRINCIPAL_CACHE_TTL_SECONDS: '60',
        PRINCIPAL_CACHE_MAX_TTL_SECONDS: '60',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    platform.stdout!.on('data', (d: Buffer) => {
      stdout += d.toString();
    });
    platform.stderr!.on('data', (d: Buffer) => {
      stderr += d.toString();
    });
    const base = await waitFor(() => /\{base_url\}\s+(\S+)/.exec(stderr)?.[1], {
      timeoutMs: 45_000,
      what: 'the banner',
    });
    baseUrl = base;
    // the supervisor's own JSON line goes to stdout as the banner goes to stderr: two pipes, either first
    await waitFor(() => stdout.includes('"service":"standalone"'), { what: "the supervisor's log line" });
  }, 60_000);

  afterAll(async () => {
    if (platform.exitCode === null) platform.kill('SIGKILL');
    data.remove();
  });

  it('prints the roots from configuration on stderr, and only JSON lines with one service each on stdout', () => {
    expect(stderr).toContain(`{gateway_url} ${baseUrl}/gw`);
    expect(stderr).toContain(`{legacy_url}  ${baseUrl}/legacy`);
    // and to DATA_DIR/standalone.json, where `pnpm platform` finds them
    expect(hints()).toMatchObject({ baseUrl, gatewayUrl: `${baseUrl}/gw` });
    const lines = stdout.split('\n').filter(Boolean);
    expect(lines.length).toBeGreaterThan(0);
    for (const line of lines) {
      const parsed = JSON.parse(line);
      expect(typeof parsed.service).toBe('string');
      expect(line.match(/"service":/g)).toHaveLength(1);
    }
    const services = new Set(lines.map((l) => JSON.parse(l).service));
    expect([...services].sort()).toEqual([
      'auth',
      'edge',
      'legacy-agent',
      'llm-gateway',
      'llm-quota',
      'standalone',
    ]);
  });

  it('runs each service in a process of its own', () => {
    const pids: Record<string, number> = hints().pids;
    expect(Object.keys(pids).sort()).toEqual(['auth', 'edge', 'legacy-agent', 'llm-gateway', 'llm-quota']);
    expect(new Set(Object.values(pids)).size).toBe(5);
    for (const pid of Object.values(pids)) expect(alive(pid)).toBe(true);
  });

  it("uses an operator's PLATFORM_INTERNAL_SECRET, and does not write it", () => {
    expect(hints().internalSecret).toBe(operatorSecret);
    expect(existsSync(path.join(data.dir, 'internal.secret'))).toBe(false);
  });

  it('keeps the services behind the edge on loopback, their admin ports included', () => {
    /** local addresses (hex, as /proc/net/tcp has them) listening on a port */
    const listeningOn = (port: number) =>
      readFileSync('/proc/net/tcp', 'utf8')
        .split('\n')
        .slice(1)
        .map((line) => line.trim().split(/\s+/))
        .filter((f) => f[3] === '0A' && Number.parseInt(f[1]!.split(':')[1]!, 16) === port)
        .map((f) => f[1]!.split(':')[0]);
    const { admin } = hints() as { admin: Record<string, string> };
    const services = Object.entries(admin).filter(([name]) => name !== 'edge');
    expect(services).toHaveLength(4);
    for (const [, url] of services) expect(listeningOn(Number(new URL(url).port))).toEqual(['0100007F']); // 127.0.0.1
  });

  it("takes the production edge's request heads (16 KB): a larger one is 431 in the envelope", async () => {
    const answer = await fetch(`${baseUrl}/v2/me`, { headers: { 'x-big': 'y'.repeat(20_000) } });
    expect(answer.status).toBe(431);
    expect(await answer.json()).toMatchObject({ status: 431, error: 'RequestHeaderFieldsTooLarge' });
  });

  it("starts each service with the images' malloc settings (decisions 0077, 0085)", () => {
    for (const pid of Object.values<number>(hints().pids)) {
      const environ = readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0');
      expect(environ).toEqual(
        expect.arrayContaining([
          'MALLOC_ARENA_MAX=2',
          'MALLOC_MMAP_THRESHOLD_=131072',
          'MALLOC_TRIM_THRESHOLD_=131072',
        ]),
      );
    }
  });

  it('carries auth events to the edge in another process: a revoked token is refused at once', async () => {
    const login = await callJson(`${baseUrl}/v2/login/anonymous`, 'POST');
    expect(login.status).toBe(200);
    const created = await callJson(`${baseUrl}/v2/user/accessTokens`, 'POST', {
      bearer: login.body.token,
      body: { name: 'ipc', expiresAt: new Date(Date.now() + 3_600_000).toISOString() },
    });
    expect(created.status).toBe(201);
    const token: string = created.body.token;
    // llm-quota trusts the edge's principal: only the edge's cache decides here
    const before = await callJson(`${baseUrl}/gw/v1/quotas/usage`, 'GET', { bearer: token });
    expect(before.status).not.toBe(401);
    const revoked = await fetch(`${baseUrl}/v2/user/accessTokens/${created.body._id}`, {
      method: 'DELETE',
      headers: { authorization: `Bearer ${login.body.token}` },
    });
    expect(revoked.status).toBeLessThan(300);
    await waitFor(
      async () => (await callJson(`${baseUrl}/gw/v1/quotas/usage`, 'GET', { bearer: token })).status === 401,
      { what: 'the revoked token refused' },
    );
  });

  it('carries usage from the gateway to llm-quota in another process: concurrent completions are each counted once', async () => {
    const login = await callJson(`${baseUrl}/v2/login/anonymous`, 'POST');
    const bearer: string = login.body.token;
    expect(
      (await callJson(`${baseUrl}/v2/orgs`, 'POST', { bearer, body: { slug: 'ipc-usage', name: 'IPC' } }))
        .status,
    ).toBe(201);
    // sent together: the gateway's outbox publishes them as a group, batched over the IPC channels
    const answers = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        callJson(`${baseUrl}/gw/v1/chat/completions`, 'POST', {
          bearer,
          body: { model: 'mock/chat', messages: [{ role: 'user', content: `hello ${i}` }] },
        }),
      ),
    );
    expect(answers.filter((a) => a.status !== 200).map((a) => a.body)).toEqual([]);
    const tokens = answers.reduce((sum, a) => sum + a.body.usage.total_tokens, 0);
    const used = async (key: string) => {
      const usage = await callJson(`${baseUrl}/gw/v1/quotas/usage`, 'GET', { bearer });
      return usage.body.enforced.find(
        (g: { key: string; window: string }) => g.key === key && g.window === 'month',
      )?.used;
    };
    // once a second: the edge answers one user's usage reads 60 a minute, so faster polls of a count that comes
    // late (a loaded machine) met only 429s, long before the 20 s were up
    await waitFor(async () => (await used('llm.monthly_tokens')) === tokens, {
      timeoutMs: 20_000,
      intervalMs: 1_000,
      what: `llm-quota counting ${tokens} tokens`,
    });
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(await used('llm.monthly_tokens')).toBe(tokens); // once: nothing counted again
  });

  it('restarts a service that dies, on the same address, with its data', async () => {
    const login = await callJson(`${baseUrl}/v2/login/anonymous`, 'POST');
    const before: number = hints().pids.auth;
    process.kill(before, 'SIGKILL');
    await waitFor(
      async () => (await callJson(`${baseUrl}/v2/me`, 'GET', { bearer: login.body.token })).status === 200,
      { timeoutMs: 30_000, intervalMs: 100, what: 'auth back' },
    );
    expect(stdout).toContain('service process died');
  });

  it('refuses a second pnpm start on the same data folder: exit 1 naming it, the first running with its files', async () => {
    const { code, output } = await startUntilExit({ PORT: '0', DATA_DIR: data.dir });
    expect(code).toBe(1);
    expect(output).toContain(
      `cannot start: ${data.dir} is in use by another pnpm start (process ${platform.pid}): two platforms on one data folder lose each other's writes; stop it, or set DATA_DIR to another folder`,
    );
    expect(output).not.toContain('"service":"auth"'); // no service of its own started
    expect(Object.keys(hints().pids)).toHaveLength(5);
    expect((await callJson(`${baseUrl}/v2/login/anonymous`, 'POST')).status).toBe(200);
  }, 60_000);

  it('restarts the edge on the port it got at start (PORT=0): {base_url} answers again', async () => {
    const before: number = hints().pids.edge;
    process.kill(before, 'SIGKILL');
    // its new process is listed once spawned, and running once it listens
    await waitFor(() => (hints().pids.edge ?? before) !== before && hints().states.edge === 'running', {
      timeoutMs: 30_000,
      what: 'the edge restarted',
    });
    expect((await callJson(`${baseUrl}/v2/login/anonymous`, 'POST')).status).toBe(200);
  }, 40_000);

  it('SIGTERM stops every process and exits 0', async () => {
    const { pids } = hints();
    const exited = new Promise<number | null>((resolve) => platform.once('exit', (code) => resolve(code)));
    platform.kill('SIGTERM');
    expect(await exited).toBe(0);
    for (const pid of Object.values(pids) as number[]) expect(alive(pid)).toBe(false);
    // the data folder is free for the next pnpm start
    expect(existsSync(path.join(data.dir, 'standalone.lock'))).toBe(false);
  }, 30_000);
});

describe('pnpm start restarted on the same data folder', () => {
  /** the environment without an operator's internal secret: pnpm start keeps its own */
  const { PLATFORM_INTERNAL_SECRET: _operators, ...inherited } = process.env;

  /** `pnpm start` until it is ready: where it listens, and its stop (SIGTERM, exit 0) */
  async function startReady(env: Record<string, string>) {
    const child = spawn(process.execPath, ['--require', 'tsx/cjs', 'services/standalone/src/main.ts'], {
      cwd: ROOT,
      env: { ...inherited, PORT: '0', HOST: '127.0.0.1', ...env },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr!.on('data', (d: Buffer) => {
      stderr += d.toString();
    });
    // the signal that ended it, if one did, and what it said last: a stop that is not a clean exit says why
    const exited = new Promise<number | string>((resolve) =>
      child.once('exit', (code, signal) =>
        resolve(code ?? `${signal}; its stderr ended:\n${stderr.slice(-2000)}`),
      ),
    );
    try {
      await waitFor(() => stderr.includes('{legacy_url}') || child.exitCode !== null, {
        timeoutMs: 45_000,
        what: 'the banner',
      });
      expect(child.exitCode).toBeNull();
    } catch (err) {
      child.kill('SIGKILL');
      throw err;
    }
    return {
      hints: readHints(env.DATA_DIR!) as { baseUrl: string; gatewayUrl: string },
      stop: async () => {
        child.kill('SIGTERM');
        expect(await exited).toBe(0);
      },
      kill: () => child.exitCode === null && child.kill('SIGKILL'),
    };
  }

  it('keeps its internal secret in DATA_DIR (0600): provider keys and developer tokens sealed with it open after a restart', async () => {
    const data = tempDir('standalone-restart-');
    const sim = await startProviderSimulator({ port: 0 });
    let platform = await startReady({ DATA_DIR: data.dir });
    try {
      const { baseUrl, gatewayUrl } = platform.hints;
      const legacyUrl = `${baseUrl}/legacy`;
      const operator = (await callJson(`${baseUrl}/v2/login/anonymous`, 'POST')).body;
      const cli = async (...argv: string[]) => {
        const lines: string[] = [];
        const code = await runCli(
          argv,
          { DATA_DIR: data.dir, PLATFORM_TOKEN: operator.token },
          { out: () => undefined, err: (l) => lines.push(l) },
        );
        return { code, err: lines.join('\n') };
      };
      expect(await cli('admin', 'grant', operator.userId)).toMatchObject({ code: 0 });
      expect(await cli(...providersAddSim(sim, 'sk-kept'))).toMatchObject({ code: 0 });
      const model = await callJson(`${gatewayUrl}/v1/models`, 'POST', {
        bearer: operator.token,
        body: {
          model_id: 'kept/gpt',
          type: 'completion',
          provider_config: { provider: 'sim', model: 'gpt-kept' },
        },
      });
      expect(model.status).toBe(201);
      expect(await cli('org', 'create', 'kept-org')).toMatchObject({ code: 0 });
      const signup = await callJson(`${legacyUrl}/v2/auth/signup`, 'POST', {
        body: { username: 'keeper', password: 'a long enough password' },
      });
      expect(signup.status).toBe(200);
      const session = { 'x-legacy-session-token': signup.body.sessionToken as string };
      const created = await fetch(`${legacyUrl}/v2/bots`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...session },
        body: JSON.stringify({ name: 'Kept', lang: 'en' }),
      });
      expect(created.status).toBe(200);
      const { developerToken } = (await created.json()) as { developerToken: string };
      expect(developerToken).toMatch(/^ldt_/);
      await platform.stop();

      platform = await startReady({ DATA_DIR: data.dir });
      const tested = await cli('providers', 'test', 'sim', '--org', 'kept-org');
      expect(tested).toMatchObject({ code: 0 });
      expect(JSON.stringify(sim.requests().at(-1))).toContain('sk-kept');
      const bots = await fetch(`${platform.hints.baseUrl}/legacy/v2/bots`, { headers: session });
      expect(bots.status).toBe(200);
      expect(JSON.stringify(await bots.json())).toContain(developerToken);
      await platform.stop();
      expect(statSync(path.join(data.dir, 'internal.secret')).mode & 0o777).toBe(0o600);
    } finally {
      platform.kill();
      await sim.close();
      data.remove();
    }
  }, 150_000);

  it('refuses a kept secret it cannot use: exit 1 with one line, never a new secret', async () => {
    const data = tempDir('standalone-bad-secret-');
    const file = path.join(data.dir, 'internal.secret');
    writeFileSync(file, 'too-short\n', { mode: 0o600 });
    try {
      const { code, output } = await startUntilExit({
        PORT: '0',
        DATA_DIR: data.dir,
        PLATFORM_INTERNAL_SECRET: '',
      });
      expect(code).toBe(1);
      expect(output).toContain(
        `cannot start: ${file} does not hold an internal secret (at least 32 characters): restore it from a backup of this data folder, or set PLATFORM_INTERNAL_SECRET to the secret this data was sealed with`,
      );
      expect(output).not.toContain('"service":"auth"');
      expect(readFileSync(file, 'utf8')).toBe('too-short\n');
      expect(existsSync(path.join(data.dir, 'standalone.lock'))).toBe(false);
    } finally {
      data.remove();
    }
  }, 60_000);
});

describe('pnpm start killed with SIGKILL', () => {
  it('each service shuts down in full on its own (its store closed), llm-quota with its usage consumer included', async () => {
    const data = tempDir('standalone-sigkill-');
    const platform = spawn(process.execPath, ['--require', 'tsx/cjs', 'services/standalone/src/main.ts'], {
      cwd: ROOT,
      env: { ...process.env, PORT: '0', HOST: '127.0.0.1', DATA_DIR: data.dir },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    platform.stdout!.on('data', (d: Buffer) => {
      stdout += d.toString();
    });
    platform.stderr!.on('data', (d: Buffer) => {
      stderr += d.toString();
    });
    const services = ['auth', 'llm-quota', 'llm-gateway', 'legacy-agent', 'edge'];
    const stopped = () =>
      services.filter((name) =>
        stdout
          .split('\n')
          .some((line) => line.includes(`"service":"${name}"`) && line.includes('"msg":"stopped"')),
      );
    try {
      await waitFor(() => stderr.includes('{legacy_url}') || platform.exitCode !== null, {
        timeoutMs: 45_000,
        what: 'the banner',
      });
      platform.kill('SIGKILL');
      await waitFor(() => stopped().length === services.length, {
        timeoutMs: 20_000,
        what: 'every service stopped',
      }).catch(() => undefined);
      expect(stopped().sort()).toEqual([...services].sort());
    } finally {
      if (platform.exitCode === null) platform.kill('SIGKILL');
      // a child still running (none should) would keep writing there
      for (const pid of Object.values<number>(readHints(data.dir)?.pids ?? {}))
        if (alive(pid)) process.kill(pid, 'SIGKILL');
      data.remove();
    }
  }, 90_000);
});

describe('pnpm start killed while it stops', () => {
  it('keeps its services listed in standalone.json until they exited: the next start waits for them', async () => {
    const data = tempDir('standalone-killed-stopping-');
    const platform = spawn(process.execPath, ['--require', 'tsx/cjs', 'services/standalone/src/main.ts'], {
      cwd: ROOT,
      env: { ...process.env, PORT: '0', HOST: '127.0.0.1', DATA_DIR: data.dir },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    platform.stderr!.on('data', (d: Buffer) => {
      stderr += d.toString();
    });
    let pids: Record<string, number> = {};
    try {
      await waitFor(() => stderr.includes('{legacy_url}') || platform.exitCode !== null, {
        timeoutMs: 45_000,
        what: 'the banner',
      });
      pids = readHints(data.dir).pids;
      // auth, stopped last, is slow to stop (held still) when the supervisor is killed
      process.kill(pids.auth!, 'SIGSTOP');
      platform.kill('SIGTERM');
      await waitFor(() => readHints(data.dir)?.states?.auth === 'stopping', {
        timeoutMs: 30_000,
        what: 'auth asked to stop',
      });
      const exited = once(platform, 'exit');
      platform.kill('SIGKILL');
      await exited;
      expect(readHints(data.dir)).toMatchObject({ state: 'stopping', pids: { auth: pids.auth } });
      const { code, output } = await startUntilExit({ PORT: '0', DATA_DIR: data.dir });
      expect(code).toBe(1);
      expect(output).toContain(`(process ${pids.auth}, a service of it still stopping)`);
    } finally {
      killAll(platform, pids);
      data.remove();
    }
  }, 120_000);
});

describe('pnpm start stopped while its services start (their database does not answer)', () => {
  const services = ['auth', 'legacy-agent', 'llm-gateway', 'llm-quota'];

  /** `pnpm start` on a database that does not answer: its services wait for it, spawned and not listening */
  async function startWaiting(dataDir: string) {
    const closed = net.createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const mongoPort = (closed.address() as net.AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    const platform = spawn(process.execPath, ['--require', 'tsx/cjs', 'services/standalone/src/main.ts'], {
      cwd: ROOT,
      env: {
        ...process.env,
        PORT: '0',
        HOST: '127.0.0.1',
        DATA_DIR: dataDir,
        MONGO_URL: `mongodb://127.0.0.1:${mongoPort}/platform`,
        SIGNING_KEYS_ENCRYPTION_KEY: randomBytes(48).toString('base64'),
      },
      stdio: 'ignore',
    });
    const listed = () => {
      const hints = readHints(dataDir);
      return Object.keys(hints?.pids ?? {}).length === services.length && hints;
    };
    try {
      const hints = await waitFor(listed, {
        timeoutMs: 30_000,
        what: 'the services listed in standalone.json',
      });
      return { platform, hints, pids: hints.pids as Record<string, number> };
    } catch (err) {
      platform.kill('SIGKILL');
      throw err;
    }
  }

  it('lists each process from its spawn in standalone.json: the CLI says it is starting, the next start waits for them', async () => {
    const data = tempDir('standalone-killed-starting-');
    // what a platform killed with SIGKILL before left there: its lock and its file, naming ports nothing listens on
    const gone = spawnSync(process.execPath, ['-e', '']).pid;
    writeFileSync(path.join(data.dir, 'standalone.lock'), `${gone}\n`);
    writeFileSync(
      path.join(data.dir, 'standalone.json'),
      JSON.stringify({ authUrl: 'http://127.0.0.1:1', internalSecret: 'old', pids: {} }),
    );
    const { platform, hints, pids } = await startWaiting(data.dir);
    try {
      expect(hints).toMatchObject({
        state: 'starting',
        states: Object.fromEntries(services.map((s) => [s, 'starting'])),
      });
      expect(Object.keys(pids).sort()).toEqual(services);
      expect(hints.authUrl).toBeUndefined();
      const lines: string[] = [];
      const code = await runCli(
        ['keys', 'list'],
        { DATA_DIR: data.dir },
        { out: () => undefined, err: (l) => lines.push(l) },
      );
      expect(code).toBe(2);
      expect(lines.join('\n')).toContain(`The pnpm start on ${data.dir} is still starting`);
      // one service slow to stop (held still), as the supervisor is killed
      process.kill(pids.auth!, 'SIGSTOP');
      const exited = once(platform, 'exit');
      platform.kill('SIGKILL');
      await exited;
      const { code: again, output } = await startUntilExit({ PORT: '0', DATA_DIR: data.dir });
      expect(again).toBe(1);
      expect(output).toContain(
        `cannot start: ${data.dir} is in use by a pnpm start that was killed (process ${pids.auth}, a service of it still stopping)`,
      );
    } finally {
      killAll(platform, pids);
      data.remove();
    }
  }, 90_000);

  it('SIGTERM stops the services started so far, frees the data folder and exits 0', async () => {
    const data = tempDir('standalone-stopped-starting-');
    const { platform, pids } = await startWaiting(data.dir);
    try {
      const exited = new Promise<number | null>((resolve) => platform.once('exit', (code) => resolve(code)));
      platform.kill('SIGTERM');
      expect(await exited).toBe(0);
      for (const pid of Object.values(pids)) expect(alive(pid)).toBe(false);
      expect(existsSync(path.join(data.dir, 'standalone.lock'))).toBe(false);
      expect(existsSync(path.join(data.dir, 'standalone.json'))).toBe(false);
    } finally {
      if (platform.exitCode === null) platform.kill('SIGKILL');
      for (const pid of Object.values(pids)) if (alive(pid)) process.kill(pid, 'SIGKILL');
      data.remove();
    }
  }, 60_000);
});

const readHints = (dir: string) => {
  try {
    return JSON.parse(readFileSync(path.join(dir, 'standalone.json'), 'utf8'));
  } catch {
    return undefined;
  }
};

/** `pnpm start` until it exits (stopped if it gets ready); its exit code and everything it printed */
function startUntilExit(env: Record<string, string>): Promise<{ code: number | null; output: string }> {
  const child = spawn(process.execPath, ['--require', 'tsx/cjs', 'services/standalone/src/main.ts'], {
    cwd: ROOT,
    env: { ...process.env, HOST: '127.0.0.1', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout!.on('data', (d: Buffer) => {
    output += d.toString();
  });
  child.stderr!.on('data', (d: Buffer) => {
    output += d.toString();
    if (output.includes('Platform ready')) child.kill('SIGTERM');
  });
  return new Promise((resolve) => child.once('exit', (code) => resolve({ code, output })));
}

describe('pnpm start with a setting it cannot use', () => {
  it('a log level that is not one: exits 1 with the config error every service gives, not a stack trace', async () => {
    const data = tempDir('standalone-log-level-');
    try {
      const { code, output } = await startUntilExit({ PORT: '0', DATA_DIR: data.dir, LOG_LEVEL: 'verbose' });
      expect(code).toBe(1);
      expect(output).toMatch(/^config error: LOG_LEVEL: Invalid option: expected one of "fatal"\|/m);
      expect(output).not.toContain('    at ');
    } finally {
      data.remove();
    }
  }, 60_000);

  it('a data folder under a file: exits 1 naming the folder and DATA_DIR, not a stack trace', async () => {
    const data = tempDir('standalone-data-refused-');
    try {
      const file = path.join(data.dir, 'a-file');
      writeFileSync(file, 'x');
      const { code, output } = await startUntilExit({ PORT: '0', DATA_DIR: file });
      expect(code).toBe(1);
      expect(output).toMatch(
        // the supervisor says it first, where it keeps the internal secret (else each service, of its store)
        /cannot use \S+\/a-file(\/[a-z-]+)? as a data folder: a part of its path is a file; set DATA_DIR to a writable folder/,
      );
      expect(output).not.toContain('ENOTDIR');
    } finally {
      data.remove();
    }
  }, 60_000);
});
