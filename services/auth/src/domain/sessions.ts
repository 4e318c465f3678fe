import { randomUUID } from 'node:crypto';
import jwt from 'jsonwebtoken';
import type { AuthContext } from '../context';
import type { SessionDoc, UserDoc } from '../data/collections';
import { sessionRemovalTime } from './removal-times';
import { newId } from './secrets';

export interface IssuedSession {
  userId: string;
  sessionId: string;
  token: string;
  expiresAt: Date;
}

/**
 * Signs a session JWT with the spec 2.5 claims. The key is a cached KeyObject (no PEM parsing per
 * login); the clock decides which key signs, so every instance switches at the same instant.
 */
export async function signSessionToken(
  c: Pick<AuthContext, 'keys' | 'config'>,
  session: SessionDoc,
  scope: string,
): Promise<string> {
  const key = await c.keys.signingKey();
  const iat = Math.floor(session.createdAt.getTime() / 1000);
  const exp = Math.floor(session.expiresAt.getTime() / 1000);
  const claims = {
    sub: session.userId,
    platformSessionId: session._id,
    jti: randomUUID(),
    iat,
    exp,
    scope,
    client_id: session.clientId,
    iss: c.config.JWT_ISSUER,
    aud: c.config.JWT_AUDIENCE,
  };
  return jwt.sign(claims, key.key, { algorithm: key.alg as jwt.Algorithm, keyid: key.kid });
}

/**
 * POST /v2/login/anonymous: a new anonymous user with a session of ACCESS_TOKENS_MAX_AGE. The session has no
 * refresh token: the store removes it a grace after its expiry, and the user goes once it has nothing left
 * (decision 0094, `abandoned-anonymous-users.ts`).
 */
export async function anonymousLogin(c: AuthContext): Promise<IssuedSession> {
  const now = c.clock.now();
  // Whole seconds, so the JWT's iat/exp and the stored session agree exactly.
  const createdAt = new Date(Math.floor(now.getTime() / 1000) * 1000);
  const user: UserDoc = { _id: newId(), anonymous: true, createdAt };
  const expiresAt = new Date(createdAt.getTime() + c.config.ACCESS_TOKENS_MAX_AGE * 1000);
  const session: SessionDoc = {
    _id: newId(),
    userId: user._id,
    clientId: c.config.ANONYMOUS_CLIENT_ID,
    activeOrgSlug: null,
    createdAt,
    expiresAt,
    revokedAt: null,
    removeAt: sessionRemovalTime(c.config, expiresAt),
  };
  // Sign first: no user is stored when no key can sign.
  const token = await signSessionToken(c, session, c.config.ANONYMOUS_SCOPE);
  await Promise.all([c.collections.users.insertOne(user), c.collections.sessions.insertOne(session)]);
  return { userId: user._id, sessionId: session._id, token, expiresAt: session.expiresAt };
}
