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
  /** its store's folder ('' over another app's store) */
  dataDir: string;
  /** stops the service and closes the store, keeping the data folder */
  stop(): Promise<void>;
  /** stop() and remove the data folder made for it (one given stays its owner's) */
  close(): Promise<void>;
}

export const TEST_SECRET = 'legacy-agent-test-secret-0123456789abcdef';

/**
 * What the apps of this test file left: those not stopped (a test that failed before its own stop), and the data
 * folders made for them and not removed (an app stopped so that another starts over its data, which close() does not
 * remove, as it is not its own). Cleared after the file's own hooks: every folder made here is removed, whatever path
 * its test took.
 */
const running = new Set<LegacyTestApp>();
const madeFolders = new Set<ReturnType<typeof tempDir>>();
afterAll(async () => {
  await Promise.allSettled([...running].map((app) => app.stop()));
  for (const folder of madeFolders) folder.remove();
  madeFolders.clear();
});

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
  // a bad setting fails the start before anything is made
  const config = testConfig(options.env);
  // an app over another app's store has no folder of its own; one over a given folder leaves it to its owner
  const made = options.store || options.dataDir !== undefined ? undefined : tempDir('legacy-agent-');
  if (made) madeFolders.add(made);
  const dataDir = options.dataDir ?? made?.dir ?? '';
  const removeFolder = () => {
    if (!made) return;
    made.remove();
    madeFolders.delete(made);
  };
  const ownStore = !options.store;
  const clock = options.clock ?? new ManualClock('2026-11-23T10:00:00Z');
  const bus = createInProcessBus();
  let store: Store | undefined;
  let service: LegacyAgentService;
  try {
    // TTL indexes expire documents by the test's clock, and soon after it passes their time
    store =
      options.store ??
      createEmbeddedStore({ dataDir, now: () => clock.now().getTime(), ttlSweepIntervalMs: 50 });
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
    await bus.close();
    if (ownStore) await store?.close();
    removeFolder();
    throw err;
  }
  const app: LegacyTestApp = {
    http: supertest(service.handler),
    service,
    store,
    clock,
    dataDir,
    stop: async () => {
      running.delete(app);
      await service.stop();
      await bus.close();
      if (ownStore) await app.store.close();
    },
    close: async () => {
      await app.stop();
      removeFolder();
    },
  };
  running.add(app);
  return app;
}
