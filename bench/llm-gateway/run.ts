/**
 * LLM gateway benchmark (issue 9): the same OpenAI chat request sent to the provider simulator
 * directly, through nginx `proxy_pass`, and through the edge + llm-gateway (the platform as `pnpm start`
 * runs it: one process per service, embedded store, IPC bus hub, session JWT, governance, quotas and
 * accounting on, llm-quota counting every event). The simulator answers at once. Reports, in one run:
 * - throughput and p50/p99 (wrk), with the CPU time per request of every platform process (from /proc);
 * - latency at a fixed rate (schedule-based, so queueing counts);
 * - streams, one at a time, on one clock (a second simulator in this process): the time before the
 *   provider is called (client send -> simulator receives the request), the forwarding of the first
 *   chunk (simulator writes it -> client receives it), and the whole time to first chunk.
 *
 *   BENCH_SECONDS=5 flock /tmp/bench.lock npx tsx bench/llm-gateway/run.ts
 *   # BENCH_SECONDS=10, BENCH_RATE=500, BENCH_CONNECTIONS=50, BENCH_STREAMS=300,
 *   # BENCH_LAYOUT=process (default) | single (every service in one process, as the tests run it)
 *   # BENCH_NODE_FLAGS="--max-semi-space-size=32" (more flags for every service process, to compare)
 *   # BENCH_OUTPUT_FILE=<file> (what the services print, e.g. with BENCH_NODE_FLAGS=--trace-gc)
 *   # BENCH_PROBE=0 (no stall probe: no GC or event-loop lines, and no 1 ms timer in every process)
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import {
  appendFileSync,
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { freePort, startProviderSimulator } from '@platform/testkit';
import { startStallProbe } from './stall-probe';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 50);
const RATE = Number(process.env.BENCH_RATE ?? 500);
const STREAMS = Number(process.env.BENCH_STREAMS ?? 300);

const dir = mkdtempSync(path.join(os.tmpdir(), 'gw-bench-'));
const probeDir = path.join(dir, 'probe');
// BENCH_PROBE=0: no stall probe anywhere (its 1 ms event-loop timer wakes every process 1,000 times a second)
const PROBE = process.env.BENCH_PROBE !== '0';
if (PROBE) startStallProbe(probeDir, 'bench-client');
const children: ChildProcess[] = [];
const BODY = JSON.stringify({
  model: 'sim/gpt',
  messages: [{ role: 'user', content: 'Say hello to the benchmark' }],
});

function child(
  args: string[],
  env: Record<string, string>,
  ready: RegExp,
): Promise<{ proc: ChildProcess; line: string }> {
  const proc = spawn(process.execPath, ['--import', 'tsx', ...args], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  children.push(proc);
  return new Promise((resolve, reject) => {
    let out = '';
    proc.stdout!.on('data', (d: Buffer) => {
      // BENCH_OUTPUT_FILE=<file>: what the children print (e.g. BENCH_NODE_FLAGS=--trace-gc) is kept there
      if (process.env.BENCH_OUTPUT_FILE) appendFileSync(process.env.BENCH_OUTPUT_FILE, d);
      out += d.toString();
      const line = out.split('\n').find((l) => ready.test(l));
      if (line) resolve({ proc, line });
    });
    proc.once('exit', (code) => reject(new Error(`${args[0]} exited (${code})`)));
  });
}

async function startNginx(port: number, upstreamPort: number): Promise<void> {
  for (const d of ['logs', 'tmp']) execFileSync('mkdir', ['-p', path.join(dir, d)]);
  writeFileSync(
    path.join(dir, 'nginx.conf'),
    `daemon off; worker_processes 1; pid ${dir}/nginx.pid; error_log ${dir}/logs/error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path ${dir}/tmp; proxy_temp_path ${dir}/tmp; fastcgi_temp_path ${dir}/tmp;
  uwsgi_temp_path ${dir}/tmp; scgi_temp_path ${dir}/tmp;
  upstream app { server 127.0.0.1:${upstreamPort}; keepalive 64; }
  server {
    listen 127.0.0.1:${port};
    location / { proxy_pass http://app; proxy_http_version 1.1; proxy_set_header Connection ""; proxy_buffering off; }
  }
}`,
  );
  const proc = spawn('nginx', ['-c', path.join(dir, 'nginx.conf'), '-p', dir], { stdio: 'inherit' });
  children.push(proc);
  for (let i = 0; i < 100; i++) {
    const ok = await fetch(`http://127.0.0.1:${port}/v1/models`).then(
      () => true,
      () => false,
    );
    if (ok) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error('nginx did not start');
}

const TICK_US = 1e6 / Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim());

/** CPU time of a process so far (µs), from /proc: what other load on the machine disturbs least. */
function cpuOf(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) * TICK_US;
}

