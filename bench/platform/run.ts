/**
 * Whole-platform benchmark (issue 13 item 6): `GET /v2/me` with a session JWT through the platform as
 * `pnpm start` runs it (each service in its own process), beside the edge alone on a trivial upstream,
 * in one run. wrk on loopback, 50 connections; throughput, p50/p99, and the CPU time each process spent
 * per request (from /proc: insensitive to neighbours on a shared machine).
 *
 *   npx tsx bench/platform/run.ts                 # BENCH_SECONDS=10, BENCH_ROUNDS=3 by default
 *
 * Stops by itself; prints the figures to stdout.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { freePort, waitFor } from '@platform/testkit';
import { benchCredentials, writeBenchKey } from '../edge/credentials';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 50);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const WARMUP_SECONDS = Number(process.env.BENCH_WARMUP_SECONDS ?? 3);
const ROOT = path.resolve(__dirname, '../..');

const dir = mkdtempSync(path.join(os.tmpdir(), 'platform-bench-'));
const children: ChildProcess[] = [];
const TICK_US = 1e6 / Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim());

function cpuOf(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) * TICK_US;
}

interface Result {
  rps: number;
  p50: number;
  p99: number;
  /** µs of CPU per request, by process */
  cpu: Record<string, number>;
}

const toMs = (text: string) =>
  text.endsWith('us')
    ? Number.parseFloat(text) / 1000
    : text.endsWith('ms')
      ? Number.parseFloat(text)
      : Number.parseFloat(text) * 1000;

function wrk(
  url: string,
  headers: Record<string, string>,
  seconds: number,
  pids: Record<string, number>,
): Result {
  const args = ['-t1', `-c${CONNECTIONS}`, `-d${seconds}s`, '--latency'];
  for (const [k, v] of Object.entries(headers)) args.push('-H', `${k}: ${v}`);
  args.push(url);
  const before = Object.fromEntries(Object.entries(pids).map(([n, pid]) => [n, cpuOf(pid)]));
  const out = execFileSync('wrk', args, { encoding: 'utf8' });
  const requests = Number(/(\d+) requests in/.exec(out)?.[1]);
  const non2xx = /Non-2xx or 3xx responses: (\d+)/.exec(out);
  if (non2xx) throw new Error(`${url}: ${non2xx[1]} non-2xx answers\n${out}`);
  return {
    rps: Number(/Requests\/sec:\s+([\d.]+)/.exec(out)?.[1]),
    p50: toMs(/\s50%\s+(\S+)/.exec(out)?.[1] ?? 'NaN'),
    p99: toMs(/\s99%\s+(\S+)/.exec(out)?.[1] ?? 'NaN'),
    cpu: Object.fromEntries(
      Object.entries(pids).map(([n, pid]) => [n, (cpuOf(pid) - before[n]!) / requests]),
    ),
  };
}

function spawnReady(args: string[], env: NodeJS.ProcessEnv, readyText: string, stream: 'stdout' | 'stderr') {
  // as pnpm start runs its sources (package.json)
  const child = spawn(process.execPath, ['--require', 'tsx/cjs', ...args], {
    cwd: ROOT,
    env,
    stdio: ['ignore', stream === 'stdout' ? 'pipe' : 'ignore', stream === 'stderr' ? 'pipe' : 'inherit'],
  });
  children.push(child);
  return new Promise<ChildProcess>((resolve, reject) => {
    let seen = '';
    child[stream]!.on('data', (d: Buffer) => {
      seen += d.toString();
      if (seen.includes(readyText)) resolve(child);
    });
    child.once('exit', (code) => reject(new Error(`${args.join(' ')} exited (${code})`)));
  });
}

async function startWholePlatform() {
  const port = await freePort();
  const dataDir = path.join(dir, 'data');
  await spawnReady(
    ['services/standalone/src/main.ts'],
    { ...process.env, PORT: String(port), HOST: '127.0.0.1', DATA_DIR: dataDir, LOG_LEVEL: 'warn' },
    'Platform ready',
    'stderr',
  );
  const hints = JSON.parse(readFileSync(path.join(dataDir, 'standalone.json'), 'utf8'));
  const base = `http://127.0.0.1:${port}`;
  const login = await fetch(`${base}/v2/login/anonymous`, { method: 'POST' });
  const { token } = (await login.json()) as { token: string };
  return { url: `${base}/v2/me`, token, pids: { edge: hints.pids.edge, auth: hints.pids.auth } };
}

