import { z } from 'zod';
import { env } from './config';

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
};
