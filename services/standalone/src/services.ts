// Configuration schemas only: each process of `pnpm start` loads the code of its own service alone
// (`create` requires it), so the edge does not carry the OpenID provider or the NLU in its memory.
// `require`, not `import()`: pnpm start runs the sources under tsx's CommonJS hook only (`--require tsx/cjs`,
// ~30 MiB lighter per process than its ESM loader, decision 0085), which `import()` of a .ts file bypasses.
import { authConfigSchema } from '@platform/auth/src/config';
import type { Bus } from '@platform/bus';
import { edgeConfigSchema } from '@platform/edge/src/config';
import type { Clock, Logger, PlatformService } from '@platform/kernel';
import { legacyAgentConfigSchema } from '@platform/legacy-agent/src/config';
import { llmGatewayConfigSchema } from '@platform/llm-gateway/src/config';
import { llmQuotaConfigSchema } from '@platform/llm-quota/src/config';
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
  entry('auth', 'AUTH_URL', authConfigSchema, async (deps) =>
    (require('@platform/auth') as typeof import('@platform/auth')).createAuthService(deps),
  ),
  entry('llm-quota', 'LLM_QUOTA_URL', llmQuotaConfigSchema, async (deps) =>
    (require('@platform/llm-quota') as typeof import('@platform/llm-quota')).createLlmQuotaService(deps),
  ),
  // after llm-quota: the gateway reads its settings and budgets (LLM_QUOTA_URL)
  entry('llm-gateway', 'LLM_GATEWAY_URL', llmGatewayConfigSchema, async (deps) =>
    (require('@platform/llm-gateway') as typeof import('@platform/llm-gateway')).createLlmGatewayService(
      deps,
    ),
  ),
  entry('legacy-agent', 'LEGACY_AGENT_URL', legacyAgentConfigSchema, async (deps) =>
    (require('@platform/legacy-agent') as typeof import('@platform/legacy-agent')).createLegacyAgentService(
      deps,
    ),
  ),
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
  create: async (deps: {
    config: z.infer<typeof edgeConfigSchema>;
    logger: Logger;
    clock: Clock;
    bus: Bus;
  }) => (require('@platform/edge') as typeof import('@platform/edge')).createEdgeService(deps),
};

/** The roots `{base_url}`, `{gateway_url}`, `{legacy_url}` of an edge at `baseUrl`, from its configuration. */
export function rootsOf(baseUrl: string, edge: { GATEWAY_PATH_PREFIX: string; LEGACY_PATH_PREFIX: string }) {
  return {
    baseUrl,
    gatewayUrl: `${baseUrl}${edge.GATEWAY_PATH_PREFIX}`,
    legacyUrl: `${baseUrl}${edge.LEGACY_PATH_PREFIX}`,
  };
}
