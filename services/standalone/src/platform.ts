import { randomBytes } from 'node:crypto';
import { type AuthConfig, authConfigSchema, createAuthService } from '@platform/auth';
import type { Bus } from '@platform/bus';
import { createEdgeService, type EdgeConfig, edgeConfigSchema } from '@platform/edge';
import {
  type Clock,
  createLogger,
  type Logger,
  listen,
  loadConfig,
  type PlatformService,
  type RunningServer,
  SERVICE_MAX_HEADER_BYTES,
  systemClock,
} from '@platform/kernel';
import { createLegacyAgentService, legacyAgentConfigSchema } from '@platform/legacy-agent';
import { createLlmGatewayService, llmGatewayConfigSchema } from '@platform/llm-gateway';
import { createLlmQuotaService, llmQuotaConfigSchema } from '@platform/llm-quota';
import { openBus, openStore } from '@platform/runtime';
import type { Store } from '@platform/store';

export type Env = Record<string, string | undefined>;

export interface PlatformOptions {
  /** the environment every service reads its configuration from */
  env: Env;
  clock?: Clock;
  logger?: Logger;
  /** the edge's port (default: env PORT, else 8080; 0 picks a free one) */
  port?: number;
  host?: string;
  /** the edge's admin port (/healthz, /readyz, /metrics; default: env ADMIN_PORT, else 9464; 0 picks one) */
  adminPort?: number;
}

export interface RunningPlatform {
  baseUrl: string;
  gatewayUrl: string;
  legacyUrl: string;
  /** where each service listens (loopback), for tests that must bypass the edge */
  upstreams: Record<'auth' | 'llmQuota' | 'llmGateway' | 'legacyAgent', string>;
  /** each service's admin listener (/healthz, /readyz, /metrics); the edge's is on ADMIN_PORT */
  admin: Record<'edge' | 'auth' | 'llmQuota' | 'llmGateway' | 'legacyAgent', string>;
  bus: Bus;
  stop(): Promise<void>;
}

/**
 * One process running every service on the embedded store (one folder per service) and the
 * in-process bus, or NATS when NATS_URL is set. Services listen on loopback ports; the edge on PORT.
 */
export async function startPlatform(options: PlatformOptions): Promise<RunningPlatform> {
  const env: Env = {
    PLATFORM_INTERNAL_SECRET: randomBytes(32).toString('base64url'),
    ...options.env,
  };
  const clock = options.clock ?? systemClock;
  const logger = options.logger ?? createLogger({ name: 'platform', level: env.LOG_LEVEL ?? 'info' });
  const port = options.port ?? Number(env.PORT ?? 8080);
  const host = options.host ?? env.HOST ?? '0.0.0.0';

  const common = loadConfig(authConfigSchema, env) as AuthConfig;
  const bus = await openBus({ service: 'standalone', ...common }, logger);
  const stores: Store[] = [];
  const servers: RunningServer[] = [];
  const services: PlatformService[] = [];

  const admin = {} as RunningPlatform['admin'];
  const startService = async (
    key: Exclude<keyof RunningPlatform['admin'], 'edge'>,
    service: PlatformService,
  ): Promise<string> => {
    await service.start();
    services.push(service);
    const server = await listen(service.handler, 0, '127.0.0.1', { maxHeaderSize: SERVICE_MAX_HEADER_BYTES });
    servers.push(server);
    const adminServer = await listen(service.admin, 0, '127.0.0.1');
    servers.push(adminServer);
    admin[key] = adminServer.url;
    return server.url;
  };
  const storeFor = async (name: string) => {
    const store = await openStore({ service: name, ...common }, logger);
    stores.push(store);
    return store;
  };
  // Services listen on loopback and only the edge calls them: they believe its X-Forwarded-*, whatever
  // TRUST_PROXY the operator gave the edge (a load balancer in front of it).
  const serviceEnv: Env = { ...env, TRUST_PROXY: 'loopback' };
  const depsFor = <C>(name: string, config: C) => ({
    config,
    logger: logger.child({ service: name }),
    clock,
    bus,
  });

  try {
    const auth = await startService(
      'auth',
      await createAuthService({
        ...depsFor('auth', loadConfig(authConfigSchema, serviceEnv)),
        store: await storeFor('auth'),
      }),
    );
    const llmQuota = await startService(
      'llmQuota',
      await createLlmQuotaService({
        ...depsFor('llm-quota', loadConfig(llmQuotaConfigSchema, serviceEnv)),
        store: await storeFor('llm-quota'),
      }),
    );
    const upstreams = {
      auth,
      llmQuota,
      llmGateway: await startService(
        'llmGateway',
        await createLlmGatewayService({
          ...depsFor(
            'llm-gateway',
            loadConfig(llmGatewayConfigSchema, { ...serviceEnv, LLM_QUOTA_URL: llmQuota }),
          ),
          store: await storeFor('llm-gateway'),
          env,
        }),
      ),
      legacyAgent: await startService(
        'legacyAgent',
        await createLegacyAgentService({
          ...depsFor('legacy-agent', loadConfig(legacyAgentConfigSchema, serviceEnv)),
          store: await storeFor('legacy-agent'),
        }),
      ),
    };
    const edgeConfig: EdgeConfig = loadConfig(edgeConfigSchema, {
      ...env,
      AUTH_URL: upstreams.auth,
      LLM_QUOTA_URL: upstreams.llmQuota,
      LLM_GATEWAY_URL: upstreams.llmGateway,
      LEGACY_AGENT_URL: upstreams.legacyAgent,
    });
    const edge = await createEdgeService(depsFor('edge', edgeConfig));
    await edge.start();
    services.push(edge);
    const edgeServer = await listen(edge.handler, port, host);
    servers.push(edgeServer);
    const edgeAdmin = await listen(
      edge.admin,
      options.adminPort ?? edgeConfig.ADMIN_PORT,
      edgeConfig.ADMIN_HOST,
    );
    servers.push(edgeAdmin);
    admin.edge = edgeAdmin.url;
    const baseUrl = edgeServer.url;
    return {
      baseUrl,
      gatewayUrl: `${baseUrl}/llm`,
      legacyUrl: `${baseUrl}/legacy`,
      upstreams,
      admin,
      bus,
      stop: () => stopAll(servers, services, bus, stores),
    };
  } catch (err) {
    await stopAll(servers, services, bus, stores);
    throw err;
  }
}

/** Edge first (it was started last), then the services, then the bus and the stores. */
async function stopAll(servers: RunningServer[], services: PlatformService[], bus: Bus, stores: Store[]) {
  for (const server of [...servers].reverse()) await server.close(5_000);
  for (const service of [...services].reverse()) await service.stop();
  await bus.close();
  await Promise.all(stores.map((s) => s.close()));
}
