import type { Bus } from '@platform/bus';
import { listen, loadConfig, silentLogger, systemClock } from '@platform/kernel';
import type { Store } from '@platform/store';
import { llmGatewayConfigSchema } from '../src/config';
import { createLlmGatewayService } from '../src/service';
import { INTERNAL_SECRET } from './support';

/** One gateway instance on a loopback port, over a given store and bus (instances share the store). */
export async function startInstance(store: Store, bus: Bus, env: Record<string, string> = {}) {
  const config = loadConfig(llmGatewayConfigSchema, {
    PLATFORM_INTERNAL_SECRET: INTERNAL_SECRET,
    LLM_QUOTA_URL: 'http://127.0.0.1:9',
    LOG_LEVEL: 'silent',
    ...env,
  });
  const service = await createLlmGatewayService({
    config,
    logger: silentLogger(),
    clock: systemClock,
    store,
    bus,
  });
  await service.start();
  const server = await listen(service.handler, 0, '127.0.0.1');
  const url = server.url;
  /** a request with the operator's credential */
  const call = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(`${url}${path}`, {
      method,
      headers: { 'content-type': 'application/json', 'x-platform-internal-secret': INTERNAL_SECRET },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    // biome-ignore lint/suspicious/noExplicitAny: answers are asserted field by field
    return { status: res.status, body: (text ? JSON.parse(text) : null) as any };
  };
  return {
    call,
    async stop() {
      await server.close();
      await service.stop();
    },
  };
}

export type GatewayInstance = Awaited<ReturnType<typeof startInstance>>;

/** A catalogue entry served by the built-in mock provider. */
export const catalogueEntry = (model_id: string) => ({
  model_id,
  type: 'completion',
  provider_config: { provider: 'mock', model: 'mock-chat' },
});
