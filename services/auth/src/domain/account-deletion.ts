import { Conflict } from '@platform/kernel';
import { DuplicateKeyError } from '@platform/store';
import type { MfaDoc } from '../accounts/mfa';
import { revokeSession } from '../accounts/sessions';
import type { AuthContext } from '../context';
import type { MembershipDoc, OrgDoc, UserDoc, WorkspaceMemberDoc } from '../data/collections';
import { deleteOidcStateOf } from '../oidc/store-adapter';
import { openSsoCollections } from '../sso/providers';
import { revokeUserAccessTokens } from './access-tokens';
import { membershipsOf } from './active-org';
import { orgExists, workspaceExists } from './liveness';
import { deleteOrganization, sweepDeletedOrganization } from './org-deletion';

/** What keeps an account: organizations and workspaces it is the last owner of, which other people belong to. */
export interface OwnershipBlockers {
  organizations: Array<{ slug: string; name: string; members: number }>;
  workspaces: Array<{ id: string; name: string; orgSlug: string; members: number }>;
}

/** What deleting an account would do, as the person is told before they confirm. */
export interface AccountDeletionPlan {
  /** organizations the person is the only member of: deleted with the account */
  orgsDeleted: Array<{ slug: string; name: string }>;
  /** organizations the person leaves */
  orgsLeft: Array<{ slug: string; name: string; role: string }>;
  blockers: OwnershipBlockers;
}

export const hasBlockers = (b: OwnershipBlockers): boolean =>
  b.organizations.length > 0 || b.workspaces.length > 0;

/** 409 `LastOwner`, naming everything the person must hand over (or delete) first. */
export function lastOwnerConflict(b: OwnershipBlockers): Conflict {
  const names = [
    ...b.organizations.map((o) => `organization ${o.slug} (${o.name})`),
    ...b.workspaces.map((w) => `workspace "${w.name}" (${w.id}) in ${w.orgSlug}`),
  ];
  return new Conflict(
    `You are the last owner of ${names.join(', ')}, which other people belong to: make another member an owner, or delete ${names.length > 1 ? 'them' : 'it'}, first`,
    { error: 'LastOwner', details: { ...b } },
  );
}

/**
 * Reads what deleting `userId`'s account would do. An organization goes with the account when the person is its
 * only member; one with other members is left, unless the person is its last owner (a blocker). A workspace of an
 * organization that stays keeps existing (its organization's administrators manage it); it blocks only when the
 * person is its last owner and it has other members.
 */
export async function planAccountDeletion(c: AuthContext, userId: string): Promise<AccountDeletionPlan> {
  const col = c.collections;
  const memberships = await membershipsOf(col, userId);
  const orgs = memberships.length
    ? await col.orgs.find({ _id: { $in: memberships.map((m) => m.orgId) } })
    : [];
  const orgOf = new Map(orgs.map((o) => [o._id, o]));
  const plan: AccountDeletionPlan = {
    orgsDeleted: [],
    orgsLeft: [],
    blockers: { organizations: [], workspaces: [] },
  };
  const deletedWith = new Set<string>();
  for (const m of memberships) {
    const org = orgOf.get(m.orgId);
    if (!org) continue;
    const members = await col.memberships.count({ orgId: org._id });
    if (members <= 1) {
      plan.orgsDeleted.push({ slug: org.slug, name: org.name });
      deletedWith.add(org._id);
    } else if (m.role === 'owner' && (await col.memberships.count({ orgId: org._id, role: 'owner' })) <= 1) {
      plan.blockers.organizations.push({ slug: org.slug, name: org.name, members });
    } else {
      plan.orgsLeft.push({ slug: org.slug, name: org.name, role: m.role });
    }
  }
  for (const wm of await col.workspaceMembers.find({ userId, role: 'owner' })) {
    if (deletedWith.has(wm.orgId)) continue;
    const [owners, members] = await Promise.all([
      col.workspaceMembers.count({ workspaceId: wm.workspaceId, role: 'owner' }),
      col.workspaceMembers.count({ workspaceId: wm.workspaceId }),
    ]);
    if (owners > 1 || members <= 1) continue;
    const ws = await col.workspaces.findOne({ _id: wm.workspaceId });
    if (ws) plan.blockers.workspaces.push({ id: ws._id, name: ws.name, orgSlug: ws.orgSlug, members });
  }
  return plan;
}

