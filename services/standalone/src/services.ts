import { authConfigSchema, createAuthService } from '@platform/auth';
import type { Bus } from '@platform/bus';
import { createEdgeService, edgeConfigSchema } from '@platform/edge';
import type { Clock, Logger, PlatformService } from '@platform/kernel';
import { createLegacyAgentService, legacyAgentConfigSchema } from '@platform/legacy-agent';
import { createLlmGatewayService, llmGatewayConfigSchema } from '@platform/llm-gateway';
import { createLlmQuotaService, llmQuotaConfigSchema } from '@platform/llm-quota';
import type { Store } from '@platform/store';
import type { z } from 'zod';

/** What the platform needs to know to run one service, in one process or in its own. */
export interface ServiceEntry<S extends z.ZodObject = z.ZodObject> {
  /** the service's name: its log `service`, its data folder `DATA_DIR/<name>` */
  name: string;
  schema: S;
  /** the edge's configuration key naming where this service listens */
  upstreamKey: string;
  create(deps: {
    config: Readonly<z.infer<S>>;
    logger: Logger;
    clock: Clock;
    store: Store;
    bus: Bus;
  }): Promise<PlatformService>;
}

const entry = <S extends z.ZodObject>(
  name: string,
  upstreamKey: string,
  schema: S,
  create: ServiceEntry<S>['create'],
): ServiceEntry => ({ name, upstreamKey, schema, create }) as unknown as ServiceEntry;

/**
 * The services behind the edge, in start order. Adding a service is one line here (and its import); the
 * edge is started last, with each entry's `upstreamKey` set to where that service listens.
 */
export const platformServices: readonly ServiceEntry[] = [
  entry('auth', 'AUTH_URL', authConfigSchema, createAuthService),
  entry('llm-quota', 'LLM_QUOTA_URL', llmQuotaConfigSchema, createLlmQuotaService),
  // after llm-quota: the gateway reads its settings and budgets (LLM_QUOTA_URL)
  entry('llm-gateway', 'LLM_GATEWAY_URL', llmGatewayConfigSchema, createLlmGatewayService),
  entry('legacy-agent', 'LEGACY_AGENT_URL', legacyAgentConfigSchema, createLegacyAgentService),
];

/**
 * Services listen on loopback and only the edge calls them: they believe its X-Forwarded-*, whatever
 * TRUST_PROXY the operator gave the edge (a load balancer in front of it).
 */
export const SERVICE_TRUST_PROXY_IN_STANDALONE = 'loopback';

/** The edge: no store, every public request. */
export const edgeEntry = {
  name: 'edge',
  schema: edgeConfigSchema,
  create: (deps: { config: z.infer<typeof edgeConfigSchema>; logger: Logger; clock: Clock; bus: Bus }) =>
    createEdgeService(deps),
};

/** The roots `{base_url}`, `{gateway_url}`, `{legacy_url}` of an edge at `baseUrl`, from its configuration. */
export function rootsOf(baseUrl: string, edge: { GATEWAY_PATH_PREFIX: string; LEGACY_PATH_PREFIX: string }) {
  return {
    baseUrl,
    gatewayUrl: `${baseUrl}${edge.GATEWAY_PATH_PREFIX}`,
    legacyUrl: `${baseUrl}${edge.LEGACY_PATH_PREFIX}`,
  };
}
