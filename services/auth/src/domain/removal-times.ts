import type { Clock } from '@platform/kernel';
import type { AuthConfig } from '../config';
import type { SessionDoc } from '../data/collections';

/**
 * When the store may remove a record (decision 0094). Every collection of auth that grows with traffic has a TTL
 * index on `removeAt` with `expireAfterSeconds: 0` (decision 0088: a setting changed later applies to new records
 * and never conflicts with the index MongoDB has). A record is dated when it is written and again when it stops
 * being usable, always from the injected clock, which is the wall clock the store sweeps by in production.
 */
type Retention = Pick<AuthConfig, 'RETENTION_GRACE_SECONDS'>;

const later = (a: Date, b: Date) => (a.getTime() >= b.getTime() ? a : b);

/** A record that can no longer be used after `usableUntil` goes RETENTION_GRACE_SECONDS later. */
export const removalTime = (config: Retention, usableUntil: Date): Date =>
  new Date(usableUntil.getTime() + config.RETENTION_GRACE_SECONDS * 1000);

/**
 * A session is usable until its JWT expires, and a refresh may renew it until its refresh token expires: it goes
 * a grace after the later of the two (a revoked one a grace after its revocation, see `revokedRemovalTime`).
 */
export const sessionRemovalTime = (config: Retention, expiresAt: Date, refreshableUntil?: Date): Date =>
  removalTime(config, refreshableUntil ? later(expiresAt, refreshableUntil) : expiresAt);

/** Revoked at `now`: kept a grace longer, as an expired one would be. */
export const revokedRemovalTime = (config: Retention, now: Date): Date => removalTime(config, now);

/**
 * An organization or workspace API key goes a grace after its expiry (listed until then, so that its people see why
 * it stopped working and that it is gone) or its revocation; one that never expires stays until it is revoked.
 */
export const apiKeyRemovalTime = (
  config: Retention,
  key: { expiresAt: Date | null; revokedAt: Date | null },
): Date | undefined => {
  if (key.revokedAt) return revokedRemovalTime(config, key.revokedAt);
  return key.expiresAt ? removalTime(config, key.expiresAt) : undefined;
};

/** What revokes an API key now: the time, and its removal a grace later. */
export const revokedNow = (c: { config: Retention; clock: Clock }) => {
  const now = c.clock.now();
  return { revokedAt: now, removeAt: revokedRemovalTime(c.config, now) };
};

/**
 * The removal time of a session written before sessions carried one. Revoked: a grace after its revocation.
 * Anonymous (never refreshed): a grace after its expiry. A password session: after its latest refresh token too.
 * An OpenID Connect session (its id is a grant's) may be renewed through its grant for REFRESH_TOKENS_MAX_AGE: counted
 * from `now`, as if a token were issued at this start.
 */
export function olderSessionRemovalTime(
  config: Retention &
    Pick<AuthConfig, 'ANONYMOUS_CLIENT_ID' | 'PASSWORD_CLIENT_ID' | 'REFRESH_TOKENS_MAX_AGE'>,
  session: SessionDoc,
  latestRefreshExpiry: Date | null,
  now: Date,
): Date {
  if (session.revokedAt) return revokedRemovalTime(config, session.revokedAt);
  if (session.clientId === config.ANONYMOUS_CLIENT_ID) return sessionRemovalTime(config, session.expiresAt);
  if (session.clientId === config.PASSWORD_CLIENT_ID)
    return sessionRemovalTime(config, session.expiresAt, latestRefreshExpiry ?? undefined);
  return sessionRemovalTime(
    config,
    session.expiresAt,
    new Date(now.getTime() + config.REFRESH_TOKENS_MAX_AGE * 1000),
  );
}
