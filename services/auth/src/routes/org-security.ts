import { Forbidden, jsonBody, parseInput } from '@platform/kernel';
import type { Router } from 'express';
import { z } from 'zod';
import type { AuthContext } from '../context';
import { loadCaller, requireUser } from '../domain/caller';
import { orgAccess } from '../domain/org-access';

export const OrgSecurityBody = z
  .strictObject({
    requireMfa: z
      .boolean()
      .meta({ description: 'members must sign in with a second factor to act in the org' }),
  })
  .meta({ description: 'PUT /v2/orgs/:orgSlug/security' });

export const OrgSecuritySchema = z
  .looseObject({ orgSlug: z.string(), requireMfa: z.boolean() })
  .meta({ id: 'OrgSecurity', description: 'Security policy of an organization' });

/** The organization's security policy: whether its members need two-step verification. */
export function mountOrgSecurityRoutes(router: Router, c: AuthContext): void {
  router.get('/v2/orgs/:orgSlug/security', async (req, res) => {
    const access = await orgAccess(
      c.collections,
      await loadCaller(c.collections, c.clock, req),
      String(req.params.orgSlug),
    );
    access.require('members:read');
    res.json({ orgSlug: access.org.slug, requireMfa: access.org.settings.requireMfa === true });
  });

  router.put('/v2/orgs/:orgSlug/security', async (req, res) => {
    // The rule binds people, and only a person changes it: an API key, which no second factor guards, could
    // otherwise lift it for everyone (while it holds, a user reaching this route has met it).
    const caller = requireUser(await loadCaller(c.collections, c.clock, req));
    const access = await orgAccess(c.collections, caller, String(req.params.orgSlug));
    access.require('members:manage');
    const { requireMfa } = parseInput(OrgSecurityBody, jsonBody(req));
    // Whoever turns it on must be able to meet it, or they would lock themselves out.
    if (requireMfa && (caller.via !== 'session' || caller.holder.mfa !== true)) {
      throw new Forbidden('Sign in with two-step verification before requiring it of the members', {
        error: 'MfaRequired',
      });
    }
    await c.collections.orgs.updateOne(
      { _id: access.org._id },
      { $set: { 'settings.requireMfa': requireMfa } },
    );
    // Edge caches hold principals with this org's context: drop them.
    await c.events.membershipChanged(access.org.slug);
    res.json({ orgSlug: access.org.slug, requireMfa });
  });
}
