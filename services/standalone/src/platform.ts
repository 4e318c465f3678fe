import { randomBytes } from 'node:crypto';
import { type AuthConfig, authConfigSchema } from '@platform/auth';
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
import { EDGE_MAX_HEADER_BYTES, openBus, openStore } from '@platform/runtime';
import type { Store } from '@platform/store';
import { platformServices, rootsOf, SERVICE_TRUST_PROXY_IN_STANDALONE } from './services';

export type Env = Record<string, string | undefined>;

export interface PlatformOptions {
  /** the environment every service reads its configuration from */
  env: Env;
  clock?: Clock;
  /** the base of every service's logger, without a `service` binding (each adds its own) */
  logger?: Logger;
  /** the edge's port (default: env PORT, else 8080; 0 picks a free one) */
  port?: number;
  host?: string;
  /** the edge's admin port (/healthz, /readyz, /metrics; default: env ADMIN_PORT, else 9464; 0 picks one) */
  adminPort?: number;
  /**
   * a bus of its own for the services named (each on its own NATS user, as deployed); the others share the
   * platform's. The caller closes them.
   */
  buses?: Record<string, Bus>;
}

export interface RunningPlatform {
  baseUrl: string;
  gatewayUrl: string;
  legacyUrl: string;
  /** where each service listens (loopback) by camel-cased name (`llmQuota`), for tests that bypass the edge */
  upstreams: Record<string, string>;
  /** each process's admin listener (/healthz, /readyz, /metrics) by camel-cased name, `edge` included */
  admin: Record<string, string>;
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
  const level = env.LOG_LEVEL ?? 'info';
  // each line carries one `service`: the given logger must not bind one (tests pass a silent logger)
  const loggerFor = (name: string) =>
    options.logger ? options.logger.child({ service: name }) : createLogger({ name, level });
  const logger = loggerFor('standalone');
  const port = options.port ?? Number(env.PORT ?? 8080);
  const host = options.host ?? env.HOST ?? '0.0.0.0';

  const common = loadConfig(authConfigSchema, env) as AuthConfig;
  const bus = await openBus({ service: 'standalone', ...common }, logger);
  const stores: Store[] = [];
  const servers: RunningServer[] = [];
  const services: PlatformService[] = [];
  const admin: Record<string, string> = {};

  const startService = async (name: string, service: PlatformService): Promise<string> => {
    await service.start();
    services.push(service);
    const server = await listen(service.handler, 0, '127.0.0.1', { maxHeaderSize: SERVICE_MAX_HEADER_BYTES });
    servers.push(server);
    const adminServer = await listen(service.admin, 0, '127.0.0.1');
    servers.push(adminServer);
    admin[camelCase(name)] = adminServer.url;
    return server.url;
  };
  const storeFor = async (name: string) => {
    // removal dates are written on the services' clock: the store removes on it too
    const store = await openStore({ service: name, ...common }, logger, clock);
    stores.push(store);
    return store;
  };
  // Services listen on loopback and only the edge calls them: they believe its X-Forwarded-*, whatever
  // TRUST_PROXY the operator gave the edge (a load balancer in front of it).
  const serviceEnv: Env = { ...env, TRUST_PROXY: SERVICE_TRUST_PROXY_IN_STANDALONE };
  const depsFor = <C>(name: string, config: C) => ({
    config,
    logger: loggerFor(name),
    clock,
    bus: options.buses?.[name] ?? bus,
  });

  try {
    const upstreamUrls: Record<string, string> = {};
    const upstreams: Record<string, string> = {};
    for (const entry of platformServices) {
      // each service sees where the ones started before it listen (the gateway reads llm-quota)
      const url = await startService(
        entry.name,
        await entry.create({
          ...depsFor(entry.name, loadConfig(entry.schema, { ...serviceEnv, ...upstreamUrls })),
          store: await storeFor(entry.name),
        }),
      );
      upstreamUrls[entry.upstreamKey] = url;
      upstreams[camelCase(entry.name)] = url;
    }
    const edgeConfig: EdgeConfig = loadConfig(edgeConfigSchema, { ...env, ...upstreamUrls });
    const edge = await createEdgeService(depsFor('edge', edgeConfig));
    await edge.start();
    services.push(edge);
    const edgeServer = await listen(edge.handler, port, host, { maxHeaderSize: EDGE_MAX_HEADER_BYTES });
    servers.push(edgeServer);
    const edgeAdmin = await listen(
      edge.admin,
      options.adminPort ?? edgeConfig.ADMIN_PORT,
      edgeConfig.ADMIN_HOST,
    );
    servers.push(edgeAdmin);
    admin.edge = edgeAdmin.url;
    return {
      ...rootsOf(edgeServer.url, edgeConfig),
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

const camelCase = (name: string) => name.replace(/-(\w)/g, (_, c: string) => c.toUpperCase());

/** Edge first (it was started last), then the services, then the bus and the stores. */
async function stopAll(servers: RunningServer[], services: PlatformService[], bus: Bus, stores: Store[]) {
  for (const server of [...servers].reverse()) await server.close(5_000);
  for (const service of [...services].reverse()) await service.stop();
  await bus.close();
  await Promise.all(stores.map((s) => s.close()));
}
