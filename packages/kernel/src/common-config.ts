import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { env } from './config';
import { trustProxySetting } from './http/forwarding';
import { SERVICE_TRUST_PROXY } from './http/service-app';

const natsUrl = () =>
  z.string().refine((value) => {
    try {
      const url = new URL(value);
      decodeURIComponent(url.username + url.password);
      return ['nats:', 'tls:'].includes(url.protocol);
    } catch {
      return false;
    }
  }, 'must be a nats:// or tls:// URL, with a password or token URL-encoded');

/** a file the process can read (checked at start), whose text passes `check` */
const fileWith = (check: (text: string) => string | undefined) =>
  z.string().superRefine((file, ctx) => {
    let text: string;
    try {
      text = readFileSync(file, 'utf8');
    } catch (err) {
      ctx.addIssue({ code: 'custom', message: `cannot read ${file} (${(err as Error).message})` });
      return;
    }
    const problem = check(text);
    if (problem) ctx.addIssue({ code: 'custom', message: `${file} ${problem}` });
  });

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
  /**
   * NATS server URL with the service's own credentials, URL-encoded: `nats://user:password@host:4222`, or a
   * token, `nats://token@host:4222` (`tls://` requires TLS); unset (standalone only): the in-process bus
   */
  NATS_URL: natsUrl().optional(),
  /** a NATS credentials file (user JWT and nkey seed, from nsc) to connect with; read again at each reconnection */
  NATS_CREDS_FILE: fileWith((text) =>
    text.includes('BEGIN NATS USER JWT') ? undefined : 'is not a NATS credentials file (no user JWT in it)',
  ).optional(),
  /** the certificate authority (PEM) that signed the NATS server's certificate; when set, TLS is required */
  NATS_TLS_CA_FILE: fileWith((text) =>
    text.includes('BEGIN CERTIFICATE') ? undefined : 'holds no PEM certificate',
  ).optional(),
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
