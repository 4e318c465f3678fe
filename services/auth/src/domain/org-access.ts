import type { PermissionName } from '@platform/contracts';
import { Forbidden } from '@platform/kernel';
import type { AuthCollections, MembershipDoc, OrgDoc } from '../data/collections';
import type { Caller } from './caller';
import { orgNotFound } from './org-deletion';
import { findRole, NO_ROLE, type RoleDefinition } from './roles';

/**
 * An organization may require two-step verification of its members (`settings.requireMfa`): then a
 * member's session counts in it only when it was signed in with a second factor, and an access token only
 * when the session that made it was.
 */
export function meetsMfaPolicy(org: OrgDoc, holder: { mfa?: boolean }): boolean {
  return org.settings.requireMfa !== true || holder.mfa === true;
}

export const mfaRequired = (slug: string) =>
  new Forbidden(`${slug} requires two-step verification: sign in with a second factor`, {
    error: 'MfaRequired',
    details: { orgSlug: slug },
  });

/** What a caller may do in one organization, read fresh from the store. */
export interface OrgAccess {
  org: OrgDoc;
  caller: Caller;
  /** the caller's membership (users only) */
  membership: MembershipDoc | null;
  /** the caller's role (users) or the key's grant (organization API keys) */
  role: RoleDefinition;
  can(permission: PermissionName): boolean;
  /** throws Forbidden naming the missing permission */
  require(permission: PermissionName): void;
  /**
   * Nobody hands out, or takes away, more than they hold: throws 403 `PermissionEscalation` with `message`,
   * listing those of `permissions` the caller lacks.
   */
  requireHeld(permissions: readonly string[], message: string): void;
}

/** Renaming or deleting the organization itself: its owners only (users with the built-in `owner` role). */
export function requireOwner(access: OrgAccess, what: string): void {
  if (access.membership?.role !== 'owner') {
    throw new Forbidden(`Only an owner of ${access.org.slug} may ${what}`, { error: 'OwnerOnly' });
  }
}

/**
 * Organization routes: unknown slug 404; a user who is not a member, a key of another organization,
 * a project-restricted key (organization routes are not about one project) or a workspace key: 403. `leaving`: the
 * caller is a user removing their own membership, which the organization's two-step rule does not refuse.
 */
export async function orgAccess(
  collections: AuthCollections,
  caller: Caller,
  slug: string,
  options: { leaving?: boolean } = {},
): Promise<OrgAccess> {
  const org = await collections.orgs.findOne({ slug });
  if (!org) throw orgNotFound(slug, (await collections.orgTombstones.findOne({ _id: slug })) !== null);
  let membership: MembershipDoc | null = null;
  let role: RoleDefinition;
  switch (caller.kind) {
    case 'user': {
      membership = await collections.memberships.findOne({ orgId: org._id, userId: caller.user._id });
      if (!membership) throw new Forbidden(`Not a member of ${slug}`, { error: 'NotAMember' });
      // leaving is always the member's own (decision 0032): the two-step rule keeps nobody in
      if (!options.leaving && !meetsMfaPolicy(org, caller.holder)) throw mfaRequired(slug);
      role = (await findRole(collections, org, membership.role)) ?? NO_ROLE;
      break;
    }
    case 'org_api_key': {
      if (caller.key.orgId !== org._id) throw new Forbidden('This API key belongs to another organization');
      if (caller.key.projectId) {
        throw new Forbidden(`This API key is restricted to project ${caller.key.projectId}`, {
          error: 'ProjectRestricted',
        });
      }
      role = {
        slug: 'api-key',
        description: '',
        permissions: caller.key.permissions,
        scopes: caller.key.scopes,
        builtIn: false,
      };
      break;
    }
    default:
      throw new Forbidden('A workspace API key grants only its workspace rules');
  }
  const granted = new Set(role.permissions);
  return {
    org,
    caller,
    membership,
    role,
    can: (permission) => granted.has(permission),
    require(permission) {
      if (!granted.has(permission)) {
        throw new Forbidden(`Needs the ${permission} permission in ${slug}`, {
          error: 'MissingPermission',
          details: { permission, orgSlug: slug },
        });
      }
    },
    requireHeld(permissions, message) {
      const beyond = permissions.filter((p) => !granted.has(p as PermissionName));
      if (beyond.length)
        throw new Forbidden(message, { error: 'PermissionEscalation', details: { permissions: beyond } });
    },
  };
}
