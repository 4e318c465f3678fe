import { DuplicateKeyError, type Filter } from '@platform/store';
import type { MfaDoc } from '../accounts/mfa';
import type { AuthContext } from '../context';
import type { UserDoc } from '../data/collections';
import { openSsoCollections } from '../sso/providers';

/** users examined per read */
const BATCH = 500;

/**
 * What keeps a user: anything that names it and is not removed by the store on its own. The first two are also
 * what someone else can give the user at any moment (an owner adding it by id); the rest only the user itself can
 * make, with a session or an access token, and an abandoned user has neither.
 */
function holders(c: AuthContext): {
  grantable: Array<(userId: string) => Promise<unknown>>;
  own: Array<(userId: string) => Promise<unknown>>;
} {
  const col = c.collections;
  const sso = openSsoCollections(c.store);
  const mfa = c.store.collection<MfaDoc>('mfa');
  return {
    grantable: [
      (userId) => col.memberships.findOne({ userId }),
      (userId) => col.workspaceMembers.findOne({ userId }),
    ],
    own: [
      // any session, expired ones included: the store removes it a grace after its last use (0094)
      (userId) => col.sessions.findOne({ userId }),
      (userId) => col.accessTokens.findOne({ userId }),
      (userId) => col.accounts.findOne({ userId }),
      // what it made stays its own in listings (`createdBy`), even once it left the organization
      (userId) => col.orgs.findOne({ createdBy: userId }),
      (userId) => col.workspaces.findOne({ createdBy: userId }),
      (userId) => col.orgApiKeys.findOne({ createdBy: userId }),
      (userId) => col.workspaceApiKeys.findOne({ createdBy: userId }),
      (userId) => sso.identities.findOne({ userId }),
      (userId) => mfa.findOne({ _id: userId }),
    ],
  };
}

/** Whether anything still names the user (checked one by one, stopping at the first). */
async function holdsAnything(checks: Array<(userId: string) => Promise<unknown>>, userId: string) {
  for (const check of checks) if (await check(userId)) return true;
  return false;
}

/**
 * Removes the anonymous users nobody can reach any more (decision 0094): made more than ACCESS_TOKENS_MAX_AGE +
 * RETENTION_GRACE_SECONDS ago (so past their own session's lifetime and removal, and never one being made right
 * now: a login writes its user and its session at once), never made platform administrators, with no session, no
 * access token, no account (a signup turns the user itself into the account, 0058), no membership of an
 * organization or a workspace, nothing they created, no external identity and no second factor.
 *
 * Such a user cannot act: signing up or logging in as it takes a live session of its own. The delete is
 * conditional on the user's own document (still anonymous, still old, still no administrator), and no transaction
 * spans collections, so what someone else could have given it meanwhile (a membership, by id) is checked again
 * after the delete, and then the user comes back as it was. Safe on several instances at once. Answers how many
 * users it removed.
 */
export async function removeAbandonedAnonymousUsers(c: AuthContext): Promise<number> {
  const { config } = c;
  const madeBefore = new Date(
    c.clock.now().getTime() - (config.ACCESS_TOKENS_MAX_AGE + config.RETENTION_GRACE_SECONDS) * 1000,
  );
  const abandonable: Filter = {
    anonymous: true,
    createdAt: { $lt: madeBefore },
    platformAdmin: { $ne: true },
  };
  const { grantable, own } = holders(c);
  let removed = 0;
  let after = '';
  for (;;) {
    const page = await c.collections.users.find(
      { ...abandonable, _id: { $gt: after } },
      { sort: { _id: 1 }, limit: BATCH },
    );
    for (const user of page) {
      if ((await holdsAnything(grantable, user._id)) || (await holdsAnything(own, user._id))) continue;
      if (await removeUnlessNamed(c, user, abandonable, grantable)) removed++;
    }
    if (page.length < BATCH) return removed;
    after = page[page.length - 1]!._id;
  }
}

async function removeUnlessNamed(
  c: AuthContext,
  user: UserDoc,
  abandonable: Filter,
  grantable: Array<(userId: string) => Promise<unknown>>,
): Promise<boolean> {
  const deleted = await c.collections.users.deleteOne({ ...abandonable, _id: user._id });
  if (deleted === 0) return false;
  if (await holdsAnything(grantable, user._id)) {
    // someone gave it a place between the checks and the delete: it is not abandoned after all
    await c.collections.users.insertOne(user).catch((err) => {
      if (!(err instanceof DuplicateKeyError)) throw err;
    });
    c.logger.info({ userId: user._id }, 'an anonymous user given a membership while being removed was kept');
    return false;
  }
  // its places document (access tokens it once held) names nobody now
  await c.collections.accessTokenPlaces.deleteOne({ _id: user._id });
  return true;
}
