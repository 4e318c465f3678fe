import type { Bus } from '@platform/bus';
import { type BaseDeps, type PlatformService, createServiceApp } from '@platform/kernel';
import type { Store } from '@platform/store';
import type { LegacyAgentConfig } from './config';

export interface LegacyAgentDeps extends BaseDeps<LegacyAgentConfig> {
  store: Store;
  bus: Bus;
}

export async function createLegacyAgentService(deps: LegacyAgentDeps): Promise<PlatformService> {
  const app = createServiceApp({
    name: 'legacy-agent',
    logger: deps.logger,
    readiness: { store: () => deps.store.ping(), bus: () => deps.bus.ping() },
    routes: () => {},
  });
  return { name: 'legacy-agent', handler: app, start: async () => {}, stop: async () => {} };
}
