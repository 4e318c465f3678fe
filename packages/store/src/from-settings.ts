import { createEmbeddedStore } from './embedded-store';
import { createMongoStore } from './mongo-store';
import type { Store } from './port';

export interface StoreSettings {
  /** MongoDB connection string; when absent the embedded engine is used */
  mongoUrl?: string;
  /** the embedded engine's folder */
  dataDir: string;
}

/** MongoDB when a URL is configured, the embedded engine under dataDir otherwise. */
export async function createStoreFromEnv(settings: StoreSettings): Promise<Store> {
  if (settings.mongoUrl) return createMongoStore({ url: settings.mongoUrl });
  return createEmbeddedStore({ dataDir: settings.dataDir });
}
