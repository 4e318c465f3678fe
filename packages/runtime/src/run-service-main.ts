import type { RequestListener } from 'node:http';
import type { Bus, BusReporting } from '@platform/bus';
import {
  type Clock,
  ConfigError,
  commonConfig,
  createAdminHandler,
  createLogger,
  env,
  handleProcessSignals,
  type Logger,
  listen,
  loadConfig,
  type PlatformService,
  type RunningServer,
  SERVICE_MAX_HEADER_BYTES,
  systemClock,
} from '@platform/kernel';
import { DatabaseUnreachableError, DataFolderError, type Store } from '@platform/store';
import type { z } from 'zod';
import { openBus, openStore, openStoreWhenReachable } from './infrastructure';

type CommonShape = typeof commonConfig;

/**
 * Largest request head the edge takes from clients: Node's default 16 KB, well under what the services behind it
 * accept (SERVICE_MAX_HEADER_BYTES). The one value of the edge's production entry and of `pnpm start`'s.
 */
export const EDGE_MAX_HEADER_BYTES = 16 * 1024;

export interface ServiceMainOptions<S extends z.ZodObject> {
  name: string;
  schema: S;
  defaultPort: number;
  /** whether the service needs a store (the edge has none) */
  usesStore?: boolean;
  /** largest request head on the public port (default SERVICE_MAX_HEADER_BYTES: services face the edge, which adds headers) */
  maxHeaderBytes?: number;
  /** the listening address (default: env HOST, else 0.0.0.0) */
  host?: string;
  /**
   * the bus when NATS_URL is unset (default: the in-process bus); standalone children pass the IPC bus. `reporting`
   * says where its durable handlers' failures go (the service's log)
   */
  localBus?: (reporting: BusReporting) => Bus;
  /** called once the service listens (standalone children tell their parent) */
  onListening?: (url: string) => void;
  create(deps: {
    config: Readonly<z.infer<S>>;
    logger: Logger;
    clock: Clock;
    store: Store;
    bus: Bus;
  }): Promise<PlatformService>;
}

/**
 * The production entry point shared by every service: configuration from the environment (a bad value
 * stops the process naming the key), logger, store and bus, listen on PORT, and graceful shutdown on
 * SIGTERM: stop accepting, drain in-flight requests, stop background work, close the bus and the store.
 */
