import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { createServer } from 'node:net';
import { createIpcBusHub } from '@platform/bus';
import { type Logger, loadConfig } from '@platform/kernel';
import { cannotListenLine, listenPort } from '@platform/runtime';
import type { Env } from './platform';
import { type ChildEntry, type ProcessState, ServiceProcess } from './service-process';
import { edgeEntry, platformServices, rootsOf, SERVICE_TRUST_PROXY_IN_STANDALONE } from './services';

export interface ProcessPlatformOptions {
  /** the environment every service reads its configuration from */
  env: Env;
  /** the supervisor's own logger */
  logger: Logger;
  /** how a child is started (default: this program again, with the same Node flags) */
  entry?: ChildEntry;
  /**
   * called whenever a process was spawned (at start or after a crash), listens, exited or was asked to stop, with
   * every process started so far: what a supervisor killed at any moment leaves running is known
   */
  onChange?: (processes: Record<string, ServiceProcessView>) => void;
  /** aborted while it starts (SIGTERM, Ctrl-C): the processes started so far are stopped, and it rejects `StartStopped` */
  signal?: AbortSignal;
}

/** The start was asked to stop before every service listened: what it started has been stopped. */
export class StartStopped extends Error {
  constructor() {
    super('stopped while starting');
    this.name = 'StartStopped';
  }
}

/** Another program holds the edge's PORT, or it is one this user may not listen on: the edge's own line. */
export class EdgePortUnavailableError extends Error {
  override name = 'EdgePortUnavailableError';
}

/** One service process as the supervisor sees it: its process id (none while it is down) and state. */
export interface ServiceProcessView {
  pid?: number;
  state: ProcessState;
}

export interface RunningProcessPlatform {
  baseUrl: string;
  gatewayUrl: string;
  legacyUrl: string;
  /** where each service behind the edge listens (loopback), by service name */
  upstreams: Record<string, string>;
  /** each process's admin listener (`/healthz`, `/readyz`, `/metrics`), by service name, edge included */
  admin: Record<string, string>;
  /** the process id of each service, edge included (for operators and the chaos harness) */
  pids(): Record<string, number | undefined>;
  stop(): Promise<void>;
}

/** what a stopping service does after its drain: closes its admin port, stops its work, closes its bus and store */
const STOP_AFTER_DRAIN_MS = 15_000;

/**
 * How long a stopping service may take before SIGKILL: its drain (SHUTDOWN_DRAIN_SECONDS, no maximum) and the rest
 * of its stop, as the deployments' grace periods allow (deploy/base: 120 s of drain, 140 s with a 5 s preStop).
 */
export const stopGraceMs = (drainSeconds: number) => drainSeconds * 1000 + STOP_AFTER_DRAIN_MS;

/**
 * `count` distinct free loopback ports, for children that must come back on the same ones after a restart.
 * Every probe stays open until all are read: a port released early could be handed out twice.
 */
async function freePorts(count: number): Promise<number[]> {
  const servers = Array.from({ length: count }, () => createServer().listen(0, '127.0.0.1'));
  try {
    await Promise.all(servers.map((server) => once(server, 'listening')));
    return servers.map((server) => (server.address() as AddressInfo).port);
  } finally {
    await Promise.all(servers.map((server) => new Promise((resolve) => server.close(resolve))));
  }
}

/**
 * Listens once where the edge will, and closes: a port another program holds is said before the services took
 * seconds each to start. The edge still says it, should the port be taken between this check and its listen; an
 * address it cannot have for another reason (HOST not this machine's) it says too.
 */
async function checkEdgePortFree(host: string, port: number): Promise<void> {
  if (port === 0) return;
  const probe = createServer().listen(port, host);
  try {
    await once(probe, 'listening');
  } catch (err) {
    const { code } = err as NodeJS.ErrnoException;
    if (code === 'EADDRINUSE' || code === 'EACCES')
      throw new EdgePortUnavailableError(cannotListenLine(err as Error, host, port));
    return;
  }
  await new Promise((resolve) => probe.close(resolve));
}

/**
 * `pnpm start`: each service in its own process, as in production, so the platform uses every core.
 * Each owns its data folder (`DATA_DIR/<service>`); with no NATS_URL, events travel through an IPC bus
 * hub held by this process (docs/decisions/0037). The services listen on loopback ports, the edge on
 * PORT; each process gets its own ADMIN_PORT. A service that dies is restarted on the same port.
 */
