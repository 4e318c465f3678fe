import { createInProcessBus } from '@platform/bus';
import { loadConfig, mountedRoutes, silentLogger, systemClock } from '@platform/kernel';
import { createEmbeddedStore } from '@platform/store';
import { Validator } from '@seriousme/openapi-schema-validator';
import { llmGatewayConfigSchema } from '../src/config';
import { LLM_GATEWAY_ROUTES, llmGatewayApiDocument } from '../src/openapi';
import { createApp } from '../src/service';
import { INTERNAL_SECRET } from './support';

/** Every route the gateway mounts is in the `{gateway_url}` document, and the document is valid OpenAPI. */
describe('the gateway OpenAPI document', () => {
  it('documents every mounted route (wildcard ids as {id}) and nothing else', () => {
    const app = createApp({
      config: loadConfig(llmGatewayConfigSchema, {
        PLATFORM_INTERNAL_SECRET: INTERNAL_SECRET,
        LLM_QUOTA_URL: 'http://127.0.0.1:9',
      }),
      logger: silentLogger(),
      clock: systemClock,
      store: createEmbeddedStore(),
      bus: createInProcessBus(),
    });
    const operational = ['get /healthz', 'get /readyz', 'get /metrics', 'get /openapi.json'];
    const mounted = [
      ...new Set(
        mountedRoutes(app)
          .filter((r) => !operational.includes(r))
          .map((r) => r.replace(/\*([A-Za-z]+)/, ':$1')),
      ),
    ].sort();
    expect(mounted).toEqual(LLM_GATEWAY_ROUTES.map((r) => `${r.method} ${r.path}`).sort());
  });

  it('is a valid OpenAPI 3.1 document', async () => {
    const result = await new Validator().validate(
      llmGatewayApiDocument('http://localhost/llm') as Parameters<Validator['validate']>[0],
    );
    expect(result.errors).toBeUndefined();
  });
});