export async function runServiceMain<S extends z.ZodObject>(options: ServiceMainOptions<S>): Promise<void> {
  let config: Readonly<z.infer<S>>;
  let port: number;
  try {
    config = loadConfig(options.schema);
    port = listenPort(process.env.PORT, options.defaultPort);
  } catch (err) {
    if (err instanceof ConfigError) {
      for (const issue of err.issues) console.error(`config error: ${issue.key}: ${issue.message}`);
      process.exit(1);
    }
    throw err;
  }
  const common = config as unknown as z.infer<z.ZodObject<CommonShape>>;
  const logger = createLogger({ name: options.name, level: common.LOG_LEVEL });
  const settings = { service: options.name, ...common };
  // The admin port answers from the start: while the service waits for its database, /healthz says it is alive
  // (an orchestrator does not restart it) and /readyz why it is not ready. The service's own handler takes over.
  let starting = 'starting';
  let adminHandler: RequestListener = createAdminHandler({
    name: options.name,
    readiness: {
      required: {
        startup: () => {
          throw new Error(starting);
        },
      },
    },
    metrics: { contentType: 'text/plain; version=0.0.4', metrics: async () => '' },
  });
  const admin = await listen(
    (req, res) => adminHandler(req, res),
    common.ADMIN_PORT,
    common.ADMIN_HOST,
  ).catch((err) => cannotListen(logger, err, common.ADMIN_HOST, common.ADMIN_PORT, 'ADMIN'));
  // SIGTERM while the database is away: nothing is in flight yet, so stop at once (the full shutdown comes later)
  const stopWhileWaiting = (signal: string) => {
    logger.info({ signal }, 'stopped while waiting for the store');
    process.exit(0);
  };
  process.once('SIGTERM', stopWhileWaiting).once('SIGINT', stopWhileWaiting);
  const store =
    options.usesStore === false
      ? undefined
      : await openStoreWhenReachable(() => openStore(settings, logger), {
          logger,
          // a database that does not answer may come back; a bad URL, option or password does not
          isTransient: (err) => err instanceof DatabaseUnreachableError,
          onUnreachable: (reason) => {
            starting = `the store is unreachable: ${reason}`;
          },
        }).catch((err) => {
          if (err instanceof DataFolderError)
            logger.fatal(`${err.message}; set DATA_DIR to a writable folder`);
          else
            logger.fatal(
              `the store cannot be opened: ${err instanceof Error ? err.message : err}; check ${settings.MONGO_URL ? 'MONGO_URL' : 'DATA_DIR'}`,
            );
          process.exit(1);
        });
  starting = 'starting';
  // From here a stop (SIGTERM, SIGINT) closes what is open, the store included. Asked while the service starts, it
  // lets the step under way finish, then closes what was opened, and the service never listens.
  let stopping = false;
  let bus: Bus | undefined;
  let service: PlatformService | undefined;
  let server: RunningServer | undefined;
  const host = options.host ?? process.env.HOST ?? '0.0.0.0';
  const startUp = (async () => {
    bus = await openBus(settings, logger, options.localBus);
    if (stopping) return;
    const created = await options.create({ config, logger, clock: systemClock, store: store as Store, bus });
    if (stopping) return;
    await created.start();
    service = created;
    if (stopping) return;
    server = await listen(service.handler, port, host, {
      maxHeaderSize: options.maxHeaderBytes ?? SERVICE_MAX_HEADER_BYTES,
    }).catch((err) => cannotListen(logger, err, host, port, ''));
  })();
  handleProcessSignals(logger, async () => {
    stopping = true;
    await startUp.catch(() => undefined);
    await server?.close(common.SHUTDOWN_DRAIN_SECONDS * 1000);
    await admin.close(1_000);
    await service?.stop();
    await bus?.close();
    await store?.close();
  });
  // Only now, in the same turn: a signal without a listener takes its default action (Node closes the handle), which
  // would kill the service without closing its store; listeners run in a later turn, so this one never does.
  process.off('SIGTERM', stopWhileWaiting).off('SIGINT', stopWhileWaiting);
  try {
    await startUp;
  } catch (err) {
    // stopped meanwhile: the stop closes what was opened
    if (stopping) return;
    // one log line saying why, as for a bad setting: not Node's stack trace of an unhandled rejection
    logger.fatal({ err }, `${options.name} cannot start: ${err instanceof Error ? err.message : err}`);
    process.exit(1);
  }
  if (!server || !service) return;
  adminHandler = service.admin;
  logger.info({ url: server.url, admin: admin.url }, `${options.name} listening`);
  options.onListening?.(server.url);
}

/** PORT as every service reads it; a bad one is a config error naming it. */
export function listenPort(text: string | undefined, defaultPort: number): number {
  const port = env.port(defaultPort).safeParse(text);
  if (!port.success)
    throw new ConfigError([{ key: 'PORT', message: `must be a port number from 0 to 65535 (got ${text})` }]);
  return port.data;
}

/** An address or port the service cannot have: one line saying which and what to change, not a stack trace. */
function cannotListen(
  logger: Logger,
  err: Error & { code?: string },
  host: string,
  port: number,
  /** the settings' prefix: '' (HOST, PORT) or 'ADMIN' (ADMIN_HOST, ADMIN_PORT) */
  prefix: '' | 'ADMIN',
): never {
  logger.fatal({ code: err.code, host, port }, cannotListenLine(err, host, port, prefix));
  process.exit(1);
}

/** Why `host:port` cannot be listened on and which setting to change, as one line. */
export function cannotListenLine(
  err: Error & { code?: string },
  host: string,
  port: number,
  prefix: '' | 'ADMIN' = '',
): string {
  const setting = (name: 'HOST' | 'PORT') => (prefix ? `${prefix}_${name}` : name);
  const [reason, change] =
    err.code === 'EADDRINUSE'
      ? ['the port is already in use', `set ${setting('PORT')} to another port`]
      : err.code === 'EACCES'
        ? ['permission denied (ports below 1024 need privileges)', `set ${setting('PORT')} to another port`]
        : err.code === 'EADDRNOTAVAIL'
          ? ["the address is not one of this machine's", `set ${setting('HOST')} to another address`]
          : err.code === 'ENOTFOUND' || err.code === 'EAI_AGAIN'
            ? ['no such host', `set ${setting('HOST')} to another address`]
            : [err.message, `check ${setting('HOST')} and ${setting('PORT')}`];
  return `cannot listen on ${host}:${port}: ${reason}; ${change}`;
}
