/**
 * Preloaded into every service process of the gateway benchmark (`--import`, BENCH_PROBE_DIR set by
 * run.ts): notes each garbage collection pause over 1 ms and the event loop's longest delay per 250 ms
 * window, with wall-clock times, in `<BENCH_PROBE_DIR>/<service>-<pid>.log`. run.ts reads the lines that
 * fall inside its fixed-rate phase (the supervisor and the benchmark's own process, which sends the load,
 * note theirs too) and prints where the stalls were (decision 0079). Measurement only:
 * never loaded outside the benchmark.
 */
import { appendFileSync, mkdirSync, writeFileSync } from 'node:fs';
import { Session } from 'node:inspector';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { monitorEventLoopDelay, PerformanceObserver } from 'node:perf_hooks';
import { isMainThread } from 'node:worker_threads';

/** Starts noting this process's stalls as `name` (the benchmark's own process and the supervisor call it). */
export function startStallProbe(dir: string, name: string): void {
  mkdirSync(dir, { recursive: true });
  const file = path.join(dir, `${name}-${process.pid}.log`);
  const kinds: Record<number, string> = { 1: 'scavenge', 2: 'minor', 4: 'mark-compact', 8: 'incremental' };
  let lines: string[] = [];
  const flush = () => {
    if (lines.length === 0) return;
    try {
      appendFileSync(file, `${lines.join('\n')}\n`);
    } catch {
      // the benchmark removed its folder (teardown): nothing left to note
    }
    lines = [];
  };
  new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) {
      const kind = (entry as { detail?: { kind?: number } }).detail?.kind ?? 0;
      if (entry.duration > 1)
        lines.push(`gc ${Date.now()} ${kinds[kind] ?? kind} ${entry.duration.toFixed(2)}`);
    }
  }).observe({ entryTypes: ['gc'] });
  const delay = monitorEventLoopDelay({ resolution: 1 });
  delay.enable();
  setInterval(() => {
    lines.push(`loop ${Date.now()} ${(delay.max / 1e6).toFixed(2)}`);
    delay.reset();
    flush();
  }, 250).unref();
  process.on('exit', flush);
}

const service = process.env.PLATFORM_STANDALONE_SERVICE;
if (process.env.BENCH_PROBE_DIR && service && isMainThread)
  startStallProbe(process.env.BENCH_PROBE_DIR, service);

// BENCH_ALLOCATION_PROFILE=<service>[:promoted]: that service samples every allocation (with `:promoted`,
// only what survives scavenges) from its start and writes
// `<tmpdir>/<service>-<pid>.heapprofile` as it exits (Chrome DevTools opens it; `npx tsx
// bench/llm-gateway/promotion-profile.ts --read <file>` lists its sites): what makes its scavenges frequent.
const [profiled, only] = (process.env.BENCH_ALLOCATION_PROFILE ?? '').split(':');
if (process.env.BENCH_PROBE_DIR && service && isMainThread && profiled === service) {
  const session = new Session();
  session.connect();
  session.post('HeapProfiler.startSampling', {
    samplingInterval: 4096,
    includeObjectsCollectedByMajorGC: true,
    includeObjectsCollectedByMinorGC: only !== 'promoted',
  });
  const file = path.join(tmpdir(), `${service}-${process.pid}.heapprofile`);
  process.on('exit', () => {
    // a session on this thread answers synchronously: the profile is written before the process ends
    session.post('HeapProfiler.stopSampling', (err, result) => {
      if (err) return;
      writeFileSync(file, JSON.stringify(result.profile));
      process.stderr.write(`allocation profile: ${file}\n`);
    });
  });
}
