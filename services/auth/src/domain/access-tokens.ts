import { NotFound, Unauthenticated } from '@platform/kernel';
import type { AuthContext } from '../context';
import type { AccessTokenDoc, SessionDoc } from '../data/collections';
import { checkExpiry } from '../routes/common';
import { releaseAccessTokenPlace, takeAccessTokenPlace } from './access-token-places';
import { userIsLive } from './liveness';
import { removalTime, revokedRemovalTime } from './removal-times';
import { newAccessToken, newId, sha256Hex } from './secrets';

/**
 * A new user access token (spec 2.6); the secret is answered once and stored as a hash. It carries whether the
 * session that made it had a second factor: organizations that require one hold tokens to the same rule. It
 * takes one of the user's ACCESS_TOKENS_PER_USER_LIMIT places first (409 `TooManyAccessTokens` when none is left).
 */
export async function createAccessToken(
  c: AuthContext,
  session: Pick<SessionDoc, '_id' | 'userId' | 'mfa'>,
  name: string,
  expiresAtIso: string,
): Promise<{ doc: AccessTokenDoc; token: string }> {
  const { userId } = session;
  const now = c.clock.now();
  const expiresAt = checkExpiry(
    'expiresAt',
    expiresAtIso,
    now,
    c.config.ACCESS_TOKEN_MAX_LIFETIME_DAYS * 86_400_000,
  )!;
  const tokenId = newId();
  await takeAccessTokenPlace(c, userId, { tokenId, expiresAt });
  const token = newAccessToken();
  const doc: AccessTokenDoc = {
    _id: tokenId,
    userId,
    name,
    tokenHash: sha256Hex(token),
    activeOrgSlug: null,
    mfa: session.mfa === true,
    createdAt: now,
    expiresAt,
    revokedAt: null,
    removeAt: removalTime(c.config, expiresAt),
  };
  try {
    await c.collections.accessTokens.insertOne(doc);
  } catch (err) {
    await releaseAccessTokenPlace(c, userId, tokenId);
    throw err;
  }
  // the account was deleted (decision 0099), or the session making it revoked (a new password signs out everywhere
  // and revokes the tokens it finds, a sign-out), while this ran: no token outlives them
  const maker = await c.collections.sessions.findOne({ _id: session._id });
  if (!(await userIsLive(c, userId)) || !maker || maker.revokedAt !== null) {
    await revokeLive(c, userId, tokenId);
    throw new Unauthenticated();
  }
  return { doc, token };
}

/**
 * Revokes the user's live access token `id`, if it still is one, and tells every edge; whether it did. The store
 * removes it RETENTION_GRACE_SECONDS later; its place is given back now (an expired token's place lapses by itself).
 */
async function revokeLive(c: AuthContext, userId: string, id: string): Promise<boolean> {
  const now = c.clock.now();
  const revoked = await c.collections.accessTokens.findOneAndUpdate(
    { _id: id, userId, revokedAt: null },
    { $set: { revokedAt: now, removeAt: revokedRemovalTime(c.config, now) } },
  );
  if (!revoked) return false;
  // the edges first: a place not given back (the store failing now) only holds the limit until the expiry
  await c.events.credentialRevoked('access_token', revoked._id, revoked.tokenHash);
  await releaseAccessTokenPlace(c, userId, id);
  return true;
}

/** Revokes one of the user's live access tokens and tells every edge. */
export async function revokeAccessToken(c: AuthContext, userId: string, id: string): Promise<void> {
  if (!(await revokeLive(c, userId, id)))
    throw new NotFound(`No access token ${id}`, { error: 'AccessTokenNotFound' });
}

/** Revokes every live access token of the user (a password reset: whoever held the account may have made some). */
export async function revokeUserAccessTokens(c: AuthContext, userId: string): Promise<void> {
  for (const token of await c.collections.accessTokens.find({ userId, revokedAt: null }))
    await revokeLive(c, userId, token._id);
}
