import { createInProcessBus } from '@platform/bus';
import { loadConfig, ManualClock, silentLogger } from '@platform/kernel';
import { edgeConfigSchema } from './config';
import { createEdgeService } from './service';
import { createEdgeServiceForTests } from './testing';

describe('the edge service surface', () => {
  const deps = () => ({
    config: loadConfig(edgeConfigSchema, {
      PLATFORM_INTERNAL_SECRET: 's'.repeat(40),
      AUTH_URL: 'http://127.0.0.1:1',
      LLM_QUOTA_URL: 'http://127.0.0.1:1',
      LEGACY_AGENT_URL: 'http://127.0.0.1:1',
    }),
    clock: new ManualClock(),
    logger: silentLogger(),
    bus: createInProcessBus(),
  });

  it('gives an operator only what running it needs; tests reach its internals through testing.ts', async () => {
    const service = await createEdgeService(deps());
    expect(Object.keys(service).sort()).toEqual(['admin', 'handler', 'name', 'start', 'stop']);
    // @ts-expect-error the internals are not part of the public type
    expect(service.internals).toBeUndefined();
    const underTest = await createEdgeServiceForTests(deps());
    expect(underTest.internals.keys.loaded).toBe(false);
    await Promise.all([service.stop(), underTest.stop()]);
  });
});
