import type { Collection, Doc } from '@platform/store';
import { counterRemovalTime } from '../accounts/store-rate-limiter';
import type { AuthContext } from '../context';
import { apiKeyRemovalTime, olderSessionRemovalTime, removalTime, revokedRemovalTime } from './removal-times';

/** records dated per read */
const BATCH = 500;

/**
 * Dates, one by one, the records of a collection that carry no `removeAt` (written before decision 0094, or by an
 * instance of an earlier version during an upgrade): a TTL index does nothing for a record without its field.
 * `due` narrows them to those that may be given one (an API key that never expires has none). Each write is
 * conditional, so instances doing this at once date each record once. Answers how many it dated.
 */
async function dateUndated<T extends Doc & { removeAt?: Date }>(
  collection: Collection<T>,
  removalOf: (doc: T) => Date | Promise<Date>,
  due: Record<string, unknown> = {},
): Promise<number> {
  const undated = { removeAt: { $exists: false }, ...due };
  let dated = 0;
  for (;;) {
    const docs = await collection.find(undated, { limit: BATCH });
    let progress = 0;
    for (const doc of docs) {
      const { modified } = await collection.updateOne(
        { _id: doc._id, ...undated },
        { $set: { removeAt: await removalOf(doc) } },
      );
      progress += modified;
    }
    dated += progress;
    // a batch another instance dated first is not read again; one nobody could date ends the pass
    if (docs.length < BATCH || progress === 0) return dated;
  }
}

/** API keys that expire or were revoked: the ones with a removal time */
const endingKeys = { $or: [{ expiresAt: { $ne: null } }, { revokedAt: { $ne: null } }] };

export interface DatedRecords {
  sessions: number;
  accessTokens: number;
  refreshTokens: number;
  accountTokens: number;
  rateCounters: number;
  orgApiKeys: number;
  workspaceApiKeys: number;
}

/**
 * Gives every older session, access token, refresh token, mailed link, limiter counter, and API key that expires or
 * was revoked, the removal time it would have been given when it was last written (decision 0094), so the store's TTL
 * sweep sees it. A session's refresh window is read from its latest refresh token; an OpenID Connect session's is
 * counted from now.
 */
export async function giveRemovalTimesToOlderRecords(c: AuthContext): Promise<DatedRecords> {
  const { collections: col, config } = c;
  const now = c.clock.now();
  const latestRefreshExpiry = async (sessionId: string) =>
    (await col.refreshTokens.find({ sessionId }, { sort: { expiresAt: -1 }, limit: 1 }))[0]?.expiresAt ??
    null;
  return {
    sessions: await dateUndated(col.sessions, async (s) =>
      olderSessionRemovalTime(config, s, await latestRefreshExpiry(s._id), now),
    ),
    accessTokens: await dateUndated(col.accessTokens, (t) =>
      t.revokedAt ? revokedRemovalTime(config, t.revokedAt) : removalTime(config, t.expiresAt),
    ),
    refreshTokens: await dateUndated(col.refreshTokens, (t) => removalTime(config, t.expiresAt)),
    accountTokens: await dateUndated(col.accountTokens, (t) => removalTime(config, t.expiresAt)),
    rateCounters: await dateUndated(col.rateCounters, (r) => counterRemovalTime(r.expire, now.getTime())),
    orgApiKeys: await dateUndated(col.orgApiKeys, (k) => apiKeyRemovalTime(config, k)!, endingKeys),
    workspaceApiKeys: await dateUndated(
      col.workspaceApiKeys,
      (k) => apiKeyRemovalTime(config, k)!,
      endingKeys,
    ),
  };
}
