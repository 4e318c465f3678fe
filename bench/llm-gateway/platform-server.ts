/**
 * Child process of the gateway benchmark: the whole platform as `pnpm start` runs it (embedded store,
 * no NATS), its gateway file naming the simulators at SIM_URL (`sim/gpt`, load) and SIM_STREAM_URL
 * (`sim/stream`, the stream measurement's simulator, which lives in the benchmark's process).
 * Creates a user and an organization on a plan whose limits the benchmark never reaches, then prints
 * `ready <token> <pids as JSON> <base url>`.
 *
 * BENCH_LAYOUT=process (default): one process per service, as `pnpm start` (decision 0037); this process
 * is the supervisor holding the IPC bus hub. BENCH_LAYOUT=single: every service in this process
 * (`startPlatform`, as the test suite runs it).
 * BENCH_CPU_PROF_DIR=<dir>: each service process writes a CPU profile there (`node --cpu-prof`).
 * BENCH_NODE_FLAGS="<flags>": more flags for every service process (e.g. V8's GC flags, to compare).
 * BENCH_PROBE_DIR=<dir> (set by run.ts): every service process notes its GC pauses and event-loop stalls
 * there (stall-probe.ts).
 * Usage: platform-server.ts <port> <dataDir>
 */
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { silentLogger } from '@platform/kernel';
import { startPlatform, startProcessPlatform } from '@platform/standalone';
import { benchCaller, benchPlatformEnv } from './bench-platform';
import { startStallProbe } from './stall-probe';

async function main() {
  const [port, dataDir] = process.argv.slice(2) as [string, string];
  mkdirSync(dataDir, { recursive: true });
  const env = {
    ...benchPlatformEnv(dataDir, { sim: process.env.SIM_URL!, simstream: process.env.SIM_STREAM_URL! }),
    PORT: port,
    HOST: '127.0.0.1',
    ADMIN_PORT: '0',
  };
  const single = process.env.BENCH_LAYOUT === 'single';
  if (process.env.BENCH_PROBE_DIR)
    startStallProbe(process.env.BENCH_PROBE_DIR, single ? 'platform' : 'supervisor');
  const platform = single
    ? await startPlatform({
        env,
        logger: silentLogger(),
        port: Number(port),
        host: '127.0.0.1',
        adminPort: 0,
      })
    : await startProcessPlatform({
        env,
        logger: silentLogger(),
        entry: {
          file: path.join(__dirname, '..', '..', 'services', 'standalone', 'src', 'main.ts'),
          // BENCH_CPU_PROF_DIR: every service writes a CPU profile there when it stops
          // as pnpm start runs its sources (package.json)
          execArgv: [
            '--require',
            'tsx/cjs',
            ...(process.env.BENCH_CPU_PROF_DIR
              ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_CPU_PROF_DIR}`]
              : []),
            ...(process.env.BENCH_PROBE_DIR ? ['--require', path.join(__dirname, 'stall-probe.ts')] : []),
            ...(process.env.BENCH_NODE_FLAGS?.split(/\s+/).filter(Boolean) ?? []),
          ],
        },
      });
  const pids: Record<string, number | undefined> = single
    ? { platform: process.pid }
    : { ...(platform as Awaited<ReturnType<typeof startProcessPlatform>>).pids(), supervisor: process.pid };
  const token = await benchCaller(platform.baseUrl);
  console.log(`ready ${token} ${JSON.stringify(pids)} ${platform.baseUrl}`);
  // stopped before the benchmark removes the data folder: every service drains and closes its store
  process.on('SIGTERM', () => platform.stop().then(() => process.exit(0)));
}

void main();
