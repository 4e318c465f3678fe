import path from 'node:path';
import { type Bus, createInProcessBus, createNatsBus } from '@platform/bus';
import type { Logger } from '@platform/kernel';
import { createEmbeddedStore, createMongoStore, type Store } from '@platform/store';

export interface InfrastructureSettings {
  service: string;
  MONGO_URL?: string;
  DATA_DIR: string;
  NATS_URL?: string;
}

/** The service's own database: MongoDB when MONGO_URL is set, else the embedded engine under DATA_DIR/<service>. */
export async function openStore(settings: InfrastructureSettings, logger: Logger): Promise<Store> {
  if (settings.MONGO_URL) {
    logger.info('store: MongoDB');
    return createMongoStore({
      url: settings.MONGO_URL,
      dbName: `platform_${settings.service.replace(/-/g, '_')}`,
    });
  }
  const dataDir = path.resolve(settings.DATA_DIR, settings.service);
  logger.info({ dataDir }, 'store: embedded');
  return createEmbeddedStore({ dataDir });
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
    logger.info({ url: settings.NATS_URL }, 'bus: NATS');
    return createNatsBus({
      url: settings.NATS_URL,
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
