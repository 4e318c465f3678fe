import type { Store } from './port';

export interface MongoStoreOptions {
  url: string;
  /** database name; defaults to the one in the URL */
  dbName?: string;
  /** how long to wait for a server before failing start-up (ms) */
  serverSelectionTimeoutMs?: number;
}

/**
 * The MongoDB engine, loaded on first use: mongoose and the driver take ~20 MiB of a service's process (bson's
 * buffer alone 17 MiB), and a service on the embedded engine (`pnpm start`, the tests) never needs them.
 */
export async function createMongoStore(options: MongoStoreOptions): Promise<Store> {
  // require, not import(): pnpm start runs the sources under tsx's CommonJS hook only (decision 0085)
  const engine = require('./mongo-store') as typeof import('./mongo-store');
  try {
    return await engine.openMongoStore(options);
  } catch (err) {
    if (engine.isUnreachable(err))
      throw new DatabaseUnreachableError(err instanceof Error ? err.message : String(err), { cause: err });
    throw err;
  }
}

/**
 * The database did not answer (no server, a network or name-resolution failure): worth trying again later, unlike
 * a URL or an option it cannot use, or credentials it refuses.
 */
export class DatabaseUnreachableError extends Error {
  override readonly name = 'DatabaseUnreachableError';
}