/**
 * Deletes the account of `userId` (decision 0099). First the user is marked (`deletedAt`, a conditional write):
 * from that instant auth accepts none of the person's credentials and nobody can add them anywhere, and every edge
 * is told (`auth.credential.revoked`, kind `user`). Then the person leaves their organizations and workspaces, all
 * or nothing: when that would leave one with members but no owner (a co-owner leaving at the same moment), what was
 * done is put back, the mark is lifted and 409 `LastOwner` says why. Organizations they were the only member of
 * are deleted; then every session, OpenID Connect grant and token, access token, mailed link, second factor,
 * external identity and password goes, and last the user document. 409 `AccountBeingDeleted` when a deletion is
 * under way already.
 */
export async function deleteAccount(c: AuthContext, userId: string): Promise<{ orgsDeleted: string[] }> {
  const marked = await c.collections.users.findOneAndUpdate(
    { _id: userId, deletedAt: { $exists: false } },
    { $set: { deletedAt: c.clock.now() } },
  );
  if (!marked) {
    throw new Conflict('This account is being deleted already', { error: 'AccountBeingDeleted' });
  }
  await c.events.credentialRevoked('user', userId);
  return completeAccountDeletion(c, marked);
}

/**
 * Everything after the mark; what the retention pass runs again for a deletion a crash cut short. Safe to run more
 * than once.
 */
export async function completeAccountDeletion(
  c: AuthContext,
  user: UserDoc,
): Promise<{ orgsDeleted: string[] }> {
  let alone: OrgDoc[];
  try {
    alone = await leaveOrganizations(c, user._id);
  } catch (err) {
    // Only the refusal (409 LastOwner, its removals put back) gives the account back. Any other failure is a crash
    // by another name: the mark stays, the credentials stay refused, and the retention pass finishes the deletion.
    if (!(err instanceof Conflict)) throw err;
    await c.collections.users.updateOne(
      { _id: user._id, deletedAt: { $exists: true } },
      { $unset: { deletedAt: '' } },
    );
    throw err;
  }
  const orgsDeleted: string[] = [];
  for (const org of alone) if (await deleteOrganization(c, org, user._id)) orgsDeleted.push(org.slug);
  await eraseCredentialsAndSecrets(c, user._id);
  await c.collections.users.deleteOne({ _id: user._id, deletedAt: { $exists: true } });
  // once more: an edge that answered a look-up in flight at the first announcement caches nothing of it now
  await c.events.credentialRevoked('user', user._id);
  c.logger.info({ userId: user._id, orgsDeleted }, 'account deleted');
  return { orgsDeleted };
}

/**
 * Takes the person out of every organization and workspace that stays, and answers the organizations they are the
 * only member of (to be deleted with the account). All or nothing: when a removal leaves an organization or a
 * workspace with members and no owner, every removal is put back and 409 `LastOwner` names what blocked.
 */
async function leaveOrganizations(c: AuthContext, userId: string): Promise<OrgDoc[]> {
  const col = c.collections;
  const memberships = await col.memberships.find({ userId });
  const orgs = memberships.length
    ? await col.orgs.find({ _id: { $in: memberships.map((m) => m.orgId) } })
    : [];
  const orgOf = new Map(orgs.map((o) => [o._id, o]));
  const alone: OrgDoc[] = [];
  const shared: MembershipDoc[] = [];
  for (const m of memberships) {
    const org = orgOf.get(m.orgId);
    if (!org) await col.memberships.deleteOne({ _id: m._id });
    else if ((await col.memberships.count({ orgId: org._id })) <= 1) alone.push(org);
    else shared.push(m);
  }
  const aloneIds = new Set(alone.map((o) => o._id));
  const removed = { memberships: [] as MembershipDoc[], workspaceMembers: [] as WorkspaceMemberDoc[] };
  const blockers: OwnershipBlockers = { organizations: [], workspaces: [] };

  // workspace roles first (those of organizations deleted with the account go with them)
  for (const wm of await col.workspaceMembers.find({ userId })) {
    if (aloneIds.has(wm.orgId)) continue;
    if ((await col.workspaceMembers.deleteOne({ _id: wm._id })) === 0) continue;
    removed.workspaceMembers.push(wm);
    if (wm.role !== 'owner') continue;
    // checked after the write, as a member leaving is (two owners leaving at once cannot both succeed)
    if ((await col.workspaceMembers.count({ workspaceId: wm.workspaceId, role: 'owner' })) > 0) continue;
    const members = await col.workspaceMembers.count({ workspaceId: wm.workspaceId });
    const ws = members > 0 ? await col.workspaces.findOne({ _id: wm.workspaceId }) : null;
    if (ws)
      blockers.workspaces.push({ id: ws._id, name: ws.name, orgSlug: ws.orgSlug, members: members + 1 });
  }
  for (const m of shared) {
    if ((await col.memberships.deleteOne({ _id: m._id })) === 0) continue;
    removed.memberships.push(m);
    if (m.role !== 'owner' || (await col.memberships.count({ orgId: m.orgId, role: 'owner' })) > 0) continue;
    const members = await col.memberships.count({ orgId: m.orgId });
    const org = orgOf.get(m.orgId)!;
    // the others left meanwhile: nobody is left to hand it to, so it goes with the account
    if (members === 0) alone.push(org);
    else blockers.organizations.push({ slug: org.slug, name: org.name, members: members + 1 });
  }
  if (hasBlockers(blockers)) {
    await putBack(c, removed);
    throw lastOwnerConflict(blockers);
  }
  for (const m of removed.memberships) await c.events.membershipChanged(m.orgSlug, userId);
  return alone;
}