function wrk(url: string, headers: Record<string, string>, pids?: Record<string, number>) {
  const script = path.join(dir, 'post.lua');
  const lines = [
    `wrk.method = "POST"`,
    `wrk.body = ${JSON.stringify(BODY)}`,
    `wrk.headers["content-type"] = "application/json"`,
  ];
  for (const [k, v] of Object.entries(headers)) lines.push(`wrk.headers["${k}"] = "${v}"`);
  writeFileSync(script, lines.join('\n'));
  const cpuBefore = Object.fromEntries(Object.entries(pids ?? {}).map(([name, pid]) => [name, cpuOf(pid)]));
  const out = execFileSync(
    'wrk',
    ['-t1', `-c${CONNECTIONS}`, `-d${SECONDS}s`, '--latency', '-s', script, url],
    {
      encoding: 'utf8',
    },
  );
  const non2xx = /Non-2xx or 3xx responses: (\d+)/.exec(out);
  if (non2xx) throw new Error(`${url}: ${non2xx[1]} non-2xx answers\n${out}`);
  const requests = Number(/(\d+) requests in/.exec(out)?.[1]);
  const cpu = Object.fromEntries(
    Object.entries(pids ?? {}).map(([name, pid]) => [name, (cpuOf(pid) - cpuBefore[name]!) / requests]),
  );
  return {
    cpuUsPerRequest: pids ? cpu : null,
    rps: Number(/Requests\/sec:\s+([\d.]+)/.exec(out)?.[1]),
    p50: /\s50%\s+(\S+)/.exec(out)?.[1] ?? '?',
    p99: /\s99%\s+(\S+)/.exec(out)?.[1] ?? '?',
  };
}

/** The options of a JSON POST to `target` with `body`. */
const jsonPost = (target: URL, headers: Record<string, string>, body: string, agent: http.Agent) => ({
  method: 'POST',
  host: target.hostname,
  port: target.port,
  path: target.pathname,
  headers: { ...headers, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
  agent,
});

const quantiles = (values: number[]) => {
  const v = [...values].sort((a, b) => a - b);
  const at = (q: number) => v[Math.min(v.length - 1, Math.floor(q * v.length))]!;
  return { p50: at(0.5), p99: at(0.99), max: v[v.length - 1]! };
};

/** POSTs on a fixed schedule; latency from each request's scheduled time (no coordinated omission). */
async function fixedRate(url: string, headers: Record<string, string>, rate: number, seconds: number) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 128 });
  const target = new URL(url);
  const total = rate * seconds;
  const latencies: number[] = [];
  let failures = 0;
  /** what the failures were: status codes, or the error's code */
  const failed = new Map<string, number>();
  /** the first answer of each failed status, as it came (whose error it is: the edge's, a service's, Node's) */
  const firstAnswers = new Map<string, string>();
  const note = (what: string) => {
    failures++;
    failed.set(what, (failed.get(what) ?? 0) + 1);
  };
  const start = performance.now();
  let sent = 0;
  await new Promise<void>((resolve) => {
    let done = 0;
    const finish = () => {
      if (++done === total) resolve();
    };
    const fire = (scheduled: number) => {
      const req = http.request(jsonPost(target, headers, BODY, agent), (res) => {
        const status = String(res.statusCode);
        if (res.statusCode !== 200) note(status);
        let answer = '';
        if (res.statusCode !== 200 && !firstAnswers.has(status)) res.on('data', (d: Buffer) => (answer += d));
        else res.resume();
        res.on('end', () => {
          if (answer) firstAnswers.set(status, answer.slice(0, 300));
          latencies.push(performance.now() - scheduled);
          finish();
        });
      });
      req.on('error', (err: Error & { code?: string }) => {
        note(err.code ?? err.message);
        finish();
      });
      req.end(BODY);
    };
    const tick = () => {
      const due = Math.min(total, Math.floor(((performance.now() - start) * rate) / 1000));
      while (sent < due) fire(start + (sent++ * 1000) / rate);
      if (sent < total) setTimeout(tick, 1);
    };
    tick();
  });
  agent.destroy();
  return {
    ...quantiles(latencies),
    failures,
    failed: [...failed].map(([what, n]) => `${n} × ${what}`).join(', '),
    firstAnswers: [...firstAnswers].map(([status, body]) => `${status}: ${body}`),
  };
}

