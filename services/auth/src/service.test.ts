import { createInProcessBus } from '@platform/bus';
import { loadConfig, ManualClock, silentLogger } from '@platform/kernel';
import { createEmbeddedStore } from '@platform/store';
import { authConfigSchema } from './config';
import { createAuthService } from './service';
import { createAuthServiceForTests } from './testing';

describe('the auth service surface', () => {
  const deps = () => ({
    config: loadConfig(authConfigSchema, { PLATFORM_INTERNAL_SECRET: 's'.repeat(40) }),
    clock: new ManualClock(),
    logger: silentLogger(),
    store: createEmbeddedStore(),
    bus: createInProcessBus(),
  });

  it('gives an operator only what running it needs; tests reach its context through testing.ts', async () => {
    const service = await createAuthService(deps());
    expect(Object.keys(service).sort()).toEqual(['admin', 'handler', 'name', 'start', 'stop']);
    // @ts-expect-error the context is not part of the public type
    expect(service.context).toBeUndefined();
    const underTest = await createAuthServiceForTests(deps());
    expect(underTest.context.collections).toBeDefined();
  });
});
