/**
 * Throughput of `GET {gateway_url}/v1/quotas/usage` through the edge, against the edge's plain
 * authenticated throughput measured the same way on `GET {base_url}/v2/me` (auth's current-user read:
 * the same edge work — JWT check, cached principal, header hygiene, proxying — in front of a trivial
 * one-document read). The whole platform runs in one child process (standalone composition, embedded
 * store); autocannon drives it over loopback with keep-alive. The quota route is limited by the edge to
 * 60 requests a minute per consumer, so each request takes the next of USERS members' session tokens
 * (every answer must be a 200, or the run fails). Rounds alternate the two routes.
 *
 * Both req/s and the platform process's CPU time per request (from /proc) are reported; the CPU figure
 * is the one to compare on a shared machine, where req/s also measures the neighbours.
 *
 *   flock /tmp/bench.lock npx tsx bench/llm-quota/endpoint.ts   # BENCH_SECONDS=6, BENCH_CONNECTIONS=32, BENCH_ROUNDS=3
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { freePort, waitFor } from '@platform/testkit';

// biome-ignore lint/suspicious/noExplicitAny: autocannon ships no types
const autocannon = require('autocannon') as any;

const SECONDS = Number(process.env.BENCH_SECONDS ?? 6);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 32);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const USERS = Number(process.env.BENCH_USERS ?? 1_500);
/** write a CPU profile of the platform process into this folder */
const PROFILE_DIR = process.env.BENCH_PROFILE_DIR;
/** measure only the routes whose path contains this text */
const ONLY = process.env.BENCH_ONLY;

interface Figures {
  rps: number;
  p50: number;
  p99: number;
  non2xx: number;
  /** CPU time (user + system) of the platform process per request, µs */
  cpuUs: number;
}

const TICK_US = 1e6 / Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim());

/** CPU time of a process so far (µs), from /proc: unlike req/s, insensitive to other load on the machine. */
function cpuOf(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) * TICK_US;
}

