import { NotFound } from '@platform/kernel';
import { DuplicateKeyError } from '@platform/store';
import type { AuthContext } from '../context';
import type { OrgDoc } from '../data/collections';
import { revokedNow } from './removal-times';
import { deleteWorkspaceRecords } from './workspace-deletion';

export const orgNotFound = (slug: string, deleted = false) =>
  new NotFound(deleted ? `Organization ${slug} was deleted` : `Organization ${slug} does not exist`, {
    error: 'OrgNotFound',
  });

/**
 * Deletes an organization (decision 0099). Its slug is reserved first (a tombstone, `org_tombstones`), so no
 * one registers it again and inherits what is kept under it; then the organization's document goes, conditionally:
 * from that write on, nothing that names the organization works (its keys, memberships and workspaces are refused
 * by the principal look-up and the routes), whatever the sweep below has reached. The sweep revokes the API keys,
 * deletes the workspaces (their keys revoked), memberships and custom roles, and clears the members' active
 * organization where it was this one; every edge is told, and `auth.org.deleted` tells llm-quota. Answers false when
 * another request deleted it first.
 */
export async function deleteOrganization(c: AuthContext, org: OrgDoc, deletedBy: string): Promise<boolean> {
  try {
    await c.collections.orgTombstones.insertOne({
      _id: org.slug,
      orgId: org._id,
      deletedAt: c.clock.now(),
      deletedBy,
    });
  } catch (err) {
    // a racing deletion of the same organization, or an earlier one a crash cut short
    if (!(err instanceof DuplicateKeyError)) throw err;
  }
  if ((await c.collections.orgs.deleteOne({ _id: org._id })) === 0) return false;
  // principals whose active organization this was go at once, before the sweep
  await c.events.membershipChanged(org.slug);
  await sweepDeletedOrganization(c, { _id: org._id, slug: org.slug });
  await c.events.orgDeleted(org._id, org.slug);
  c.logger.info({ orgSlug: org.slug, orgId: org._id, deletedBy }, 'organization deleted');
  return true;
}

/**
 * What names a deleted organization, removed or revoked; safe to run again (the retention pass does, for a
 * deletion a crash cut short). Marks the tombstone swept.
 */
export async function sweepDeletedOrganization(c: AuthContext, org: Pick<OrgDoc, '_id' | 'slug'>) {
  const col = c.collections;
  const keys = await col.orgApiKeys.find({ orgId: org._id, revokedAt: null });
  if (keys.length > 0) {
    await col.orgApiKeys.updateMany({ orgId: org._id, revokedAt: null }, { $set: revokedNow(c) });
    for (const key of keys) await c.events.credentialRevoked('org_api_key', key._id, key.keyHash);
  }
  for (const workspace of await col.workspaces.find({ orgId: org._id })) {
    await deleteWorkspaceRecords(c, workspace);
  }
  const members = await col.memberships.find({ orgId: org._id });
  await col.memberships.deleteMany({ orgId: org._id });
  for (const userId of new Set(members.map((m) => m.userId))) {
    const chosen = { userId, activeOrgSlug: org.slug };
    await col.sessions.updateMany(chosen, { $set: { activeOrgSlug: null } });
    await col.accessTokens.updateMany(chosen, { $set: { activeOrgSlug: null } });
  }
  await col.roles.deleteMany({ orgId: org._id });
  await c.events.membershipChanged(org.slug);
  await col.orgTombstones.updateOne({ _id: org.slug }, { $set: { sweptAt: c.clock.now() } });
}

/**
 * Removes the name and creation time that tombstones written by earlier versions kept of their organization:
 * the reservation needs neither. Answers how many tombstones it changed.
 */
export async function forgetDeletedOrgNames(c: AuthContext): Promise<number> {
  const { modified } = await c.collections.orgTombstones.updateMany(
    { $or: [{ name: { $exists: true } }, { createdAt: { $exists: true } }] },
    { $unset: { name: '', createdAt: '' } },
  );
  return modified;
}

/** How long after an organization's deletion each retention pass announces it again. */
const REANNOUNCED_FOR_MS = 24 * 3_600_000;

/**
 * Announces `auth.org.deleted` again for the organizations deleted in the last day (swept ones; an unswept one is
 * announced when its sweep finishes): the event is sent once, and a llm-quota away at that moment would go on
 * serving the organization's settings. llm-quota takes it again harmlessly. Answers how many were announced.
 */
export async function reannounceRecentOrgDeletions(c: AuthContext): Promise<number> {
  const since = new Date(c.clock.now().getTime() - REANNOUNCED_FOR_MS);
  const recent = await c.collections.orgTombstones.find(
    { sweptAt: { $exists: true }, deletedAt: { $gte: since } },
    { limit: 1_000 },
  );
  for (const tombstone of recent) await c.events.orgDeleted(tombstone.orgId, tombstone._id);
  return recent.length;
}
