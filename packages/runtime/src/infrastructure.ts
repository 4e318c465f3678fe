import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  type Bus,
  type BusReporting,
  createInProcessBus,
  createNatsBus,
  natsUrlForLogs,
} from '@platform/bus';
import { type Clock, type Logger, OutageLog, systemClock } from '@platform/kernel';
import {
  createEmbeddedStore,
  createMongoStore,
  DataFolderInUseError,
  type EmbeddedStoreOptions,
  type Store,
} from '@platform/store';

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
    const store = await createMongoStore({
      url: settings.MONGO_URL,
      dbName: `platform_${settings.service.replace(/-/g, '_')}`,
    });
    // once connected: a service waiting for its database calls this every STORE_RETRY_MS
    logger.info('store: MongoDB');
    return store;
  }
  const dataDir = path.resolve(settings.DATA_DIR, settings.service);
  logger.info({ dataDir }, 'store: embedded');
  return openEmbeddedStore(
    {
      dataDir,
      ...(clock ? { now: () => clock.now().getTime() } : {}),
      // a compaction that failed, a file loaded without its unreadable lines (kept aside): in the service's log
      onBackgroundError: (err, collection) => logger.error({ err, collection }, 'embedded store'),
    },
    logger,
  );
}

/** How often a service waiting for the lock of a process elsewhere looks at it again (its holder renews it every 2 s). */
const LOCK_POLL_MS = 1_000;

/**
 * Opens the embedded store. A data folder held by a process whose process id says nothing here (another container,
 * another host) is waited for while its lock goes unrenewed, and opened once the lock is taken over: its holder was
 * killed (a container restarted after kill -9 or the OOM killer). So is a lock without a process id (a power loss while
 * it was written), taken over 10 s after it was made. Before, the service exited 1 at once, and its restart
 * policy's growing delays kept it away longer than the wait. A lock renewed meanwhile has a running holder: refused.
 */
async function openEmbeddedStore(options: EmbeddedStoreOptions, logger: Logger): Promise<Store> {
  let waiting: DataFolderInUseError | undefined;
  for (;;) {
    try {
      return createEmbeddedStore(options);
    } catch (err) {
      if (!(err instanceof DataFolderInUseError) || err.staleAt === undefined) throw err;
      if (waiting && err.renewedAt !== waiting.renewedAt) throw err;
      if (!waiting && Number.isNaN(err.pid))
        logger.warn(
          { dataDir: err.folder, takenOverAt: new Date(err.staleAt).toISOString() },
          `store: the data folder has a lock without a process id (a process killed or a machine powered off while writing it, or a hand edit); waiting until it is taken over, ${Math.round((err.staleAt - err.renewedAt!) / 1000)} s after it was made`,
        );
      else if (!waiting)
        logger.warn(
          {
            dataDir: err.folder,
            pid: err.pid,
            host: err.host,
            takenOverAt: new Date(err.staleAt).toISOString(),
          },
          'store: the data folder is locked by a process elsewhere; waiting, in case it was killed, until its lock is taken over (a running holder renews it, and this service then stops)',
        );
      waiting = err;
      await sleep(Math.max(0, Math.min(LOCK_POLL_MS, err.staleAt - Date.now())));
    }
  }
}

/** How long a service waits between two attempts to reach MongoDB at start (each attempt waits for a server too). */
export const STORE_RETRY_MS = 2_000;

/**
 * Opens the store, trying again while the database cannot be reached: a service started during a MongoDB outage
 * waits for it (alive, not ready) instead of exiting and being restarted in a loop. `onUnreachable` is told why
 * each attempt failed. What `isTransient` does not accept (a data folder that cannot be written) ends the wait.
 * The wait is logged when it starts, at most once a minute while it lasts, and when the database answers: a line
 * per attempt, every STORE_RETRY_MS, is logged at debug level only.
 */
export async function openStoreWhenReachable(
  open: () => Promise<Store>,
  options: {
    logger: Logger;
    isTransient: (err: unknown) => boolean;
    onUnreachable?: (reason: string) => void;
    retryMs?: number;
    /** the time of the log lines (default: the system's) */
    clock?: Clock;
  },
): Promise<Store> {
  const retryMs = options.retryMs ?? STORE_RETRY_MS;
  const unreachable = new OutageLog(
    { logger: options.logger, clock: options.clock ?? systemClock },
    {
      starts: `store: the database cannot be reached; trying again every ${retryMs} ms (not ready until it answers)`,
      lasts: 'store: the database still cannot be reached',
      ends: 'store: the database answers',
    },
  );
  for (let attempt = 1; ; attempt++) {
    try {
      const store = await open();
      unreachable.ended({ attempts: attempt });
      return store;
    } catch (err) {
      if (!options.isTransient(err)) throw err;
      const reason = err instanceof Error ? err.message : String(err);
      options.onUnreachable?.(reason);
      options.logger.debug({ attempt, reason }, 'store: an attempt to reach the database failed');
      if (!unreachable.refused(err, { reason })) await unreachable.remind(() => ({ attempt, reason }));
      await new Promise((resolve) => setTimeout(resolve, retryMs));
    }
  }
}

/**
 * NATS when NATS_URL is set, else `local` (standalone children: the IPC bus to their parent), else the
 * in-process bus (only meaningful when all services share one process). Whichever it is reports what goes wrong out
 * of its callers' sight (a durable handler failing, NATS away) to the service's log.
 */
export async function openBus(
  settings: InfrastructureSettings,
  logger: Logger,
  local?: (reporting: BusReporting) => Bus,
): Promise<Bus> {
  const onError = (err: unknown, context: string) => logger.warn({ err, context }, 'bus error');
  if (settings.NATS_URL) {
    logger.info({ url: natsUrlForLogs(settings.NATS_URL) }, 'bus: NATS');
    return createNatsBus({
      url: settings.NATS_URL,
      credsFile: settings.NATS_CREDS_FILE,
      tlsCaFile: settings.NATS_TLS_CA_FILE,
      name: settings.service,
      onError,
    });
  }
  if (local) {
    const bus = local({ onError });
    logger.info({ kind: bus.kind }, 'bus: local');
    return bus;
  }
  logger.info('bus: in-process');
  return createInProcessBus({ onError });
}