/**
 * Per service process, what stalled it between two wall-clock times (stall-probe.ts's lines): GC pauses
 * over 1 ms (count, sum, longest, by kind) and the longest event-loop delay of any 250 ms window.
 */
function stallsBetween(from: number, to: number): string[] {
  if (!existsSync(probeDir)) return ['(no probe output)'];
  const out: string[] = [];
  for (const file of readdirSync(probeDir).sort()) {
    const service = file.replace(/-\d+\.log$/, '');
    let count = 0;
    let sum = 0;
    let longest = 0;
    let loopMax = 0;
    const byKind: Record<string, number> = {};
    for (const line of readFileSync(path.join(probeDir, file), 'utf8').split('\n')) {
      const [what, at, a, b] = line.split(' ');
      if (!at || Number(at) < from || Number(at) > to) continue;
      if (what === 'gc') {
        const ms = Number(b);
        count++;
        sum += ms;
        longest = Math.max(longest, ms);
        byKind[a!] = (byKind[a!] ?? 0) + 1;
      } else if (what === 'loop') loopMax = Math.max(loopMax, Number(a));
    }
    const kinds = Object.entries(byKind)
      .map(([k, n]) => `${k} ${n}`)
      .join(', ');
    out.push(
      `${service.padEnd(13)} GC pauses > 1 ms: ${count} (${kinds || 'none'}), sum ${sum.toFixed(0)} ms, longest ${longest.toFixed(1)} ms; event loop's longest delay ${loopMax.toFixed(1)} ms`,
    );
  }
  return out;
}

/** The stream simulator's clock readings of the stream in flight (one at a time). */
const streamMarks = { request: 0, frame: 0 };

/**
 * Streams one at a time. Per stream, on this process's clock: `before` = client send -> the simulator
 * receives the request (everything done before the provider is called), `forward` = the simulator
 * writes the first chunk -> the client receives it, `ttfb` = client send -> first chunk received.
 */
async function streams(url: string, headers: Record<string, string>, body: string, n: number) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const target = new URL(url);
  const before: number[] = [];
  const forward: number[] = [];
  const ttfb: number[] = [];
  for (let i = 0; i < n; i++) {
    await new Promise<void>((resolve, reject) => {
      streamMarks.request = 0;
      streamMarks.frame = 0;
      const t0 = performance.now();
      let got = false;
      const req = http.request(jsonPost(target, headers, body, agent), (res) => {
        res.on('data', (d: Buffer) => {
          if (!got && d.toString().includes('data:')) {
            const at = performance.now();
            got = true;
            before.push(streamMarks.request - t0);
            forward.push(at - streamMarks.frame);
            ttfb.push(at - t0);
          }
        });
        res.on('end', () => (got ? resolve() : reject(new Error(`no chunk (${res.statusCode})`))));
      });
      req.on('error', reject);
      req.end(body);
    });
  }
  agent.destroy();
  const kept = (v: number[]) => quantiles(v.slice(Math.floor(n / 10)));
  const slowest = forward
    .slice(Math.floor(n / 10))
    .sort((a, b) => b - a)
    .slice(0, 8);
  return { before: kept(before), forward: kept(forward), ttfb: kept(ttfb), slowest };
}

