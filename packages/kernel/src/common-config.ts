import { z } from 'zod';
import { env } from './config';
import { trustProxySetting } from './http/forwarding';
import { SERVICE_TRUST_PROXY } from './http/service-app';

/**
 * Keys every service reads. Each service's schema spreads these into its own:
 * `z.object({ ...commonConfig, MY_KEY: ... })`.
 */
export const commonConfig = {
  /** pino level */
  LOG_LEVEL: env.logLevel(),
  /** secret shared by the edge and the services: seals the principal, guards internal routes */
  PLATFORM_INTERNAL_SECRET: z.string().min(32, 'must be at least 32 characters'),
  /** the embedded store's folder (each service uses a subfolder named after itself) */
  DATA_DIR: z.string().default('./data'),
  /** MongoDB connection string; when set the MongoDB engine replaces the embedded one */
  MONGO_URL: z.string().optional(),
  /** NATS server URL; when unset (standalone only) the in-process bus is used */
  NATS_URL: z.string().optional(),
  /** port of the admin listener (/healthz, /readyz, /metrics), apart from the public port; 0 picks a free one */
  ADMIN_PORT: env.port(9464),
  /** address the admin listener binds (keep it off the public network: the admin port has no credentials) */
  ADMIN_HOST: z.string().min(1).default('0.0.0.0'),
  /**
   * whose X-Forwarded-For/-Host/-Proto/-Prefix are believed: `false`, or addresses, CIDRs, `loopback`,
   * `linklocal`, `uniquelocal` (comma-separated). Services default to loopback and private ranges (only
   * the edge reaches them); the edge defaults to `false`
   */
  TRUST_PROXY: trustProxySetting(SERVICE_TRUST_PROXY),
  /**
   * on SIGTERM, how long requests in flight (a streamed completion included) may take to finish before their
   * connections are closed (seconds); the orchestrator's grace period must cover it
   */
  SHUTDOWN_DRAIN_SECONDS: env.int(10, 0),
};
