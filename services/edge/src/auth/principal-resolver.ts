import type { CredentialRevokedEvent, MembershipChangedEvent, Principal } from '@platform/contracts';
import {
  type Clock,
  deadlineSignal,
  type Logger,
  OutageLog,
  sealPrincipal,
  Unavailable,
} from '@platform/kernel';
import { LRUCache } from 'lru-cache';
import { z } from 'zod';
import { credentialHash } from './credential-hash';
import type { VerifiedSession } from './session-jwt';

/** A credential to turn into a principal (docs/internal-api.md "Principal resolution"). */
export type CredentialInput =
  | { kind: 'session'; session: VerifiedSession }
  | { kind: 'access_token'; token: string }
  | { kind: 'api_key'; key: string };

/** A principal ready to hand to a service: the seal is built once per cache entry and renewed as it ages. */
export interface ResolvedPrincipal {
  principal: Principal;
  userId: string | null;
  sealed: string;
}

interface CacheEntry extends ResolvedPrincipal {
  /** the credential's own expiry (ms), re-checked on every hit; null when it has none */
  expiresAt: number | null;
  /** end of this entry's life in the cache (ms) */
  cachedUntil: number;
  /** sha256 of the credential as sent (sessions: of the session id) */
  hash: string;
  sealedAt: number;
  /** when auth gave this answer (ms) */
  checkedAt: number;
}

export interface PrincipalResolverOptions {
  authUrl: string;
  secret: string;
  clock: Clock;
  logger: Logger;
  timeoutMs: number;
  maxEntries: number;
  maxTtlSeconds: number;
  /** 'auth': sessions are introspected like other credentials; 'jwt': built from the verified JWT alone */
  sessionSource: 'auth' | 'jwt';
  /** the HTTP client for auth (the edge passes kernel's `serviceFetch`); default: global fetch */
  fetch?: typeof fetch;
}

/** Seals older than this are renewed (services accept seals up to 300 s old). */
const RESEAL_AFTER_MS = 60_000;

/** While the bus that brings revocations is away, an answer older than this is asked of auth again. */
export const TRUST_WITHOUT_BUS_MS = 5_000;

const principalAnswer = z.object({
  principal: z.looseObject({
    credential: z.looseObject({ kind: z.string(), id: z.string() }),
    session: z.looseObject({
      id: z.string().nullable(),
      org: z.looseObject({ slug: z.string() }).nullable(),
    }),
    user: z.looseObject({ id: z.string().nullable() }),
    run: z.looseObject({}),
  }),
  expiresAt: z.string().nullable(),
  cacheTtlSeconds: z.number().nonnegative(),
});

/**
 * Resolves credentials to principals through `POST {AUTH_URL}/internal/principal`, with a bounded
 * cache keyed by sha256(credential) + path org that holds only valid answers, for at most the answer's
 * `cacheTtlSeconds` (≤ PRINCIPAL_CACHE_MAX_TTL_SECONDS), re-checking the credential's expiry on every
 * hit. Concurrent misses of one key share one call. Revocation and membership events drop entries; a
 * lookup that was in flight while an event arrived answers the requests already waiting on it, is not
 * cached, and is joined by no later request (that one asks auth again).
 *
 * An answer for a path organization the credential holds no context in (not a member, another
 * organization's key) is not cached: the path is the client's to choose, and one credential naming
 * a new organization in each request would otherwise fill the whole cache, pushing out every other
 * caller's answers. Answers whose time is up are swept once per longest cache life, so a burst of
 * callers does not leave its entries in memory for good.
 *
 * The events come on the bus: while it is away (`busAway`), a revocation would go unheard, so an answer is
 * trusted for TRUST_WITHOUT_BUS_MS only, then asked of auth again (auth unreachable too: 503, never the old
 * answer). A bus that reconnects (`clear`) lost what was published meanwhile: every answer goes, once. A bus that
 * answers again without reconnecting (`busBack`: it was slow, or the edge was) lost nothing: the answers stay.
 */
export class PrincipalResolver {
  private readonly cache: LRUCache<string, CacheEntry>;
  private readonly inFlight = new Map<string, Promise<CacheEntry | null>>();
  private generation = 0;
  private readonly endpoint: string;
  private nextSweep = 0;
  private busIsAway = false;
  /** auth unreachable or failing: one line when it starts, a reminder a minute, one when it ends (not one per request) */
  private readonly authOutage: OutageLog;

  constructor(private readonly options: PrincipalResolverOptions) {
    this.cache = new LRUCache({ max: options.maxEntries });
    this.endpoint = new URL('/internal/principal', options.authUrl).toString();
    this.authOutage = new OutageLog(options, {
      starts:
        'principal lookups fail: requests whose credential is not cached answer 503 AuthUnavailable until auth answers',
      lasts: 'principal lookups still fail',
      ends: 'principal lookups answer again',
    });
  }