async function main() {
  const [simPort, nginxPort] = await Promise.all([freePort(), freePort()]);
  await child(
    [path.join(__dirname, '..', 'llm-providers', 'simulator-server.ts')],
    { SIM_PORT: String(simPort) },
    /^http/,
  );
  // the stream measurement's simulator, on this process's clock
  const streamSim = await startProviderSimulator({
    observe: {
      request: () => {
        streamMarks.request = performance.now();
      },
      frame: (i) => {
        if (i === 0) streamMarks.frame = performance.now();
      },
    },
  });
  closers.push(() => streamSim.close());
  await startNginx(nginxPort, simPort);
  const platform = await child(
    // port 0: the edge takes a port no service can have taken first (a port picked here and bound later could be)
    [path.join(__dirname, 'platform-server.ts'), '0', path.join(dir, 'data')],
    {
      SIM_URL: `http://127.0.0.1:${simPort}`,
      SIM_STREAM_URL: streamSim.url,
      ...(PROBE ? { BENCH_PROBE_DIR: probeDir } : {}),
    },
    /^ready /,
  );
  const [, token, pidsJson, edgeUrl] = platform.line.split(' ') as [string, string, string, string];
  const pids = JSON.parse(pidsJson) as Record<string, number>;
  const auth = { authorization: `Bearer ${token}` };
  const targets: Array<{
    name: string;
    url: string;
    headers: Record<string, string>;
    pids?: Record<string, number>;
  }> = [
    { name: 'simulator direct', url: `http://127.0.0.1:${simPort}/v1/chat/completions`, headers: {} },
    { name: 'nginx proxy_pass', url: `http://127.0.0.1:${nginxPort}/v1/chat/completions`, headers: {} },
    {
      name: 'edge + llm-gateway',
      pids,
      url: `${edgeUrl}/llm/v1/chat/completions`,
      headers: auth,
    },
  ];
  console.log(
    `layout: ${process.env.BENCH_LAYOUT ?? 'process'}; load average ${os
      .loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}`,
  );
  // warm-up
  for (const t of targets) await fixedRate(t.url, t.headers, 100, 2);

  console.log(`\n## throughput (wrk -t1 -c${CONNECTIONS} -d${SECONDS}s, non-streaming chat)`);
  for (const t of targets) {
    const r = wrk(t.url, t.headers, t.pids);
    console.log(`${t.name.padEnd(20)} ${r.rps.toFixed(0).padStart(7)} req/s  p50 ${r.p50}  p99 ${r.p99}`);
    if (r.cpuUsPerRequest) {
      const parts = Object.entries(r.cpuUsPerRequest).map(([name, us]) => `${name} ${us.toFixed(0)}`);
      const total = Object.values(r.cpuUsPerRequest).reduce((a, b) => a + b, 0);
      console.log(`${''.padEnd(20)} CPU µs/request: ${parts.join(', ')}; total ${total.toFixed(0)}`);
    }
  }
  console.log(`\n## fixed rate ${RATE} req/s for ${SECONDS}s (latency from the scheduled time)`);
  const fixed: Record<string, { p50: number; p99: number }> = {};
  let gatewayPhase = { from: 0, to: 0 };
  for (const t of targets) {
    const from = Date.now();
    const r = await fixedRate(t.url, t.headers, RATE, SECONDS);
    if (t.pids) gatewayPhase = { from, to: Date.now() };
    fixed[t.name] = r;
    console.log(
      `${t.name.padEnd(20)} p50 ${r.p50.toFixed(2)} ms  p99 ${r.p99.toFixed(2)} ms  max ${r.max.toFixed(1)} ms  failures ${r.failures}${r.failures ? ` (${r.failed})` : ''}`,
    );
    for (const answer of r.firstAnswers) console.log(`${''.padEnd(20)} first ${answer}`);
  }
  const direct = fixed['simulator direct']!;
  const gw = fixed['edge + llm-gateway']!;
  console.log(
    `added by edge + gateway: p50 ${(gw.p50 - direct.p50).toFixed(2)} ms, p99 ${(gw.p99 - direct.p99).toFixed(2)} ms`,
  );
  console.log(`\n## stalls during the gateway's fixed-rate phase, per process (bench-client sends the load)`);
  for (const line of stallsBetween(gatewayPhase.from, gatewayPhase.to)) console.log(line);

  console.log(
    `\n## streams (${STREAMS} one at a time, first 10% dropped; one clock, simulator in this process)`,
  );
  const streamBody = (model: string) =>
    JSON.stringify({
      model,
      stream: true,
      messages: [{ role: 'user', content: 'Say hello to the benchmark' }],
    });
  const viaSim = await streams(`${streamSim.url}/v1/chat/completions`, {}, streamBody('gpt-sim'), STREAMS);
  const streamPhase = { from: Date.now(), to: 0 };
  const viaGw = await streams(`${edgeUrl}/llm/v1/chat/completions`, auth, streamBody('sim/stream'), STREAMS);
  streamPhase.to = Date.now();
  const line = (name: string, q: { p50: number; p99: number }, base: { p50: number; p99: number }) =>
    console.log(
      `${name.padEnd(52)} p50 ${q.p50.toFixed(2)} ms  p99 ${q.p99.toFixed(2)} ms  (direct p50 ${base.p50.toFixed(2)}, p99 ${base.p99.toFixed(2)})`,
    );
  line('before the provider is called (send -> provider)', viaGw.before, viaSim.before);
  line('first chunk forwarded (provider writes -> client)', viaGw.forward, viaSim.forward);
  line('time to first chunk (send -> first chunk)', viaGw.ttfb, viaSim.ttfb);
  console.log(`slowest first-chunk forwards: ${viaGw.slowest.map((x) => x.toFixed(2)).join(', ')} ms`);
  if (PROBE) {
    console.log(
      `stalls during the gateway's streams, per process (bench-client is the client and the simulator):`,
    );
    for (const line of stallsBetween(streamPhase.from, streamPhase.to)) console.log(line);
  }
  console.log(
    `added by edge + gateway: first-chunk forwarding p50 ${(viaGw.forward.p50 - viaSim.forward.p50).toFixed(2)} ms, p99 ${(viaGw.forward.p99 - viaSim.forward.p99).toFixed(2)} ms; time to first chunk p50 ${(viaGw.ttfb.p50 - viaSim.ttfb.p50).toFixed(2)} ms, p99 ${(viaGw.ttfb.p99 - viaSim.ttfb.p99).toFixed(2)} ms`,
  );
}

const closers: Array<() => Promise<void>> = [];

/** Stops every child and waits for it to exit (the platform closes its stores), then removes the data. */
async function teardown() {
  await Promise.all(
    children.map(
      (c) =>
        new Promise<void>((resolve) => {
          if (c.exitCode !== null || c.signalCode !== null) return resolve();
          const force = setTimeout(() => c.kill('SIGKILL'), 20_000);
          c.once('exit', () => {
            clearTimeout(force);
            resolve();
          });
          c.kill('SIGTERM');
        }),
    ),
  );
  for (const close of closers) await close();
  rmSync(dir, { recursive: true, force: true });
}

main()
  .catch((err) => {
    console.error(err);
    process.exitCode = 1;
  })
  .finally(() => teardown());
