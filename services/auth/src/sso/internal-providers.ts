import { jsonBody, parseInput, requireInternalSecret } from '@platform/kernel';
import type { Router } from 'express';
import { z } from 'zod';
import { publicBaseUrl } from '../accounts/public-url';
import type { AuthContext } from '../context';
import type { SsoClients } from './providers';

export const SsoProviderBody = z
  .strictObject({
    name: z.string().trim().min(1).max(100),
    issuer: z.url().max(2000),
    clientId: z.string().min(1).max(200),
    /** absent: the stored one is kept; null: the stored one is removed (a public client) */
    clientSecret: z.string().min(1).max(500).nullable().optional(),
    /** absent: the stored one is kept (none for a new provider); null: the platform's provider, of no organization */
    orgSlug: z.string().min(1).max(63).nullable().optional(),
  })
  .meta({ description: 'PUT /internal/sso-providers/:slug' });

/**
 * A platform admin (the operator CLI, with the internal secret) names an external identity provider for
 * the platform or, with `orgSlug`, for one organization. Idempotent; the secret is stored sealed and never answered
 * (`hasClientSecret` says whether one is stored). Named again without `clientSecret` or `orgSlug`, the provider keeps
 * its secret or its organization.
 */
export function mountInternalSsoRoutes(router: Router, c: AuthContext, sso: SsoClients): void {
  router.put(
    '/internal/sso-providers/:slug',
    requireInternalSecret(c.config.PLATFORM_INTERNAL_SECRET),
    async (req, res) => {
      const slug = parseInput(
        z.string().regex(/^[a-z0-9-]{2,40}$/, 'lower-case letters, digits, dashes'),
        req.params.slug,
        'slug',
      );
      const body = parseInput(SsoProviderBody, jsonBody(req));
      if (body.orgSlug && !(await c.collections.orgs.findOne({ slug: body.orgSlug }))) {
        return res
          .status(404)
          .json({ error: 'OrgNotFound', message: `Organization ${body.orgSlug} does not exist` });
      }
      const fields = {
        name: body.name,
        issuer: body.issuer,
        clientId: body.clientId,
        clientSecret: body.clientSecret,
        orgSlug: body.orgSlug,
      };
      const { result, hasClientSecret, orgSlug } = await sso.save(slug, fields, c.clock.now());
      res.status(result === 'created' ? 201 : 200).json({
        result,
        slug,
        name: fields.name,
        issuer: fields.issuer,
        clientId: fields.clientId,
        orgSlug,
        hasClientSecret,
        redirectUri: `${publicBaseUrl(c.config)}/account/sso/${slug}/callback`,
      });
    },
  );
}
