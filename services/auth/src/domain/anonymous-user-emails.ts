import type { AuthContext } from '../context';

/** users changed per write */
const BATCH = 500;

/**
 * Removes the `email: null` that anonymous users made by earlier versions carry (those made now have no `email`), so
 * that they leave the sparse index on it: on the embedded engine, all of them under the null key would make every
 * update of them slower. A batch at a time, each write conditional, so instances doing it at once do no harm.
 * Answers how many users it changed.
 */
export async function removeNullEmailsOfAnonymousUsers(c: AuthContext): Promise<number> {
  const users = c.collections.users;
  let removed = 0;
  for (;;) {
    const batch = await users.find({ anonymous: true, email: { $exists: true } }, { limit: BATCH });
    if (batch.length === 0) return removed;
    const { modified } = await users.updateMany(
      { _id: { $in: batch.map((u) => u._id) }, anonymous: true, email: null },
      { $unset: { email: '' } },
    );
    removed += modified;
    // a batch another instance changed first is not read again; one nobody could change ends the pass
    if (batch.length < BATCH || modified === 0) return removed;
  }
}