async function startEdgeOnTrivialUpstream() {
  const keyFile = path.join(dir, 'key.pem');
  writeBenchKey(keyFile);
  process.env.BENCH_KEY_FILE = keyFile;
  const env = { ...process.env, BENCH_KEY_FILE: keyFile };
  const [upstreamPort, authPort, edgePort] = await Promise.all([freePort(), freePort(), freePort()]);
  const servers = path.join(ROOT, 'bench/edge/servers.ts');
  const upstream = await spawnReady([servers, 'upstream', String(upstreamPort)], env, 'ready', 'stdout');
  await spawnReady([servers, 'auth', String(authPort)], env, 'ready', 'stdout');
  const edge = await spawnReady(
    [servers, 'edge', String(edgePort), `http://127.0.0.1:${authPort}`, `http://127.0.0.1:${upstreamPort}`],
    env,
    'ready',
    'stdout',
  );
  return {
    url: `http://127.0.0.1:${edgePort}/llm/v1/bench`,
    token: benchCredentials().sessionJwt(),
    pids: { edge: edge.pid!, upstream: upstream.pid! },
  };
}

async function main() {
  const platform = await startWholePlatform();
  const edgeAlone = await startEdgeOnTrivialUpstream();
  const scenarios = [
    { name: 'pnpm start: GET /v2/me, session JWT', ...platform },
    { name: 'edge alone, trivial upstream, session JWT', ...edgeAlone },
  ];
  console.log(
    `wrk -t1 -c${CONNECTIONS} -d${SECONDS}s --latency on loopback, ${os.cpus().length} CPUs, load average ${os
      .loadavg()
      .map((l) => l.toFixed(1))
      .join(' ')}; ${ROUNDS} interleaved rounds, median shown`,
  );
  const results: Record<string, Result[]> = {};
  for (let round = 0; round < ROUNDS; round++) {
    for (const s of scenarios) {
      const headers = { authorization: `Bearer ${s.token}` };
      wrk(s.url, headers, WARMUP_SECONDS, {});
      const r = wrk(s.url, headers, SECONDS, s.pids);
      results[s.name] = [...(results[s.name] ?? []), r];
      const cpu = Object.entries(r.cpu)
        .map(([n, us]) => `${n} ${us.toFixed(0)}`)
        .join(', ');
      console.log(
        `  round ${round + 1} ${s.name}: ${r.rps.toFixed(0)} req/s, p99 ${r.p99.toFixed(2)} ms, CPU µs/req: ${cpu} (load average ${os.loadavg()[0]!.toFixed(1)})`,
      );
    }
  }
  const median = (values: number[]) => values.sort((x, y) => x - y)[Math.floor(values.length / 2)]!;
  console.log('\nmedians:');
  for (const s of scenarios) {
    const rs = results[s.name]!;
    const cpuNames = Object.keys(rs[0]!.cpu);
    const cpu = cpuNames.map((n) => `${n} ${median(rs.map((r) => r.cpu[n]!)).toFixed(0)}`).join(' + ');
    const total = median(rs.map((r) => Object.values(r.cpu).reduce((a, b) => a + b, 0)));
    console.log(
      `  ${s.name.padEnd(44)} ${median(rs.map((r) => r.rps))
        .toFixed(0)
        .padStart(6)} req/s   p50 ${median(rs.map((r) => r.p50)).toFixed(
        2,
      )} ms   p99 ${median(rs.map((r) => r.p99)).toFixed(2)} ms   CPU µs/req ${cpu} = ${total.toFixed(0)}` +
        `  (=> ${(2e6 / total).toFixed(0)} req/s if 2 cores were all theirs)`,
    );
  }
  const whole = results[scenarios[0]!.name]!;
  const [rps, p99] = [median(whole.map((r) => r.rps)), median(whole.map((r) => r.p99))];
  console.log(
    `\ntarget (issue 13 item 6, quiet machine): >= 6,000 req/s and p99 <= 20 ms through pnpm start: ${
      rps >= 6000 && p99 <= 20 ? 'met' : 'not met'
    } in this run (${rps.toFixed(0)} req/s, p99 ${p99.toFixed(1)} ms, load average ${os.loadavg()[0]!.toFixed(1)})`,
  );
}

main()
  .catch((err) => {
    console.error(err);
    process.exitCode = 1;
  })
  .finally(async () => {
    for (const c of children) if (c.exitCode === null) c.kill('SIGTERM');
    await waitFor(() => children.every((c) => c.exitCode !== null || c.signalCode !== null), {
      timeoutMs: 20_000,
    }).catch(() => undefined);
    for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
    process.exit();
  });
