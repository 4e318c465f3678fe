import { mkdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { ProcessState } from './service-process';

export interface OperatorHints {
  /** the platform's: `starting` until every service listens, `stopping` once it was asked to stop */
  state: 'starting' | 'running' | 'stopping';
  /** the edge's {base_url} and {gateway_url}, for the CLI's public calls (once running) */
  baseUrl?: string;
  gatewayUrl?: string;
  authUrl?: string;
  llmQuotaUrl?: string;
  legacyAgentUrl?: string;
  internalSecret: string;
  /** each process's admin listener, by service name */
  admin?: Record<string, string>;
  /** the process id of each service started so far, by service name (none while it is down) */
  pids: Record<string, number | undefined>;
  /** the state of each service started so far, by service name */
  states: Record<string, ProcessState>;
}

/**
 * Writes where the services of a local platform listen, and its internal secret, to
 * DATA_DIR/standalone.json (owner-only), so `pnpm platform` works against `pnpm start` with no flags; and
 * which processes it started, so that a start after this one was killed waits for them (`lockDataDir`).
 * Written whole or not at all (renamed into place): a reader never sees half of it.
 */
export function writeOperatorHints(dataDir: string, hints: OperatorHints): void {
  mkdirSync(dataDir, { recursive: true });
  const file = path.resolve(dataDir, 'standalone.json');
  const next = `${file}.${process.pid}.tmp`;
  // created anew (exclusive): one left by a start killed with this process id, or a link planted there, is never
  // written through
  rmSync(next, { force: true });
  writeFileSync(next, `${JSON.stringify(hints, null, 2)}\n`, { mode: 0o600, flag: 'wx' });
  renameSync(next, file);
}

export function removeOperatorHints(dataDir: string): void {
  try {
    rmSync(path.resolve(dataDir, 'standalone.json'), { force: true });
  } catch {
    // a data folder it could not write (a part of its path is a file): nothing was written there
  }
}
