/**
 * What survives young-generation GC on the gateway's path: the whole platform in this process (as the
 * tests run it), chat requests at a fixed rate through the edge against the provider simulator, and V8's
 * sampling heap profiler told to drop what a scavenge collects but keep what only a mark-compact frees.
 * The profile then holds the allocation sites of objects promoted to old space and dead soon after
 * (what makes the scavenges and mark-compacts of the fixed-rate phase), by stack.
 *
 *   npx tsx bench/llm-gateway/promotion-profile.ts [rate=500] [seconds=8]
 *   # PROMO_ALL=1: every allocation, not only what survives; PROMO_SAMPLING=0: no profiler (with
 *   # node --trace-gc-nvp); PROMO_GET=/v2/me or PROMO_BODY='{}': other requests, to compare
 *   npx tsx bench/llm-gateway/promotion-profile.ts --read <file.heapprofile>
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import http from 'node:http';
import { Session } from 'node:inspector/promises';
import os from 'node:os';
import path from 'node:path';
import v8 from 'node:v8';
import { silentLogger } from '@platform/kernel';
import { startPlatform } from '@platform/standalone';
import { freePort } from '@platform/testkit';
import { benchCaller, benchPlatformEnv } from './bench-platform';

const RATE = Number(process.argv[2] ?? 500);
const SECONDS = Number(process.argv[3] ?? 8);

interface ProfileNode {
  callFrame: { functionName: string; url: string; lineNumber: number };
  selfSize: number;
  children: ProfileNode[];
}

async function main() {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'gw-promo-'));
  // the simulator in a process of its own: this process's heap is the platform's (and the load's)
  const simPort = await freePort();
  const simProc = spawn(
    process.execPath,
    ['--import', 'tsx', path.join(__dirname, '..', 'llm-providers', 'simulator-server.ts')],
    {
      env: { ...process.env, SIM_PORT: String(simPort) },
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  const sim = {
    url: await new Promise<string>((resolve) =>
      simProc.stdout!.once('data', (d: Buffer) => resolve(d.toString().trim())),
    ),
    close: async () => void simProc.kill('SIGTERM'),
  };
  const port = await freePort();
  const platform = await startPlatform({
    env: benchPlatformEnv(dir, { sim: sim.url }),
    logger: silentLogger(),
    port,
    host: '127.0.0.1',
    adminPort: 0,
  });
  const token = await benchCaller(platform.baseUrl);

  const body =
    process.env.PROMO_BODY ??
    JSON.stringify({ model: 'sim/gpt', messages: [{ role: 'user', content: 'Say hello' }] });
  // PROMO_GET=/v2/me compares a GET through the edge to another service (no provider call, no accounting)
  const get = process.env.PROMO_GET;
  const target = new URL(get ? `${platform.baseUrl}${get}` : `${platform.baseUrl}/llm/v1/chat/completions`);
  const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });
  const send = (n: number) =>
    new Promise<void>((resolve) => {
      let left = n;
      let sent = 0;
      const start = performance.now();
      const fire = () => {
        const req = http.request(
          target,
          {
            method: get ? 'GET' : 'POST',
            agent,
            headers: get
              ? { authorization: `Bearer ${token}` }
              : {
                  authorization: `Bearer ${token}`,
                  'content-type': 'application/json',
                  'content-length': Buffer.byteLength(body),
                },
          },
          (res) => {
            if (res.statusCode !== 200 && !process.env.PROMO_BODY) console.error('status', res.statusCode);
            res.resume();
            res.on('end', () => {
              if (--left === 0) resolve();
            });
          },
        );
        req.end(get ? undefined : body);
      };
      const tick = () => {
        const due = Math.min(n, Math.floor(((performance.now() - start) * RATE) / 1000));
        while (sent < due) {
          sent++;
          fire();
        }
        if (sent < n) setTimeout(tick, 1);
      };
      tick();
    });

  await send(RATE * 2); // warm-up
  const session = new Session();
  session.connect();
  const oldBefore = v8.getHeapSpaceStatistics().find((s) => s.space_name === 'old_space')!;
  // PROMO_SAMPLING=0 sends the load without the profiler (its weak handles slow every scavenge), for --trace-gc-nvp
  const sampling = process.env.PROMO_SAMPLING !== '0';
  if (sampling)
    await session.post('HeapProfiler.startSampling', {
      samplingInterval: 1024,
      includeObjectsCollectedByMajorGC: true,
      // PROMO_ALL=1: every allocation (what makes scavenges frequent), not only what survives them
      includeObjectsCollectedByMinorGC: process.env.PROMO_ALL === '1',
    });
  const memoryBefore = process.memoryUsage();
  await send(RATE * SECONDS);
  const { profile } = (
    sampling ? await session.post('HeapProfiler.stopSampling') : { profile: { head: { children: [] } } }
  ) as { profile: { head: ProfileNode } };
  const oldAfter = v8.getHeapSpaceStatistics().find((s) => s.space_name === 'old_space')!;
  console.log(
    `old space ${(oldBefore.space_used_size / 1e6).toFixed(1)} -> ${(oldAfter.space_used_size / 1e6).toFixed(1)} MB; heap used ${(memoryBefore.heapUsed / 1e6).toFixed(1)} -> ${(process.memoryUsage().heapUsed / 1e6).toFixed(1)} MB`,
  );

  printSites(profile, RATE * SECONDS);
  agent.destroy();
  await platform.stop();
  await sim.close();
  rmSync(dir, { recursive: true, force: true });
}

const REPO = path.resolve(__dirname, '..', '..');

/**
 * The profile's allocation sites, largest first: self sizes summed by the innermost six frames of their
 * stacks; per request when the count is known, else in MB.
 */
function printSites(profile: { head: ProfileNode }, requests: number | null): void {
  const byStack = new Map<string, number>();
  let total = 0;
  const frame = (n: ProfileNode) => {
    const url = n.callFrame.url
      .replace(/^file:\/\//, '')
      .replace(`${REPO}/`, '')
      .replace(/^.*\/node_modules\//, '');
    return `${n.callFrame.functionName || '(anon)'} ${url}:${n.callFrame.lineNumber + 1}`;
  };
  const walk = (n: ProfileNode, stack: string[]) => {
    const here = [...stack, frame(n)];
    if (n.selfSize > 0) {
      total += n.selfSize;
      const key = here.slice(-6).reverse().join('\n    <- ');
      byStack.set(key, (byStack.get(key) ?? 0) + n.selfSize);
    }
    for (const c of n.children) walk(c, here);
  };
  walk(profile.head, []);
  const size = (bytes: number) =>
    requests
      ? `${(bytes / requests).toFixed(0).padStart(6)} B/req`
      : `${(bytes / 1e6).toFixed(1).padStart(6)} MB`;
  console.log(`sampled bytes: ${size(total)}`);
  for (const [stack, bytes] of [...byStack]
    .sort((a, b) => b[1] - a[1])
    .slice(0, Number(process.env.TOP ?? 25)))
    console.log(`${size(bytes)}  ${stack}\n`);
}

// `--read <file>`: the sites of a profile written elsewhere (stall-probe.ts's BENCH_ALLOCATION_PROFILE)
if (process.argv[2] === '--read') printSites(JSON.parse(readFileSync(process.argv[3]!, 'utf8')), null);
else void main();
