import type { RequestListener } from 'node:http';
import type { Clock } from './clock';
import type { Logger } from './logger';

/**
 * What every service module builds from its dependencies. `handler` never listens: main.ts, the
 * standalone composition or a test does. `start` begins background work (timers, consumers) and
 * `stop` ends it; neither closes the store or the bus, which belong to whoever created them.
 */
export interface PlatformService {
  readonly name: string;
  readonly handler: RequestListener;
  /** the admin listener (/healthz, /readyz, /metrics), served on ADMIN_PORT apart from `handler` */
  readonly admin: RequestListener;
  start(): Promise<void>;
  stop(): Promise<void>;
}

/** The dependencies common to services; each service adds its own config type. */
export interface BaseDeps<Config> {
  config: Config;
  logger: Logger;
  clock: Clock;
}
