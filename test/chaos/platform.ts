import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { processAlive as alive, waitFor } from '@platform/testkit';

const ROOT = path.resolve(__dirname, '../..');

export interface PlatformProcesses {
  baseUrl: string;
  gatewayUrl: string;
  /** process ids by service (edge included), and `standalone` for the parent */
  pids: Record<string, number>;
  authUrl: string;
  internalSecret: string;
  /** SIGKILL every process of the platform at once: a crash, nothing drains */
  kill9(): Promise<void>;
  /** SIGTERM the parent: everything drains */
  stop(): Promise<void>;
  /** what the platform's processes wrote to stderr so far */
  stderr(): string;
}

/** platforms still running: a harness that dies (even on an uncaught error) takes them with it */
const running = new Set<ChildProcess>();
process.on('exit', () => {
  for (const child of running) child.kill('SIGTERM');
});

/** `pnpm start` in a child process on `dataDir` (loopback only, a free port), as an operator runs it. */
export async function startPlatformProcesses(
  dataDir: string,
  env: Record<string, string> = {},
): Promise<PlatformProcesses> {
  const child: ChildProcess = spawn(
    process.execPath,
    ['--require', 'tsx/cjs', 'services/standalone/src/main.ts'],
    {
      cwd: ROOT,
      env: { ...process.env, PORT: '0', HOST: '127.0.0.1', DATA_DIR: dataDir, LOG_LEVEL: 'error', ...env },
      stdio: ['ignore', 'ignore', 'pipe'],
    },
  );
  running.add(child);
  let stderr = '';
  child.stderr!.on('data', (d: Buffer) => {
    stderr += d.toString();
  });
  const exited = new Promise<void>((resolve) =>
    child.once('exit', () => {
      running.delete(child);
      resolve();
    }),
  );
  await waitFor(() => stderr.includes('{legacy_url}') || child.exitCode !== null, {
    timeoutMs: 60_000,
    what: 'the platform banner',
  });
  if (child.exitCode !== null) throw new Error(`platform exited: ${stderr}`);
  const baseUrl = /\{base_url\}\s+(\S+)/.exec(stderr)![1]!;
  const gatewayUrl = /\{gateway_url\}\s+(\S+)/.exec(stderr)![1]!;
  const hints = JSON.parse(readFileSync(path.join(dataDir, 'standalone.json'), 'utf8'));
  const pids: Record<string, number> = { ...hints.pids, standalone: child.pid! };
  return {
    baseUrl,
    gatewayUrl,
    pids,
    authUrl: hints.authUrl,
    internalSecret: hints.internalSecret,
    async kill9() {
      for (const pid of Object.values(pids)) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          // already gone
        }
      }
      await exited;
      await waitFor(() => Object.values(pids).every((pid) => !alive(pid)), { what: 'every process gone' });
    },
    async stop() {
      if (child.exitCode === null) child.kill('SIGTERM');
      await exited;
    },
    stderr: () => stderr,
  };
}

/** Lets SIGUSR1 open a platform process's inspector on a free loopback port (for `memoryAfterGc`). */
export const INSPECTABLE_ENV = {
  NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} --inspect-port=127.0.0.1:0`.trim(),
};

export interface MemoryAfterGc {
  /** resident memory (bytes, from /proc) right after a full garbage collection */
  rss: number;
  /** V8 heap in use after it (bytes) */
  heapUsed: number;
}

/**
 * A full garbage collection in a platform process, then its memory: SIGUSR1 opens the process's
 * inspector (a platform started with INSPECTABLE_ENV listens on a free port and says where on stderr),
 * and heap-probe.mjs asks it to collect and report. Measures what the process retains, not what
 * garbage it has not collected yet.
 */
export async function memoryAfterGc(platform: PlatformProcesses, pid: number): Promise<MemoryAfterGc> {
  const listening = () => {
    const urls = [...platform.stderr().matchAll(/Debugger listening on (ws:\/\/\S+)/g)].map((m) => m[1]!);
    return urls.length ? urls : null;
  };
  const before = listening()?.length ?? 0;
  // The inspector opens once per process: the first probe opens it, later ones reuse its address.
  let url = inspectorUrls.get(pid);
  if (!url) {
    process.kill(pid, 'SIGUSR1');
    await waitFor(() => (listening()?.length ?? 0) > before, { what: 'the inspector of the process' });
    url = listening()!.at(-1)!;
    inspectorUrls.set(pid, url);
  }
  const out = execFileSync(
    process.execPath,
    ['--experimental-websocket', '--no-warnings', path.join(__dirname, 'heap-probe.mjs'), url],
    { encoding: 'utf8', timeout: 60_000 },
  );
  const usage = JSON.parse(out) as { heapUsed: number };
  return { rss: rssOf(pid), heapUsed: usage.heapUsed };
}
const inspectorUrls = new Map<number, string>();

/** The resident memory of a process, in bytes (Linux). */
export function rssOf(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+)\s+kB/.exec(status)![1]) * 1024;
}
