import { Conflict, NotFound } from '@platform/kernel';
import type { AuthContext } from '../context';
import type { AccessTokenDoc } from '../data/collections';
import { checkExpiry } from '../routes/common';
import { newAccessToken, newId, sha256Hex } from './secrets';

/**
 * A new user access token (spec 2.6); the secret is answered once and stored as a hash. It carries whether the
 * session that made it had a second factor: organizations that require one hold tokens to the same rule.
 */
export async function createAccessToken(
  c: AuthContext,
  session: { userId: string; mfa?: boolean },
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
  const live = await c.collections.accessTokens.count({ userId, revokedAt: null, expiresAt: { $gt: now } });
  if (live >= c.config.ACCESS_TOKENS_PER_USER_LIMIT) {
    throw new Conflict(`At most ${c.config.ACCESS_TOKENS_PER_USER_LIMIT} live access tokens per user`, {
      error: 'TooManyAccessTokens',
    });
  }
  const token = newAccessToken();
  const doc: AccessTokenDoc = {
    _id: newId(),
    userId,
    name,
    tokenHash: sha256Hex(token),
    activeOrgSlug: null,
    mfa: session.mfa === true,
    createdAt: now,
    expiresAt,
    revokedAt: null,
  };
  await c.collections.accessTokens.insertOne(doc);
  return { doc, token };
}

/** Revokes the user's live access token `id`, if it still is one, and tells every edge; whether it did. */
async function revokeLive(c: AuthContext, userId: string, id: string): Promise<boolean> {
  const revoked = await c.collections.accessTokens.findOneAndUpdate(
    { _id: id, userId, revokedAt: null },
    { $set: { revokedAt: c.clock.now() } },
  );
  if (revoked) await c.events.credentialRevoked('access_token', revoked._id, revoked.tokenHash);
  return Boolean(revoked);
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