async function main() {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'quota-bench-'));
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const child: ChildProcess = spawn(
    process.execPath,
    [
      ...(PROFILE_DIR ? ['--cpu-prof', `--cpu-prof-dir=${PROFILE_DIR}`] : []),
      '--import',
      'tsx',
      path.join(__dirname, 'platform-server.ts'),
      String(port),
      dir,
    ],
    {
      env: {
        ...process.env,
        ANONYMOUS_LOGIN_RATE_LIMIT: '1000000',
        PLATFORM_INTERNAL_SECRET: randomBytes(32).toString('base64url'),
      },
      stdio: ['pipe', 'pipe', 'inherit'],
    },
  );
  let output = '';
  child.stdout!.on('data', (d: Buffer) => {
    output += d.toString();
  });
  try {
    await waitFor(() => output.includes('ready'), { timeoutMs: 60_000, what: 'the platform' });
    const call = async (method: string, p: string, token: string | null, body?: unknown) => {
      const headers: Record<string, string> = {};
      if (token) headers.authorization = `Bearer ${token}`;
      if (body !== undefined) headers['content-type'] = 'application/json';
      const res = await fetch(`${base}${p}`, {
        method,
        headers,
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      return { status: res.status, body: (await res.json()) as Record<string, string> };
    };
    const login = async () =>
      (await call('POST', '/v2/login/anonymous', null)).body as { userId: string; token: string };

    // An organization with USERS members (role `member`: models:read), each a consumer of its own.
    const owner = await login();
    if ((await call('POST', '/v2/orgs', owner.token, { slug: 'bench-co', name: 'Bench' })).status !== 201) {
      throw new Error('could not create the organization');
    }
    const tokens: string[] = [];
    const ids: string[] = [];
    for (let i = 0; i < USERS; i++) {
      const user = await login();
      const added = await call('POST', '/v2/orgs/bench-co/members', owner.token, {
        userId: user.userId,
        role: 'member',
      });
      if (added.status >= 300) throw new Error(`could not add a member: ${added.status}`);
      tokens.push(user.token);
      ids.push(user.userId);
    }
    child.stdin!.write(`${ids.slice(0, 200).join(',')}\n`);
    await waitFor(() => output.includes('seeded'), { timeoutMs: 180_000, what: 'usage seeded' });
    const check = await call('GET', '/llm/v1/quotas/usage', tokens[0]!);
    if (check.status !== 200) throw new Error(`quota endpoint answered ${check.status}`);

    let next = 0;
    const rotating = (p: string) => ({
      method: 'GET',
      path: p,
      setupRequest: (req: { headers: Record<string, string> }) => {
        req.headers = { ...req.headers, authorization: `Bearer ${tokens[next++ % tokens.length]}` };
        return req;
      },
    });
    const run = async (p: string, seconds: number): Promise<Figures> => {
      const cpuBefore = cpuOf(child.pid!);
      const result = await autocannon({
        url: base,
        connections: CONNECTIONS,
        duration: seconds,
        requests: [rotating(p)],
      });
      const cpuUs = (cpuOf(child.pid!) - cpuBefore) / result.requests.total;
      return {
        rps: result.requests.average,
        p50: result.latency.p50,
        p99: result.latency.p99,
        non2xx: result.non2xx,
        cpuUs,
      };
    };
    // Warm-up: every token once on each route (principal cache, JIT), within the rate limit.
    await run('/v2/me', 2);
    await run('/llm/v1/quotas/usage', 1);

    const routes = { '/v2/me': [] as Figures[], '/llm/v1/quotas/usage': [] as Figures[] };
    for (let round = 0; round < ROUNDS; round++) {
      for (const p of Object.keys(routes) as Array<keyof typeof routes>) {
        if (ONLY && !p.includes(ONLY)) continue;
        const figures = await run(p, SECONDS);
        if (figures.non2xx) throw new Error(`${p}: ${figures.non2xx} non-2xx answers (rate limited?)`);
        routes[p].push(figures);
      }
    }
    const mean = (list: Figures[], key: keyof Figures) => list.reduce((s, f) => s + f[key], 0) / list.length;
    console.log(
      `\nllm-quota endpoint benchmark: ${ROUNDS} rounds x ${SECONDS}s per route, ${CONNECTIONS} connections, ${USERS} members, loopback, standalone platform on the embedded store\n`,
    );
    console.log('route (through the edge)                    req/s    p50 ms  p99 ms  CPU µs/req');
    for (const [p, list] of Object.entries(routes)) {
      if (!list.length) continue;
      console.log(
        `${`GET ${p}`.padEnd(42)} ${String(Math.round(mean(list, 'rps'))).padStart(7)} ${mean(list, 'p50').toFixed(1).padStart(8)} ${mean(list, 'p99').toFixed(1).padStart(7)} ${String(Math.round(mean(list, 'cpuUs'))).padStart(11)}`,
      );
    }
    if (ONLY) return;
    const quota = routes['/llm/v1/quotas/usage'];
    const plain = routes['/v2/me'];
    const byRate = mean(quota, 'rps') / mean(plain, 'rps');
    // The platform is one single-threaded process: its throughput at saturation is 1 / CPU per request.
    const byCpu = mean(plain, 'cpuUs') / mean(quota, 'cpuUs');
    console.log(`\nquota endpoint / plain authenticated GET, by req/s: ${(byRate * 100).toFixed(1)}%`);
    console.log(
      `quota endpoint / plain authenticated GET, by CPU per request: ${(byCpu * 100).toFixed(1)}% (target >= 80%)`,
    );
    if (byCpu < 0.8) process.exitCode = 1;
  } finally {
    child.kill('SIGINT');
    await new Promise((resolve) => child.once('exit', resolve));
    rmSync(dir, { recursive: true, force: true });
  }
}

void main().catch((err) => {
  console.error(err);
  process.exit(1);
});
