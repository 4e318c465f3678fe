import { checkReadiness } from '@platform/kernel';
import type { Router } from 'express';
import { z } from 'zod';
import packageJson from '../../package.json';
import type { AuthContext } from '../context';

/** GET {base_url}/: 200 while the platform can serve (`degraded` when NATS is away), 503 (same shape) when the store fails. */
export const PlatformStatusSchema = z
  .looseObject({
    name: z.string(),
    version: z.string(),
    status: z.enum(['ok', 'degraded']),
    checks: z.record(z.string(), z.string()).meta({ description: 'per dependency: `ok`, or what failed' }),
    time: z.iso.datetime(),
  })
  .meta({ id: 'PlatformStatus' });

/**
 * GET {base_url}/ — platform status: name, version, and the health of the store and the bus. 503 when
 * the store fails (nothing can be served); the bus down is `degraded` with 200 (requests are served).
 */
export function mountStatusRoutes(router: Router, c: AuthContext): void {
  router.get('/', async (_req, res) => {
    const { ready, checks, degraded } = await checkReadiness({
      required: { store: () => c.store.ping() },
      reported: { bus: () => c.bus.ping() },
    });
    res.status(ready ? 200 : 503).json({
      name: c.config.PLATFORM_NAME,
      version: packageJson.version,
      status: ready && degraded.length === 0 ? 'ok' : 'degraded',
      checks,
      time: c.clock.now().toISOString(),
    });
  });
}
