import { jsonBody, NotFound, parseInput, requireInternalSecret } from '@platform/kernel';
import type { Router } from 'express';
import { z } from 'zod';
import type { AuthContext } from '../context';

export { INTERNAL_SECRET_HEADER } from '@platform/kernel';

export const PrincipalRequestBody = z
  .strictObject({
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

/** The edge's introspection call: credential -> principal, on the edge's cache-miss path. */
export function mountInternalRoutes(router: Router, c: AuthContext): void {
  router.post(
    '/internal/principal',
    requireInternalSecret(c.config.PLATFORM_INTERNAL_SECRET),
    async (req, res) => {
      const body = parseInput(PrincipalRequestBody, jsonBody(req));
      const { principal, expiresAt } = await c.introspection.resolve(
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

  // Operators (`pnpm platform admin grant|revoke <userId>`) make a user a platform administrator.
  router.put(
    '/internal/users/:userId/platform-admin',
    requireInternalSecret(c.config.PLATFORM_INTERNAL_SECRET),
    async (req, res) => {
      const { granted } = parseInput(z.object({ granted: z.boolean() }).strict(), jsonBody(req) ?? {});
      const userId = String(req.params.userId);
      const updated = await c.collections.users.updateOne(
        { _id: userId },
        granted ? { $set: { platformAdmin: true } } : { $unset: { platformAdmin: true } },
      );
      if (updated.matched === 0) throw new NotFound(`No user ${userId}`, { error: 'UserNotFound' });
      // the edges drop their cached principals of that user
      await c.events.membershipChanged('', userId);
      res.json({ userId, platformAdmin: granted });
    },
  );

  // Operators' tools ask whether an organization exists before acting on it in another service
  // (`pnpm platform plan assign`: llm-quota learns organizations only from their traffic).
  router.get(
    '/internal/orgs/:orgSlug',
    requireInternalSecret(c.config.PLATFORM_INTERNAL_SECRET),
    async (req, res) => {
      const slug = String(req.params.orgSlug);
      const org = await c.collections.orgs.findOne({ slug });
      if (!org) throw new NotFound(`Organization ${slug} does not exist`, { error: 'OrgNotFound' });
      res.json({ id: org._id, slug: org.slug, name: org.name, createdAt: org.createdAt.toISOString() });
    },
  );

  // Operators (the `pnpm platform keys rotate` command) rotate the signing keys now; 409 RotationUnderWay while
  // another change of the keys (another instance's rotation, a revocation) still holds the rotation lease.
  router.post(
    '/internal/signing-keys/rotate',
    requireInternalSecret(c.config.PLATFORM_INTERNAL_SECRET),
    async (_req, res) => {
      const outcome = await c.keys.rotateNow();
      res.json({ ...outcome, activatesAt: outcome.activatesAt?.toISOString() ?? null });
    },
  );

  // Operators (`pnpm platform keys list`): every key's state and dates, never key material.
  router.get(
    '/internal/signing-keys',
    requireInternalSecret(c.config.PLATFORM_INTERNAL_SECRET),
    async (_req, res) => {
      res.json({ keys: (await c.keys.list()).map(withIsoDates) });
    },
  );

  // Operators (`pnpm platform keys revoke <kid>`): a leaked key stops verifying and signing now (decision 0102).
  router.post(
    '/internal/signing-keys/:kid/revoke',
    requireInternalSecret(c.config.PLATFORM_INTERNAL_SECRET),
    async (req, res) => {
      const kid = parseInput(z.string().min(1).max(200), req.params.kid, 'kid');
      res.json(withIsoDates(await c.keys.revoke(kid)));
    },
  );
}

/** Dates as ISO strings, the rest as it is. */
function withIsoDates<T extends object>(value: T): Record<string, unknown> {
  return Object.fromEntries(
    Object.entries(value).map(([k, v]) => [k, v instanceof Date ? v.toISOString() : v]),
  );
}
