import { timingSafeEqual } from 'node:crypto';
import { parseInput, Unauthenticated } from '@platform/kernel';
import type { RequestHandler, Router } from 'express';
import { z } from 'zod';
import type { AuthContext } from '../context';

export const INTERNAL_SECRET_HEADER = 'x-platform-internal-secret';

export const PrincipalRequestBody = z
  .object({
    credential: z.discriminatedUnion('kind', [
      z.object({
        kind: z.literal('session'),
        userId: z.string().min(1).max(200),
        sessionId: z.string().min(1).max(200),
      }),
      z.object({ kind: z.literal('access_token'), token: z.string().min(1).max(500) }),
      z.object({ kind: z.literal('api_key'), key: z.string().min(1).max(500) }),
    ]),
    orgSlug: z.string().min(1).max(63).nullable().optional(),
  })
  .meta({ description: 'POST /internal/principal (docs/internal-api.md)' });

/** Internal routes accept only the shared secret, compared in constant time. */
export function requireInternalSecret(secret: string): RequestHandler {
  const expected = Buffer.from(secret);
  return (req, _res, next) => {
    const given = Buffer.from(String(req.headers[INTERNAL_SECRET_HEADER] ?? ''));
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) {
      return next(new Unauthenticated('Internal route'));
    }
    next();
  };
}

/** The edge's introspection call: credential -> principal, on the edge's cache-miss path. */
export function mountInternalRoutes(router: Router, c: AuthContext): void {
  router.post(
    '/internal/principal',
    requireInternalSecret(c.config.PLATFORM_INTERNAL_SECRET),
    async (req, res) => {
      const body = parseInput(PrincipalRequestBody, req.body);
      const { principal, expiresAt } = await c.resolver.resolve(
        body.credential,
        body.orgSlug ?? null,
        req.id ?? '',
      );
      res.json({
        principal,
        expiresAt: expiresAt ? expiresAt.toISOString() : null,
        cacheTtlSeconds: c.config.PRINCIPAL_CACHE_TTL_SECONDS,
      });
    },
  );

  // Operators (the `pnpm platform keys rotate` command) rotate the signing keys now.
  router.post(
    '/internal/signing-keys/rotate',
    requireInternalSecret(c.config.PLATFORM_INTERNAL_SECRET),
    async (_req, res) => {
      const outcome = await c.keys.rotateNow();
      res.json({ ...outcome, activatesAt: outcome.activatesAt?.toISOString() ?? null });
    },
  );
}