  /** The principal, or null when auth says the credential is not valid. Throws Unavailable when auth cannot answer. */
  async resolve(credential: CredentialInput, orgSlug: string | null): Promise<ResolvedPrincipal | null> {
    const hash = this.hashOf(credential);
    const key = orgSlug ? `${hash}|${orgSlug}` : hash;
    const now = this.options.clock.now().getTime();
    if (now >= this.nextSweep) this.sweep(now);
    const hit = this.cache.get(key);
    if (hit) {
      if (
        hit.cachedUntil > now &&
        // an answer given after now: the clock stepped back, and cachedUntil no longer bounds its life
        hit.checkedAt <= now &&
        (hit.expiresAt === null || hit.expiresAt > now) &&
        (!this.busIsAway || now - hit.checkedAt < TRUST_WITHOUT_BUS_MS)
      ) {
        if (now - hit.sealedAt > RESEAL_AFTER_MS) this.reseal(hit, now);
        return hit;
      }
      this.cache.delete(key);
    }
    const joined = this.inFlight.get(key);
    if (joined) return joined;
    const generation = this.generation;
    const pending = this.lookup(credential, orgSlug, hash).then((entry) => {
      if (entry && generation === this.generation && heldIn(entry, orgSlug)) this.cache.set(key, entry);
      return entry;
    });
    pending
      .finally(() => {
        if (this.inFlight.get(key) === pending) this.inFlight.delete(key);
      })
      .catch(() => undefined);
    this.inFlight.set(key, pending);
    return pending;
  }

  /**
   * `auth.credential.revoked`: drop answers for that credential hash, (sessions) that session id, or (kind `user`, an
   * account deleted) every credential of that user.
   */
  onCredentialRevoked(event: CredentialRevokedEvent): void {
    this.invalidate();
    for (const [key, entry] of this.cache.entries()) {
      const c = entry.principal.credential;
      if (
        (event.credentialHash && entry.hash === event.credentialHash) ||
        (c.kind === event.kind && c.id === event.id) ||
        (event.kind === 'session' && entry.principal.session.id === event.id) ||
        (event.kind === 'user' && entry.userId === event.id)
      ) {
        this.cache.delete(key);
      }
    }
  }

  /** `auth.membership.changed`: drop answers of that user, or of every member of the organization. */
  onMembershipChanged(event: MembershipChangedEvent): void {
    this.invalidate();
    for (const [key, entry] of this.cache.entries()) {
      const p = entry.principal;
      const affected = event.userId
        ? p.user.id === event.userId
        : // only the active organization's role is in a principal: other memberships cannot be stale in it
          p.session.org?.slug === event.orgSlug;
      if (affected) this.cache.delete(key);
    }
  }

  /**
   * Drops every answer for the credential behind `resolved` (whatever organization path it was asked for), and lets
   * no lookup in flight be cached: called once auth has answered a change that credential made itself, so that its
   * own next request sees the change without waiting for the bus's event (read-your-writes).
   */
  forget(resolved: ResolvedPrincipal): void {
    this.generation++;
    const hash = (resolved as Partial<CacheEntry>).hash;
    if (hash === undefined) return;
    for (const [key, entry] of this.cache.entries()) if (entry.hash === hash) this.cache.delete(key);
    // its lookups begun before the change are not joined by its next requests either
    for (const key of this.inFlight.keys())
      if (key === hash || key.startsWith(`${hash}|`)) this.inFlight.delete(key);
  }

  /** After the bus reconnects, anything may have been missed: forget every answer. The bus is there again. */
  clear(): void {
    this.invalidate();
    this.cache.clear();
    this.busIsAway = false;
  }

  /** The bus does not answer: revocations may go unheard, answers are trusted for TRUST_WITHOUT_BUS_MS only. */
  busAway(): void {
    if (this.busIsAway) return;
    this.busIsAway = true;
    this.options.logger.warn(
      { recheckAfterMs: TRUST_WITHOUT_BUS_MS },
      'bus away: cached principals are checked with auth again after a few seconds',
    );
  }

  /**
   * The bus answers again without having reconnected (a reconnection clears first): it was slow, or the edge was, and
   * delivered everything in order meanwhile, so the answers stay and are trusted for their whole cache life again.
   */
  busBack(): void {
    if (!this.busIsAway) return;
    this.busIsAway = false;
    this.options.logger.info('bus back: cached principals trusted again');
  }

  get size(): number {
    return this.cache.size;
  }

  /**
   * Something changed at auth: no lookup in flight may be cached, and none may answer a request that comes after
   * (it began before the change, and auth may have answered it as things were). Its own waiters still get it.
   */
  private invalidate(): void {
    this.generation++;
    this.inFlight.clear();
  }

