import { createInProcessBus } from '@platform/bus';
import { loadConfig, ManualClock, silentLogger } from '@platform/kernel';
import { createEmbeddedStore } from '@platform/store';
import { llmGatewayConfigSchema } from './config';
import { createLlmGatewayService } from './service';

describe('the llm-gateway service surface', () => {
  it('gives an operator only what running it needs', async () => {
    const service = await createLlmGatewayService({
      config: loadConfig(llmGatewayConfigSchema, {
        PLATFORM_INTERNAL_SECRET: 's'.repeat(40),
        LLM_QUOTA_URL: 'http://127.0.0.1:9',
      }),
      clock: new ManualClock(),
      logger: silentLogger(),
      store: createEmbeddedStore(),
      bus: createInProcessBus(),
    });
    expect(Object.keys(service).sort()).toEqual(['admin', 'handler', 'name', 'start', 'stop']);
    // @ts-expect-error the gateway's context is not part of the public type
    expect(service.context).toBeUndefined();
  });
});
