import { API_SCOPE } from '@platform/contracts';
import type { Clock } from '@platform/kernel';
import jwt from 'jsonwebtoken';
import { LRUCache } from 'lru-cache';
import { credentialHash } from './credential-hash';
import type { SigningKeys } from './signing-keys';

/** What the edge keeps of a verified session JWT. */
export interface VerifiedSession {
  userId: string;
  sessionId: string;
  kid: string;
  /** expiry, epoch seconds */
  exp: number;
  scope: string;
  clientId: string | null;
  /**
   * whether it may call the platform API: false for an application's access token (the provider's `at+jwt`)
   * whose `scope` lacks `api`, which the edge accepts at userinfo only (decision 0109)
   */
  api: boolean;
}

export interface SessionJwtOptions {
  keys: SigningKeys;
  clock: Clock;
  issuer: string;
  audience: string;
  /** the one accepted algorithm (RS256 unless auth is configured otherwise) */
  algorithm: jwt.Algorithm;
  clockSkewSeconds: number;
  cacheMaxEntries: number;
}

/** RFC 9068's `typ` of a JWT access token: the OpenID provider's tokens, never the platform's own sessions. */
const isAccessTokenTyp = (typ: unknown) => typeof typ === 'string' && /^(application\/)?at\+jwt$/i.test(typ);

const JWT_SHAPE = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/;

/** A compact JWS in three base64url segments (shape only). */
export const looksLikeJwt = (token: string): boolean => token.length < 16_384 && JWT_SHAPE.test(token);

interface JwtHeader {
  alg?: unknown;
  kid?: unknown;
  typ?: unknown;
}

/**
 * Verifies session JWTs: one algorithm only (JWT_ALGORITHM, RS256 by default), with a key from auth's JWKS chosen by `kid`; `iss`, `aud`, `exp`
 * (and `nbf`) checked with at most JWT_CLOCK_SKEW_SECONDS of skew. A verified token is remembered by
 * the sha256 of its text, so verifying it again is one hash and one map lookup; a remembered entry still
 * expires at `exp`, and is forgotten when its key is removed.
 */
export class SessionJwtVerifier {
  private readonly cache: LRUCache<string, VerifiedSession>;

  constructor(private readonly options: SessionJwtOptions) {
    this.cache = new LRUCache({ max: options.cacheMaxEntries });
  }

  /** The verified session, or null for any invalid token (bad shape, algorithm, key, signature or claims). */
  async verify(token: string): Promise<VerifiedSession | null> {
    const hash = credentialHash(token);
    const nowSeconds = this.options.clock.now().getTime() / 1000;
    const cached = this.cache.get(hash);
    if (cached) {
      if (cached.exp + this.options.clockSkewSeconds > nowSeconds) return cached;
      this.cache.delete(hash);
      return null;
    }
    if (!looksLikeJwt(token)) return null;
    const header = decodeHeader(token);
    // Refuse before any key lookup: `none`, HS256 (signed with the public key as secret) and anything else.
    if (
      !header ||
      header.alg !== this.options.algorithm ||
      typeof header.kid !== 'string' ||
      header.kid.length === 0
    )
      return null;
    let key = this.options.keys.get(header.kid);
    if (!key) key = await this.options.keys.resolveUnknown(header.kid);
    if (!key) return null;
    let claims: jwt.JwtPayload;
    try {
      claims = jwt.verify(token, key, {
        algorithms: [this.options.algorithm],
        issuer: this.options.issuer,
        audience: this.options.audience,
        clockTolerance: this.options.clockSkewSeconds,
        clockTimestamp: Math.floor(this.options.clock.now().getTime() / 1000),
        complete: false,
      }) as jwt.JwtPayload;
    } catch {
      return null;
    }
    if (typeof claims.sub !== 'string' || !claims.sub) return null;
    if (typeof claims.platformSessionId !== 'string' || !claims.platformSessionId) return null;
    if (typeof claims.exp !== 'number') return null;
    const scope = typeof claims.scope === 'string' ? claims.scope : '';
    const session: VerifiedSession = {
      userId: claims.sub,
      sessionId: claims.platformSessionId,
      kid: header.kid,
      exp: claims.exp,
      scope,
      clientId: typeof claims.client_id === 'string' ? claims.client_id : null,
      api: !isAccessTokenTyp(header.typ) || scope.split(' ').includes(API_SCOPE),
    };
    // Still verifying its key the moment it is cached: a removal that raced the verification wins.
    if (this.options.keys.get(header.kid) === key) this.cache.set(hash, session);
    return session;
  }

  /** Forgets verified tokens signed by removed keys. */
  forgetKeys(kids: string[]): void {
    const gone = new Set(kids);
    for (const [hash, session] of this.cache.entries()) if (gone.has(session.kid)) this.cache.delete(hash);
  }

  /** Forgets verified tokens of a session (revoked). */
  forgetSession(sessionId: string): void {
    for (const [hash, session] of this.cache.entries())
      if (session.sessionId === sessionId) this.cache.delete(hash);
  }

  /** Forgets verified tokens of a user (their account was deleted). */
  forgetUser(userId: string): void {
    for (const [hash, session] of this.cache.entries())
      if (session.userId === userId) this.cache.delete(hash);
  }

  get size(): number {
    return this.cache.size;
  }
}

function decodeHeader(token: string): JwtHeader | null {
  try {
    const header = JSON.parse(Buffer.from(token.slice(0, token.indexOf('.')), 'base64url').toString('utf8'));
    return header && typeof header === 'object' ? (header as JwtHeader) : null;
  } catch {
    return null;
  }
}
