import type { Bus } from '@platform/bus';
import {
  type BaseDeps,
  createHttpMetrics,
  createServiceApp,
  edgePrincipal,
  type PlatformService,
} from '@platform/kernel';
import type { Store } from '@platform/store';
import type { Express } from 'express';
import type { LlmGatewayConfig } from './config';

export interface LlmGatewayDeps extends BaseDeps<LlmGatewayConfig> {
  store: Store;
  bus: Bus;
  /** the provider HTTP client (tests may inject one); default: global fetch */
  fetch?: typeof fetch;
}

/** Builds the gateway's express app; it never listens. */
export function createApp(deps: LlmGatewayDeps): Express {
  const { config, logger, clock } = deps;
  const metrics = createHttpMetrics('llm-gateway');
  return createServiceApp({
    name: 'llm-gateway',
    logger,
    metrics,
    bodyLimit: config.LLM_GATEWAY_BODY_LIMIT_BYTES,
    readiness: { store: () => deps.store.ping(), bus: () => deps.bus.ping() },
    before: [edgePrincipal(config.PLATFORM_INTERNAL_SECRET, clock)],
    routes: () => {},
  });
}

/**
 * llm-gateway: the OpenAI-compatible proxy over the configured providers, applying each
 * organization's governance and quotas and emitting `analytics.llm.completion` for every request.
 */
export async function createLlmGatewayService(deps: LlmGatewayDeps): Promise<PlatformService> {
  const app = createApp(deps);
  return {
    name: 'llm-gateway',
    handler: app,
    async start() {},
    async stop() {},
  };
}
