import { Forbidden, jsonBody, type LeanRoute, parseInput } from '@platform/kernel';
import type { Router } from 'express';
import { z } from 'zod';
import type { AccountDeletion } from '../accounts/account-deletion';
import { clientAddress } from '../accounts/client-address';
import { clearSessionCookies } from '../accounts/cookies';
import { publicBaseUrl } from '../accounts/public-url';
import type { AuthContext } from '../context';
import { activeOrgOfUser } from '../domain/active-org';
import { loadCaller, requireSession, requireUser, type UserCaller } from '../domain/caller';

export const ActiveOrgBody = z
  .strictObject({
    orgSlug: z.string().min(1).max(63).nullable().meta({
      description: 'organization to make active; null clears the choice (first membership applies)',
    }),
  })
  .meta({ description: 'PUT /v2/user/active-org' });

export const DeleteAccountBody = z
  .strictObject({
    password: z
      .string()
      .min(1)
      .max(256)
      .optional()
      .meta({ description: 'the account’s password (required when it has one)' }),
    mfaCode: z.string().min(1).max(20).optional().meta({
      description: 'a TOTP or recovery code (required when the account enrolled a second factor)',
    }),
  })
  .meta({ description: 'DELETE /v2/me: proof that it is the person, once more' });

/** 200 of GET /v2/me and PUT /v2/user/active-org. */
export const MeSchema = z
  .looseObject({
    id: z.string(),
    anonymous: z.boolean(),
    email: z.string().nullable(),
    createdAt: z.iso.datetime(),
    activeOrgSlug: z
      .string()
      .nullable()
      .meta({ description: 'spec 5.2 rule 7; null when the user belongs to no organization' }),
    activeOrgSource: z
      .enum(['path', 'session', 'first_membership'])
      .nullable()
      .meta({ description: 'which rule chose the active organization' }),
    memberships: z.array(
      z.looseObject({
        orgSlug: z.string(),
        orgName: z.string().nullable(),
        role: z.string(),
        joinedAt: z.iso.datetime(),
      }),
    ),
    credential: z
      .looseObject({ kind: z.enum(['session', 'access_token']), id: z.string() })
      .meta({ description: 'the credential this request was made with' }),
  })
  .meta({ id: 'Me', description: 'The current user' });

async function describeMe(c: AuthContext, caller: UserCaller) {
  const { active, memberships } = await activeOrgOfUser(
    c.collections,
    caller.user._id,
    caller.holder.activeOrgSlug,
  );
  const orgs = memberships.length
    ? await c.collections.orgs.find({ _id: { $in: memberships.map((m) => m.orgId) } })
    : [];
  const nameOf = new Map(orgs.map((o) => [o._id, o.name]));
  return {
    id: caller.user._id,
    anonymous: caller.user.anonymous,
    email: caller.user.email ?? null,
    createdAt: caller.user.createdAt.toISOString(),
    activeOrgSlug: active?.membership.orgSlug ?? null,
    activeOrgSource: active?.source ?? null,
    memberships: memberships.map((m) => ({
      orgSlug: m.orgSlug,
      orgName: nameOf.get(m.orgId) ?? null,
      role: m.role,
      joinedAt: m.createdAt.toISOString(),
    })),
    credential: { kind: caller.via, id: caller.credentialId },
  };
}

/** GET /v2/me: the hottest read of the platform, a lean route (docs/decisions/0076). */
export const meRoute = (c: AuthContext): LeanRoute => ({
  path: '/v2/me',
  handle: async (req) => describeMe(c, requireUser(await loadCaller(c.collections, c.clock, req))),
});

/** PUT /v2/user/active-org (spec 5.2 rule 7) and DELETE /v2/me; GET /v2/me is `meRoute`. */
export function mountMeRoutes(router: Router, c: AuthContext, deletion: AccountDeletion): void {
  router.delete('/v2/me', async (req, res) => {
    // a session, never an access token or a key: deleting the account is the person's own act
    const caller = requireSession(await loadCaller(c.collections, c.clock, req));
    const answer = parseInput(DeleteAccountBody, jsonBody(req) ?? {});
    await deletion.delete({ user: caller.user, session: caller.holder }, answer, clientAddress(req));
    clearSessionCookies(res, publicBaseUrl(c.config));
    res.status(204).end();
  });

  router.put('/v2/user/active-org', async (req, res) => {
    const caller = requireUser(await loadCaller(c.collections, c.clock, req));
    const { orgSlug } = parseInput(ActiveOrgBody, jsonBody(req));
    if (orgSlug !== null) {
      const member = await c.collections.memberships.findOne({ orgSlug, userId: caller.user._id });
      if (!member) throw new Forbidden(`Not a member of ${orgSlug}`, { error: 'NotAMember' });
    }
    // Persisted on the session (or on the access token, which has no session).
    const target = caller.via === 'session' ? c.collections.sessions : c.collections.accessTokens;
    await target.updateOne({ _id: caller.credentialId }, { $set: { activeOrgSlug: orgSlug } });
    const previous = caller.holder.activeOrgSlug;
    caller.holder.activeOrgSlug = orgSlug;
    // Edge caches hold principals with the old active organization: drop this user's.
    const named = orgSlug ?? previous;
    if (named) await c.events.membershipChanged(named, caller.user._id);
    res.json(await describeMe(c, caller));
  });
}
