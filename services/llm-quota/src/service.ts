import type { Bus } from '@platform/bus';
import { type BaseDeps, type PlatformService, createServiceApp } from '@platform/kernel';
import type { Store } from '@platform/store';
import type { LlmQuotaConfig } from './config';

export interface LlmQuotaDeps extends BaseDeps<LlmQuotaConfig> {
  store: Store;
  bus: Bus;
}

export async function createLlmQuotaService(deps: LlmQuotaDeps): Promise<PlatformService> {
  const app = createServiceApp({
    name: 'llm-quota',
    logger: deps.logger,
    readiness: { store: () => deps.store.ping(), bus: () => deps.bus.ping() },
    routes: () => {},
  });
  return { name: 'llm-quota', handler: app, start: async () => {}, stop: async () => {} };
}