/** Puts removed memberships back (an aborted deletion), unless what they belong to was deleted meanwhile. */
async function putBack(
  c: AuthContext,
  removed: { memberships: MembershipDoc[]; workspaceMembers: WorkspaceMemberDoc[] },
): Promise<void> {
  const again = async (insert: () => Promise<unknown>) => {
    try {
      await insert();
    } catch (err) {
      if (!(err instanceof DuplicateKeyError)) throw err;
    }
  };
  for (const m of removed.memberships) {
    await again(() => c.collections.memberships.insertOne(m));
    if (!(await orgExists(c, m.orgId))) await c.collections.memberships.deleteOne({ _id: m._id });
  }
  for (const wm of removed.workspaceMembers) {
    await again(() => c.collections.workspaceMembers.insertOne(wm));
    if (!(await workspaceExists(c, wm.workspaceId)))
      await c.collections.workspaceMembers.deleteOne({ _id: wm._id });
  }
}

/** Every credential and secret of the person, and anything given to them while the deletion ran. */
async function eraseCredentialsAndSecrets(c: AuthContext, userId: string): Promise<void> {
  const col = c.collections;
  // each revocation also deletes the session's refresh tokens and, for an OpenID Connect session, its grant
  for (const s of await col.sessions.find({ userId, revokedAt: null })) await revokeSession(c, s._id);
  // the provider's own sessions, grants, codes and refresh tokens of the person
  await deleteOidcStateOf(c.store, userId);
  await revokeUserAccessTokens(c, userId);
  await col.accessTokenPlaces.deleteOne({ _id: userId });
  await col.accountTokens.deleteMany({ userId });
  await c.store.collection<MfaDoc>('mfa').deleteOne({ _id: userId });
  await openSsoCollections(c.store).identities.deleteMany({ userId });
  // the password, and with it the email: free for a new account from now on
  await col.accounts.deleteMany({ userId });
  // given while this ran: the giver's own check after its write takes it back too
  await col.workspaceMembers.deleteMany({ userId });
  await col.memberships.deleteMany({ userId });
}

/** Deletions older than this with their mark still there were cut short (a crash): the retention pass ends them. */
const INTERRUPTED_AFTER_MS = 15 * 60_000;
const BATCH = 100;

/**
 * Finishes account and organization deletions a crash cut short (the retention pass, one instance at a time):
 * users marked for deletion long ago, and organization tombstones whose sweep never completed. Answers how many.
 */
export async function finishInterruptedDeletions(
  c: AuthContext,
): Promise<{ accounts: number; organizations: number }> {
  const before = new Date(c.clock.now().getTime() - INTERRUPTED_AFTER_MS);
  let accounts = 0;
  for (const user of await c.collections.users.find({ deletedAt: { $lt: before } }, { limit: BATCH })) {
    try {
      await completeAccountDeletion(c, user);
      accounts++;
    } catch (err) {
      // one that fails (a store error) stays marked for the next pass, and does not hold up the others
      c.logger.warn(
        { userId: user._id, err },
        err instanceof Conflict
          ? 'an interrupted account deletion was refused: the account stays'
          : 'an interrupted account deletion failed; the next pass tries again',
      );
    }
  }
  let organizations = 0;
  const unswept = await c.collections.orgTombstones.find(
    { sweptAt: { $exists: false }, deletedAt: { $lt: before } },
    { limit: BATCH },
  );
  for (const tombstone of unswept) {
    const org = await c.collections.orgs.findOne({ _id: tombstone.orgId });
    if (org) await deleteOrganization(c, org, tombstone.deletedBy);
    else await sweepDeletedOrganization(c, { _id: tombstone.orgId, slug: tombstone._id });
    organizations++;
  }
  return { accounts, organizations };
}
