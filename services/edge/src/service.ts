import type { Bus } from '@platform/bus';
import { type BaseDeps, type PlatformService, createServiceApp } from '@platform/kernel';
import type { EdgeConfig } from './config';

export interface EdgeDeps extends BaseDeps<EdgeConfig> {
  bus: Bus;
}

export async function createEdgeService(deps: EdgeDeps): Promise<PlatformService> {
  const app = createServiceApp({
    name: 'edge',
    logger: deps.logger,
    readiness: { bus: () => deps.bus.ping() },
    routes: () => {},
  });
  return { name: 'edge', handler: app, start: async () => {}, stop: async () => {} };
}
