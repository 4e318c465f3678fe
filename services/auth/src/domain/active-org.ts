import type { AuthCollections, MembershipDoc } from '../data/collections';

/** A user's memberships, first joined first (the order of spec 5.2 rule 7 (c)). */
export async function membershipsOf(
  collections: Pick<AuthCollections, 'memberships'>,
  userId: string,
): Promise<MembershipDoc[]> {
  const list = await collections.memberships.find({ userId });
  return list.sort((a, b) => a.createdAt.getTime() - b.createdAt.getTime() || a._id.localeCompare(b._id));
}

export type ActiveOrgSource = 'path' | 'session' | 'first_membership';

export interface ActiveOrg {
  membership: MembershipDoc;
  source: ActiveOrgSource;
}

/**
 * Spec 5.2 rule 7: (a) the organization named in the path, (b) the persisted `activeOrgSlug`,
 * (c) the first membership. A path naming an organization the user does not belong to resolves to
 * none (never silently to another organization); a persisted choice the user has since left is skipped.
 */
export function resolveActiveOrg(
  memberships: MembershipDoc[],
  pathOrgSlug: string | null | undefined,
  persistedOrgSlug: string | null | undefined,
): ActiveOrg | null {
  if (pathOrgSlug) {
    const inPath = memberships.find((m) => m.orgSlug === pathOrgSlug);
    return inPath ? { membership: inPath, source: 'path' } : null;
  }
  if (persistedOrgSlug) {
    const persisted = memberships.find((m) => m.orgSlug === persistedOrgSlug);
    if (persisted) return { membership: persisted, source: 'session' };
  }
  const first = memberships[0];
  return first ? { membership: first, source: 'first_membership' } : null;
}

/** The active organization of a user caller outside any `/v2/orgs/:orgSlug` path (rule 7 (b), (c)). */
export async function activeOrgOfUser(
  collections: Pick<AuthCollections, 'memberships'>,
  userId: string,
  persistedOrgSlug: string | null,
): Promise<{ active: ActiveOrg | null; memberships: MembershipDoc[] }> {
  const memberships = await membershipsOf(collections, userId);
  return { active: resolveActiveOrg(memberships, null, persistedOrgSlug), memberships };
}