  /** forgets the answers whose cache life or credential has ended (at most once per longest cache life) */
  private sweep(now: number): void {
    this.nextSweep = now + Math.max(1_000, this.options.maxTtlSeconds * 1000);
    for (const [key, entry] of this.cache.entries())
      if (entry.cachedUntil <= now || (entry.expiresAt !== null && entry.expiresAt <= now))
        this.cache.delete(key);
  }

  private hashOf(credential: CredentialInput): string {
    switch (credential.kind) {
      case 'session':
        return `session:${credential.session.sessionId}:${credential.session.userId}`;
      case 'access_token':
        return credentialHash(credential.token);
      case 'api_key':
        return credentialHash(credential.key);
    }
  }

  private reseal(entry: CacheEntry, now: number): void {
    entry.sealed = sealPrincipal(entry.principal, this.options.secret, this.options.clock);
    entry.sealedAt = now;
  }

  private entryOf(principal: Principal, hash: string, expiresAt: number | null, ttlMs: number): CacheEntry {
    const now = this.options.clock.now().getTime();
    return {
      principal,
      userId: principal.user.id ?? null,
      sealed: sealPrincipal(principal, this.options.secret, this.options.clock),
      sealedAt: now,
      checkedAt: now,
      expiresAt,
      cachedUntil: now + ttlMs,
      hash,
    };
  }

  private async lookup(
    credential: CredentialInput,
    orgSlug: string | null,
    hash: string,
  ): Promise<CacheEntry | null> {
    if (credential.kind === 'session' && this.options.sessionSource === 'jwt') {
      const s = credential.session;
      return this.entryOf(localSessionPrincipal(s), hash, s.exp * 1000, this.options.maxTtlSeconds * 1000);
    }
    const body = {
      credential:
        credential.kind === 'session'
          ? { kind: 'session', userId: credential.session.userId, sessionId: credential.session.sessionId }
          : credential.kind === 'access_token'
            ? { kind: 'access_token', token: credential.token }
            : { kind: 'api_key', key: credential.key },
      ...(orgSlug ? { orgSlug } : {}),
    };
    // a deadline, not AbortSignal.timeout: an answer that arrived while the edge's own process stalled past it counts
    const deadline = deadlineSignal(
      this.options.timeoutMs,
      () => new Error(`auth did not answer the principal lookup within ${this.options.timeoutMs} ms`),
    );
    let answer: unknown;
    try {
      let response: Response;
      try {
        response = await (this.options.fetch ?? fetch)(this.endpoint, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-platform-internal-secret': this.options.secret },
          body: JSON.stringify(body),
          signal: deadline.signal,
        });
      } catch (err) {
        await this.authRefused(err);
        throw new Unavailable('Credentials cannot be checked right now', { error: 'AuthUnavailable' });
      }
      if (response.status === 401) {
        await response.body?.cancel();
        this.authOutage.ended();
        return null;
      }
      if (response.status !== 200) {
        await response.body?.cancel();
        await this.authRefused(
          new Error(`auth answered the principal lookup with status ${response.status}`),
          { status: response.status },
        );
        throw new Unavailable('Credentials cannot be checked right now', { error: 'AuthUnavailable' });
      }
      answer = await response.json().catch(() => null);
    } finally {
      deadline.end();
    }
    const parsed = principalAnswer.safeParse(answer);
    if (!parsed.success) {
      this.options.logger.error(
        { issues: parsed.error.issues },
        'principal lookup answered a malformed body',
      );
      throw new Unavailable('Credentials cannot be checked right now', { error: 'AuthUnavailable' });
    }
    this.authOutage.ended();
    const { expiresAt, cacheTtlSeconds } = parsed.data;
    const principal = parsed.data.principal as unknown as Principal;
    const expiry = expiresAt ? Date.parse(expiresAt) : null;
    const ttl = Math.min(cacheTtlSeconds, this.options.maxTtlSeconds) * 1000;
    return this.entryOf(principal, hash, expiry !== null && Number.isNaN(expiry) ? 0 : expiry, ttl);
  }

  /** A lookup auth could not answer: logged when the outage starts, then at most once a minute. */
  private async authRefused(err: unknown, fields: object = {}): Promise<void> {
    if (!this.authOutage.refused(err, fields)) await this.authOutage.remind();
  }
}

/** Whether an answer is for the organization the path named (or none was named): only those are cached. */
const heldIn = (entry: CacheEntry, orgSlug: string | null): boolean =>
  orgSlug === null || entry.principal.session.org?.slug === orgSlug;

/** A session's principal from its verified JWT alone (SESSION_PRINCIPAL_SOURCE=jwt): no organization. */
export function localSessionPrincipal(s: VerifiedSession): Principal {
  return {
    credential: { kind: 'session', id: s.sessionId },
    session: { id: s.sessionId, org: null },
    user: { id: s.userId, email: null, anonymous: false, role: null },
    run: {
      permissions: {},
      scopes: s.scope ? s.scope.split(' ') : [],
      correlationId: s.sessionId,
      sourceWorkspaceId: null,
    },
  };
}