export async function startProcessPlatform(options: ProcessPlatformOptions): Promise<RunningProcessPlatform> {
  const { logger } = options;
  const env: Env = { ...options.env };
  env.PLATFORM_INTERNAL_SECRET ??= randomBytes(32).toString('base64url');
  // A bad value stops here, once, naming the key, before any process starts.
  const placeholders = Object.fromEntries(platformServices.map((s) => [s.upstreamKey, 'http://127.0.0.1:1']));
  for (const service of platformServices) loadConfig(service.schema, { ...env, ...placeholders });
  const edgeConfig = loadConfig(edgeEntry.schema, { ...env, ...placeholders });
  // the edge's PORT too, and whether another program holds it where the edge will listen (HOST)
  const edgePort = env.PORT ?? '8080';
  const edgeHost = env.HOST ?? '0.0.0.0';
  await checkEdgePortFree(edgeHost, listenPort(edgePort, 8080));

  const hub = createIpcBusHub();
  const entry = options.entry ?? { file: process.argv[1]!, execArgv: process.execArgv };
  // every process reads the same SHUTDOWN_DRAIN_SECONDS
  const graceMs = stopGraceMs(edgeConfig.SHUTDOWN_DRAIN_SECONDS);
  const processes: ServiceProcess[] = [];
  const onChange = () =>
    options.onChange?.(Object.fromEntries(processes.map((p) => [p.name, { pid: p.pid, state: p.state }])));
  const admin: Record<string, string> = {};
  const stop = async () => {
    // the edge first (started last), so no request reaches a service that is already gone
    for (const p of [...processes].reverse()) await p.stop(graceMs);
    await hub.close();
  };

  // each wait below ends as soon as a stop is asked for
  const stopAsked = new Promise<never>((_, reject) => {
    if (options.signal?.aborted) reject(new StartStopped());
    options.signal?.addEventListener('abort', () => reject(new StartStopped()), { once: true });
  });
  stopAsked.catch(() => undefined);
  const unlessStopped = <T>(work: Promise<T>) => Promise.race([work, stopAsked]);

  try {
    // Ports first, so every service knows where the others listen (the gateway reads llm-quota);
    // then the services at once, then the edge, which needs their URLs.
    const pickEdgeAdmin = !(env.ADMIN_PORT && env.ADMIN_PORT !== '0');
    const ports = await freePorts(platformServices.length * 2 + (pickEdgeAdmin ? 1 : 0));
    const planned = platformServices.map((service, i) => ({
      service,
      port: ports[2 * i]!,
      adminPort: ports[2 * i + 1]!,
    }));
    const upstreamEnv = Object.fromEntries(
      planned.map(({ service, port }) => [service.upstreamKey, `http://127.0.0.1:${port}`]),
    );
    const services = await unlessStopped(
      Promise.all(
        planned.map(async ({ service, port, adminPort }) => {
          const child = new ServiceProcess(
            service.name,
            {
              ...env,
              ...upstreamEnv,
              TRUST_PROXY: SERVICE_TRUST_PROXY_IN_STANDALONE,
              PORT: String(port),
              ADMIN_PORT: String(adminPort),
              // only the edge faces the network: the services' ports, admin included, stay on loopback
              HOST: '127.0.0.1',
              ADMIN_HOST: '127.0.0.1',
            },
            { hub, logger, entry, onChange },
          );
          processes.push(child);
          admin[service.name] = `http://127.0.0.1:${adminPort}`;
          return { service, url: await child.start() };
        }),
      ),
    );
    const upstreams = Object.fromEntries(services.map(({ service, url }) => [service.name, url]));
    const edgeAdminPort = pickEdgeAdmin ? ports[ports.length - 1]! : Number(env.ADMIN_PORT);
    const edgeEnv: Env = {
      ...env,
      ...upstreamEnv,
      PORT: edgePort,
      HOST: edgeHost,
      ADMIN_PORT: String(edgeAdminPort),
    };
    const edge = new ServiceProcess('edge', edgeEnv, { hub, logger, entry, onChange });
    processes.push(edge);
    admin.edge = `http://127.0.0.1:${edgeAdminPort}`;
    const baseUrl = await unlessStopped(edge.start());
    // PORT=0 picked a port: a restarted edge comes back on it, where {base_url} says it is
    if (edgeEnv.PORT === '0') edgeEnv.PORT = new URL(baseUrl).port;
    return {
      ...rootsOf(baseUrl, edgeConfig),
      upstreams,
      admin,
      pids: () => Object.fromEntries(processes.map((p) => [p.name, p.pid])),
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}
