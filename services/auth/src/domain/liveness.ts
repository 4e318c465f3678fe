import { type Collection, type Doc, DuplicateKeyError } from '@platform/store';
import type { AuthContext } from '../context';

/**
 * Check-after-write for what a deletion sweeps (decision 0099). No transaction spans collections, so a route that
 * read an organization, a workspace or a user a moment ago and then writes something naming it (a membership, a
 * key) looks again after its write: either its write came first, and the deletion's sweep, which runs after the
 * deletion's own conditional write, finds it; or the deletion came first, and the look finds it, and the route
 * takes its write back. Nothing outlives what it belongs to either way.
 */
export async function orgExists(c: AuthContext, orgId: string): Promise<boolean> {
  return (await c.collections.orgs.findOne({ _id: orgId })) !== null;
}

export async function workspaceExists(c: AuthContext, workspaceId: string): Promise<boolean> {
  return (await c.collections.workspaces.findOne({ _id: workspaceId })) !== null;
}

/** The user exists and has not asked for its account to be deleted. */
export async function userIsLive(c: AuthContext, userId: string): Promise<boolean> {
  const user = await c.collections.users.findOne({ _id: userId });
  return user !== null && !user.deletedAt;
}

/**
 * `doc`, taken away by a write now undone, put back (one written again meanwhile stands for it), unless what it
 * belongs to went meanwhile (`stillThere`): its deletion's sweep may be done already, so it is taken away again.
 */
export async function putBackUnlessGone<T extends Doc>(
  collection: Collection<T>,
  doc: T,
  stillThere: () => Promise<boolean>,
): Promise<void> {
  await collection.insertOne(doc).catch((err) => {
    if (!(err instanceof DuplicateKeyError)) throw err;
  });
  if (!(await stillThere())) await collection.deleteOne({ _id: doc._id });
}
