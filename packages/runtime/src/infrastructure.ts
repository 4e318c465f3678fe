import path from 'node:path';
import { type Bus, createInProcessBus, createNatsBus, natsUrlForLogs } from '@platform/bus';
import type { Clock, Logger } from '@platform/kernel';
import { createEmbeddedStore, createMongoStore, type Store } from '@platform/store';

export interface InfrastructureSettings {
  service: string;
  MONGO_URL?: string;
  DATA_DIR: string;
  NATS_URL?: string;
  NATS_CREDS_FILE?: string;
  NATS_TLS_CA_FILE?: string;
}

/**
 * The service's own database: MongoDB when MONGO_URL is set, else the embedded engine under DATA_DIR/<service>,
 * which applies TTL indexes at `clock`'s time (the service's: a test's manual clock moves both).
 */
export async function openStore(
  settings: InfrastructureSettings,
  logger: Logger,
  clock?: Clock,
): Promise<Store> {
  if (settings.MONGO_URL) {
    logger.info('store: MongoDB');
    return createMongoStore({
      url: settings.MONGO_URL,
      dbName: `platform_${settings.service.replace(/-/g, '_')}`,
    });
  }
  const dataDir = path.resolve(settings.DATA_DIR, settings.service);
  logger.info({ dataDir }, 'store: embedded');
  return createEmbeddedStore({
    dataDir,
    ...(clock ? { now: () => clock.now().getTime() } : {}),
    // a compaction that failed, a file loaded without its unreadable lines (kept aside): in the service's log
    onBackgroundError: (err, collection) => logger.error({ err, collection }, 'embedded store'),
  });
}

/** How long a service waits between two attempts to reach MongoDB at start (each attempt waits for a server too). */
export const STORE_RETRY_MS = 2_000;

/**
 * Opens the store, trying again while the database cannot be reached: a service started during a MongoDB outage
 * waits for it (alive, not ready) instead of exiting and being restarted in a loop. `onUnreachable` is told why
 * each attempt failed. What `isTransient` does not accept (a data folder that cannot be written) ends the wait.
 */
export async function openStoreWhenReachable(
  open: () => Promise<Store>,
  options: {
    logger: Logger;
    isTransient: (err: unknown) => boolean;
    onUnreachable?: (reason: string) => void;
    retryMs?: number;
  },
): Promise<Store> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await open();
    } catch (err) {
      if (!options.isTransient(err)) throw err;
      const reason = err instanceof Error ? err.message : String(err);
      options.onUnreachable?.(reason);
      const retryMs = options.retryMs ?? STORE_RETRY_MS;
      options.logger.warn(
        { attempt, reason },
        `store: the database cannot be reached; trying again in ${retryMs} ms (not ready until it answers)`,
      );
      await new Promise((resolve) => setTimeout(resolve, retryMs));
    }
  }
}

/**
 * NATS when NATS_URL is set, else `local` (standalone children: the IPC bus to their parent), else the
 * in-process bus (only meaningful when all services share one process).
 */
export async function openBus(
  settings: InfrastructureSettings,
  logger: Logger,
  local?: () => Bus,
): Promise<Bus> {
  if (settings.NATS_URL) {
    logger.info({ url: natsUrlForLogs(settings.NATS_URL) }, 'bus: NATS');
    return createNatsBus({
      url: settings.NATS_URL,
      credsFile: settings.NATS_CREDS_FILE,
      tlsCaFile: settings.NATS_TLS_CA_FILE,
      name: settings.service,
      onError: (err, context) => logger.warn({ err, context }, 'bus error'),
    });
  }
  if (local) {
    const bus = local();
    logger.info({ kind: bus.kind }, 'bus: local');
    return bus;
  }
  logger.info('bus: in-process');
  return createInProcessBus();
}
