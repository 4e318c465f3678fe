import { createInProcessBus } from '@platform/bus';
import { type Clock, loadConfig, ManualClock, silentLogger } from '@platform/kernel';
import { createEmbeddedStore, type Store } from '@platform/store';
import { tempDir } from '@platform/testkit';
import supertest from 'supertest';
import { legacyAgentConfigSchema } from '../../src/config';
import type { LegacyDomain } from '../../src/domain';
import type { RetrainTimers } from '../../src/domain/timers';
import type { NluEngine } from '../../src/domain/understanding';
import { createLegacyAgentService, createLegacyDomain, type LegacyAgentService } from '../../src/service';

export interface LegacyTestApp {
  http: ReturnType<typeof supertest>;
  service: LegacyAgentService;
  store: Store;
  clock: Clock;
  dataDir: string;
  /** stops the service and closes the store, keeping the data folder */
  stop(): Promise<void>;
  /** stop() and remove the data folder */
  close(): Promise<void>;
}

export const TEST_SECRET = 'legacy-agent-test-secret-0123456789abcdef';

const testConfig = (env: Record<string, string> = {}) =>
  loadConfig(legacyAgentConfigSchema, {
    PLATFORM_INTERNAL_SECRET: TEST_SECRET,
    LOG_LEVEL: 'silent',
    LEGACY_PASSWORD_SCRYPT_COST: '1024',
    LEGACY_RETRAIN_DEBOUNCE_MS: '10',
    LEGACY_RETRAIN_MAX_DELAY_MS: '200',
    ...env,
  });

/**
 * The use cases over an app's store, as another instance of the service holds them: a test calls them between steps
 * the API takes together (an assistant read at authentication, then deleted before its message is answered).
 */
export function domainOver(app: LegacyTestApp): LegacyDomain {
  return createLegacyDomain({
    config: testConfig(),
    logger: silentLogger(),
    clock: app.clock,
    store: app.store,
    bus: createInProcessBus(),
  });
}

/** The legacy-agent app over a real embedded store in a temp folder (or `dataDir`), not listening. */
export async function startLegacyApp(
  options: {
    env?: Record<string, string>;
    clock?: Clock;
    nlu?: NluEngine;
    dataDir?: string;
    random?: () => number;
    /** retraining's debounce timers (default: real ones) */
    timers?: RetrainTimers;
    /** another app's store: two instances of the service over one database */
    store?: Store;
  } = {},
): Promise<LegacyTestApp> {
  const folder = options.dataDir
    ? { dir: options.dataDir, remove: () => undefined }
    : tempDir('legacy-agent-');
  const ownStore = !options.store;
  const clock = options.clock ?? new ManualClock('2026-11-23T10:00:00Z');
  // TTL indexes expire documents by the test's clock, and soon after it passes their time
  const store =
    options.store ??
    createEmbeddedStore({ dataDir: folder.dir, now: () => clock.now().getTime(), ttlSweepIntervalMs: 50 });
  const bus = createInProcessBus();
  const config = testConfig(options.env);
  let service: LegacyAgentService;
  try {
    service = await createLegacyAgentService({
      config,
      logger: silentLogger(),
      clock,
      store,
      bus,
      nlu: options.nlu,
      random: options.random,
      timers: options.timers,
    });
    await service.start();
  } catch (err) {
    if (ownStore) await store.close();
    throw err;
  }
  const stop = async () => {
    await service.stop();
    await bus.close();
    if (ownStore) await store.close();
  };
  return {
    http: supertest(service.handler),
    service,
    store,
    clock,
    dataDir: folder.dir,
    stop,
    close: async () => {
      await stop();
      folder.remove();
    },
  };
}
