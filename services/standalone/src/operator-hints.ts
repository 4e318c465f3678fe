import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';

export interface OperatorHints {
  /** the edge's {base_url} and {gateway_url}, for the CLI's public calls */
  baseUrl?: string;
  gatewayUrl?: string;
  authUrl: string;
  llmQuotaUrl: string;
  legacyAgentUrl: string;
  internalSecret: string;
  /** each process's admin listener, by service name */
  admin?: Record<string, string>;
  /** each service's process id, by service name */
  pids?: Record<string, number | undefined>;
}

/**
 * Writes where the services of a local platform listen, and its internal secret, to
 * DATA_DIR/standalone.json (owner-only), so `pnpm platform` works against `pnpm start` with no flags.
 * Returns a function that removes the file again.
 */
export function writeOperatorHints(dataDir: string, hints: OperatorHints): () => void {
  mkdirSync(dataDir, { recursive: true });
  const file = path.resolve(dataDir, 'standalone.json');
  writeFileSync(file, `${JSON.stringify(hints, null, 2)}\n`, { mode: 0o600 });
  return () => rmSync(file, { force: true });
}
