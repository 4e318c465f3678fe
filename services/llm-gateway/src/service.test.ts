import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { createInProcessBus } from '@platform/bus';
import { loadConfig, ManualClock, silentLogger } from '@platform/kernel';
import { createEmbeddedStore } from '@platform/store';
import { tempDir } from '@platform/testkit';
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

  it.each(['NO_SUCH_KEY', 'constructor', 'toString'])(
    'refuses to start when the file names a key variable (%s) that is not set, naming it',
    async (variable) => {
      const dir = tempDir('gateway-file-');
      const file = path.join(dir.dir, 'gateway.json');
      writeFileSync(
        file,
        JSON.stringify({
          providers: [{ name: 'p', type: 'openai', baseUrl: 'http://127.0.0.1:9/v1', apiKeyEnv: variable }],
          models: [],
        }),
      );
      const service = await createLlmGatewayService({
        config: loadConfig(llmGatewayConfigSchema, {
          PLATFORM_INTERNAL_SECRET: 's'.repeat(40),
          LLM_QUOTA_URL: 'http://127.0.0.1:9',
          LLM_GATEWAY_CONFIG: file,
        }),
        clock: new ManualClock(),
        logger: silentLogger(),
        store: createEmbeddedStore(),
        bus: createInProcessBus(),
        env: {},
      });
      try {
        await expect(service.start()).rejects.toThrow(
          `provider p: environment variable ${variable} is not set`,
        );
      } finally {
        await service.stop();
        dir.remove();
      }
    },
  );
});
