/**
 * LLM gateway benchmark (issue 9): the same OpenAI chat request sent to the provider simulator
 * directly, through nginx `proxy_pass`, and through the edge + llm-gateway (standalone platform,
 * embedded store, in-process bus, session JWT, governance, quotas and accounting on). The simulator
 * answers at once. Reports throughput and p50/p99 (wrk), latency at a fixed rate (schedule-based, so
 * queueing counts), and a stream's time to first chunk.
 *
 *   flock /tmp/bench.lock npx tsx bench/llm-gateway/run.ts     # BENCH_SECONDS=10, BENCH_RATE=500
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { freePort } from '@platform/testkit';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 50);
const RATE = Number(process.env.BENCH_RATE ?? 500);
const STREAMS = Number(process.env.BENCH_STREAMS ?? 300);

const dir = mkdtempSync(path.join(os.tmpdir(), 'gw-bench-'));
const children: ChildProcess[] = [];
const BODY = JSON.stringify({
  model: 'sim/gpt',
  messages: [{ role: 'user', content: 'Say hello to the benchmark' }],
});
const STREAM_BODY = JSON.stringify({
  model: 'sim/gpt',
  stream: true,
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

function wrk(url: string, headers: Record<string, string>, pid?: number) {
  const script = path.join(dir, 'post.lua');
  const lines = [
    `wrk.method = "POST"`,
    `wrk.body = ${JSON.stringify(BODY)}`,
    `wrk.headers["content-type"] = "application/json"`,
  ];
  for (const [k, v] of Object.entries(headers)) lines.push(`wrk.headers["${k}"] = "${v}"`);
  writeFileSync(script, lines.join('\n'));
  const cpuBefore = pid ? cpuOf(pid) : 0;
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
  return {
    cpuUsPerRequest: pid ? (cpuOf(pid) - cpuBefore) / requests : null,
    rps: Number(/Requests\/sec:\s+([\d.]+)/.exec(out)?.[1]),
    p50: /\s50%\s+(\S+)/.exec(out)?.[1] ?? '?',
    p99: /\s99%\s+(\S+)/.exec(out)?.[1] ?? '?',
  };
}

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
  const start = performance.now();
  let sent = 0;
  await new Promise<void>((resolve) => {
    let done = 0;
    const finish = () => {
      if (++done === total) resolve();
    };
    const fire = (scheduled: number) => {
      const req = http.request(
        {
          method: 'POST',
          host: target.hostname,
          port: target.port,
          path: target.pathname,
          headers: {
            ...headers,
            'content-type': 'application/json',
            'content-length': Buffer.byteLength(BODY),
          },
          agent,
        },
        (res) => {
          if (res.statusCode !== 200) failures++;
          res.resume();
          res.on('end', () => {
            latencies.push(performance.now() - scheduled);
            finish();
          });
        },
      );
      req.on('error', () => {
        failures++;
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
  return { ...quantiles(latencies), failures };
}

/** Time to the first SSE `data:` frame of a stream, one stream at a time. */
async function firstChunk(url: string, headers: Record<string, string>, n: number) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const target = new URL(url);
  const times: number[] = [];
  for (let i = 0; i < n; i++) {
    times.push(
      await new Promise<number>((resolve, reject) => {
        const t0 = performance.now();
        let got = false;
        const req = http.request(
          {
            method: 'POST',
            host: target.hostname,
            port: target.port,
            path: target.pathname,
            headers: {
              ...headers,
              'content-type': 'application/json',
              'content-length': Buffer.byteLength(STREAM_BODY),
            },
            agent,
          },
          (res) => {
            res.on('data', (d: Buffer) => {
              if (!got && d.toString().includes('data:')) {
                got = true;
                resolve(performance.now() - t0);
              }
            });
            res.on('end', () => {
              if (!got) reject(new Error(`no chunk (${res.statusCode})`));
            });
          },
        );
        req.on('error', reject);
        req.end(STREAM_BODY);
      }),
    );
  }
  agent.destroy();
  return quantiles(times.slice(Math.floor(n / 10)));
}

