import type { Bus } from '@platform/bus';
import { type BaseDeps, type PlatformService, createServiceApp } from '@platform/kernel';
import type { Store } from '@platform/store';
import type { AuthConfig } from './config';

export interface AuthDeps extends BaseDeps<AuthConfig> {
  store: Store;
  bus: Bus;
}

export async function createAuthService(deps: AuthDeps): Promise<PlatformService> {
  const app = createServiceApp({
    name: 'auth',
    logger: deps.logger,
    readiness: { store: () => deps.store.ping(), bus: () => deps.bus.ping() },
    routes: () => {},
  });
  return { name: 'auth', handler: app, start: async () => {}, stop: async () => {} };
}
