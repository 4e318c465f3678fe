import { randomBytes } from 'node:crypto';
import type { AuthContext } from '../context';
import type { SessionDoc, UserDoc } from '../data/collections';
import { removalTime, revokedRemovalTime, sessionRemovalTime } from '../domain/removal-times';
import { newId, sha256Hex } from '../domain/secrets';
import { signSessionToken } from '../domain/sessions';
import { deleteGrant } from '../oidc/store-adapter';

/** What a password, signup or refresh answers: the anonymous session's fields plus a refresh token. */
export interface IssuedLogin {
  userId: string;
  sessionId: string;
  token: string;
  expiresAt: Date;
  refreshToken: string;
  refreshTokenExpiresAt: Date;
  user: UserDoc;
}

const wholeSeconds = (d: Date) => new Date(Math.floor(d.getTime() / 1000) * 1000);

const refreshTokenExpiry = (c: AuthContext, now: Date) =>
  new Date(now.getTime() + c.config.REFRESH_TOKENS_MAX_AGE * 1000);

async function newRefreshToken(c: AuthContext, session: SessionDoc, now: Date) {
  const refreshToken = `rt:${randomBytes(32).toString('base64url')}`;
  const expiresAt = refreshTokenExpiry(c, now);
  await c.collections.refreshTokens.insertOne({
    _id: sha256Hex(refreshToken),
    sessionId: session._id,
    userId: session.userId,
    createdAt: now,
    expiresAt,
    usedAt: null,
    removeAt: removalTime(c.config, expiresAt),
  });
  return { refreshToken, refreshTokenExpiresAt: expiresAt };
}

/** A new v2 session for a signed-in user: a session JWT (spec 2.5) and the first refresh token. */
export async function openUserSession(
  c: AuthContext,
  user: UserDoc,
  options: { mfa?: boolean } = {},
): Promise<IssuedLogin> {
  const createdAt = wholeSeconds(c.clock.now());
  const expiresAt = new Date(createdAt.getTime() + c.config.ACCESS_TOKENS_MAX_AGE * 1000);
  const session: SessionDoc = {
    _id: newId(),
    userId: user._id,
    clientId: c.config.PASSWORD_CLIENT_ID,
    activeOrgSlug: null,
    createdAt,
    expiresAt,
    revokedAt: null,
    mfa: options.mfa ?? false,
    // kept while its refresh token may renew it
    removeAt: sessionRemovalTime(c.config, expiresAt, refreshTokenExpiry(c, createdAt)),
  };
  const token = await signSessionToken(c, session, c.config.PASSWORD_SCOPE);
  await c.collections.sessions.insertOne(session);
  const refresh = await newRefreshToken(c, session, createdAt);
  return { userId: user._id, sessionId: session._id, token, expiresAt: session.expiresAt, ...refresh, user };
}

/**
 * Revokes a session and its refresh tokens, and tells every edge (credential.revoked). The store removes the
 * session RETENTION_GRACE_SECONDS later: its refresh tokens, the only way back to it, are gone already.
 */
export async function revokeSession(c: AuthContext, sessionId: string): Promise<boolean> {
  const now = c.clock.now();
  const { modified } = await c.collections.sessions.updateOne(
    { _id: sessionId, revokedAt: null },
    { $set: { revokedAt: now, removeAt: revokedRemovalTime(c.config, now) } },
  );
  await c.collections.refreshTokens.deleteMany({ sessionId });
  // An OpenID Connect session is its grant: its refresh tokens end with it.
  await deleteGrant(c.store, sessionId);
  if (modified > 0) await c.events.credentialRevoked('session', sessionId);
  return modified > 0;
}

/**
 * Exchanges a refresh token for a new session JWT and a new refresh token (rotation). The old one is
 * spent atomically; presenting a spent one again means it leaked, so the whole session (the token
 * family) is revoked. The session keeps its id; its expiry moves forward.
 */
export async function refreshSession(c: AuthContext, refreshToken: string): Promise<IssuedLogin | null> {
  const now = wholeSeconds(c.clock.now());
  const id = sha256Hex(refreshToken);
  const spent = await c.collections.refreshTokens.findOneAndUpdate(
    { _id: id, usedAt: null, expiresAt: { $gt: now } },
    { $set: { usedAt: now } },
  );
  if (!spent) {
    const known = await c.collections.refreshTokens.findOne({ _id: id });
    if (known?.usedAt) {
      c.logger.warn({ sessionId: known.sessionId }, 'refresh token reused: session revoked');
      await revokeSession(c, known.sessionId);
    }
    return null;
  }
  const session = await c.collections.sessions.findOne({ _id: spent.sessionId });
  const user = session ? await c.collections.users.findOne({ _id: session.userId }) : null;
  if (!session || session.revokedAt || !user || user.deletedAt) return null;
  const renewed: SessionDoc = {
    ...session,
    createdAt: now,
    expiresAt: new Date(now.getTime() + c.config.ACCESS_TOKENS_MAX_AGE * 1000),
  };
  const token = await signSessionToken(c, renewed, c.config.PASSWORD_SCOPE);
  // Only while it is not revoked: a revocation racing this refresh wins, and its removal time stays.
  const { matched } = await c.collections.sessions.updateOne(
    { _id: session._id, revokedAt: null },
    {
      $set: {
        expiresAt: renewed.expiresAt,
        removeAt: sessionRemovalTime(c.config, renewed.expiresAt, refreshTokenExpiry(c, now)),
      },
    },
  );
  if (matched === 0) return null;
  const refresh = await newRefreshToken(c, session, now);
  await c.collections.refreshTokens.deleteMany({ sessionId: session._id, expiresAt: { $lte: now } });
  return { userId: user._id, sessionId: session._id, token, expiresAt: renewed.expiresAt, ...refresh, user };
}