async function main() {
  const [simPort, nginxPort, edgePort] = await Promise.all([freePort(), freePort(), freePort()]);
  await child(
    [path.join(__dirname, '..', 'llm-providers', 'simulator-server.ts')],
    { SIM_PORT: String(simPort) },
    /^http/,
  );
  await startNginx(nginxPort, simPort);
  const platform = await child(
    [path.join(__dirname, 'platform-server.ts'), String(edgePort), path.join(dir, 'data')],
    { SIM_URL: `http://127.0.0.1:${simPort}` },
    /^ready /,
  );
  const token = platform.line.split(' ')[1]!;
  const targets: Array<{ name: string; url: string; headers: Record<string, string>; pid?: number }> = [
    { name: 'simulator direct', url: `http://127.0.0.1:${simPort}/v1/chat/completions`, headers: {} },
    { name: 'nginx proxy_pass', url: `http://127.0.0.1:${nginxPort}/v1/chat/completions`, headers: {} },
    {
      name: 'edge + llm-gateway',
      pid: platform.proc.pid,
      url: `http://127.0.0.1:${edgePort}/llm/v1/chat/completions`,
      headers: { authorization: `Bearer ${token}` },
    },
  ];
  // warm-up
  for (const t of targets) await fixedRate(t.url, t.headers, 100, 2);

  console.log(`\n## throughput (wrk -t1 -c${CONNECTIONS} -d${SECONDS}s, non-streaming chat)`);
  for (const t of targets) {
    const r = wrk(t.url, t.headers, t.pid);
    const cpu = r.cpuUsPerRequest === null ? '' : `  platform CPU ${r.cpuUsPerRequest.toFixed(0)} µs/req`;
    console.log(
      `${t.name.padEnd(20)} ${r.rps.toFixed(0).padStart(7)} req/s  p50 ${r.p50}  p99 ${r.p99}${cpu}`,
    );
  }
  console.log(`\n## fixed rate ${RATE} req/s for ${SECONDS}s (latency from the scheduled time)`);
  const fixed: Record<string, { p50: number; p99: number }> = {};
  for (const t of targets) {
    const r = await fixedRate(t.url, t.headers, RATE, SECONDS);
    fixed[t.name] = r;
    console.log(
      `${t.name.padEnd(20)} p50 ${r.p50.toFixed(2)} ms  p99 ${r.p99.toFixed(2)} ms  max ${r.max.toFixed(1)} ms  failures ${r.failures}`,
    );
  }
  const direct = fixed['simulator direct']!;
  const gw = fixed['edge + llm-gateway']!;
  console.log(
    `added by edge + gateway: p50 ${(gw.p50 - direct.p50).toFixed(2)} ms, p99 ${(gw.p99 - direct.p99).toFixed(2)} ms`,
  );

  console.log(`\n## stream: time to first chunk (${STREAMS} streams one at a time, first 10% dropped)`);
  const ttfb: Record<string, { p50: number; p99: number }> = {};
  for (const t of targets) {
    const r = await firstChunk(t.url, t.headers, STREAMS);
    ttfb[t.name] = r;
    console.log(`${t.name.padEnd(20)} p50 ${r.p50.toFixed(2)} ms  p99 ${r.p99.toFixed(2)} ms`);
  }
  const s = ttfb['edge + llm-gateway']!;
  const d = ttfb['simulator direct']!;
  console.log(
    `added before the first chunk: p50 ${(s.p50 - d.p50).toFixed(2)} ms, p99 ${(s.p99 - d.p99).toFixed(2)} ms`,
  );
}

main()
  .catch((err) => {
    console.error(err);
    process.exitCode = 1;
  })
  .finally(() => {
    for (const c of children) c.kill('SIGTERM');
    setTimeout(() => rmSync(dir, { recursive: true, force: true }), 500);
  });
