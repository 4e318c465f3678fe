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
  return (require('./mongo-store') as typeof import('./mongo-store')).openMongoStore(options);
}
