import { Conflict } from '@platform/kernel';
import { DuplicateKeyError, updateWithRevision } from '@platform/store';
import type { AuthContext } from '../context';

/**
 * ACCESS_TOKENS_PER_USER_LIMIT held in one write (decision 0090): the user's places document lists the live
 * tokens' ids and expiries, and a creation adds its token with `updateWithRevision`, so racing creations, on
 * any number of instances sharing the store, see each other's places. Tokens expire without a write, so each
 * change first drops the places past their expiry.
 */
export async function takeAccessTokenPlace(
  c: AuthContext,
  userId: string,
  place: { tokenId: string; expiresAt: Date },
): Promise<void> {
  const limit = c.config.ACCESS_TOKENS_PER_USER_LIMIT;
  const take = () =>
    updateWithRevision(c.collections.accessTokenPlaces, { _id: userId }, (current) => {
      const now = c.clock.now().getTime();
      const live = current.places.filter((p) => p.expiresAt.getTime() > now);
      if (live.length >= limit) {
        throw new Conflict(`At most ${limit} live access tokens per user`, { error: 'TooManyAccessTokens' });
      }
      return { $set: { places: [...live, place] } };
    });
  if (await take()) return;
  await countExistingTokens(c, userId);
  if (!(await take())) throw new Error(`the access-token places of user ${userId} vanished`);
}

/** Gives back the place of one token (revoked, or never stored); nothing when it holds none. */
export async function releaseAccessTokenPlace(
  c: AuthContext,
  userId: string,
  tokenId: string,
): Promise<void> {
  await updateWithRevision(c.collections.accessTokenPlaces, { _id: userId }, (current) =>
    current.places.some((p) => p.tokenId === tokenId)
      ? { $set: { places: current.places.filter((p) => p.tokenId !== tokenId) } }
      : null,
  );
}

/**
 * A user's first creation since places were kept (tokens made before have none): their places document is
 * made from the live tokens they hold. When several creations race here, one insert wins and the others go
 * on with its document.
 */
async function countExistingTokens(c: AuthContext, userId: string): Promise<void> {
  const tokens = await c.collections.accessTokens.find({
    userId,
    revokedAt: null,
    expiresAt: { $gt: c.clock.now() },
  });
  try {
    await c.collections.accessTokenPlaces.insertOne({
      _id: userId,
      places: tokens.map((t) => ({ tokenId: t._id, expiresAt: t.expiresAt })),
    });
  } catch (err) {
    if (!(err instanceof DuplicateKeyError)) throw err;
  }
}
