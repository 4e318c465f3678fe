import { type Clock, RateLimited } from '@platform/kernel';
import type { Collection } from '@platform/store';
import { RateLimiterRes } from 'rate-limiter-flexible';
import type { AuthConfig } from '../config';
import { sha256Hex } from '../domain/secrets';
import { type RateCounterDoc, RateLimiterStorePort } from './store-rate-limiter';

const retryAfterOf = (res: RateLimiterRes) => Math.max(1, Math.ceil(res.msBeforeNext / 1000));

/** Consumes one point, turning a rejection into the envelope's 429. */
export async function consumeOrThrow(
  limiter: RateLimiterStorePort,
  key: string,
  message: string,
): Promise<void> {
  try {
    await limiter.consume(key);
  } catch (err) {
    if (err instanceof RateLimiterRes) throw new RateLimited(retryAfterOf(err), message);
    throw err;
  }
}

/**
 * Password-guessing brakes, shared by every auth instance through the store: each login attempt takes a
 * point from its account's and its client address's budget BEFORE the password is checked, so even
 * concurrent attempts get at most LOGIN_ACCOUNT_MAX_FAILURES checks per window; a success gives the
 * account's points back. An exhausted budget locks for LOGIN_LOCK_SECONDS, the right password included.
 */
export class LoginThrottle {
  private readonly byAccount: RateLimiterStorePort;
  private readonly byAddress: RateLimiterStorePort;

  constructor(collection: Collection<RateCounterDoc>, clock: Clock, config: Readonly<AuthConfig>) {
    const common = {
      collection,
      clock,
      duration: config.LOGIN_FAILURE_WINDOW_SECONDS,
      blockDuration: config.LOGIN_LOCK_SECONDS,
    };
    this.byAccount = new RateLimiterStorePort({
      ...common,
      keyPrefix: 'login-account',
      points: config.LOGIN_ACCOUNT_MAX_FAILURES,
    });
    this.byAddress = new RateLimiterStorePort({
      ...common,
      keyPrefix: 'login-address',
      points: config.LOGIN_ADDRESS_MAX_FAILURES,
    });
  }

  /** Called before a password check; 429 when the address or the account is locked. */
  async attempt(email: string, address: string): Promise<void> {
    const message = 'Too many failed sign-in attempts; try again later';
    await consumeOrThrow(this.byAddress, address, message);
    // Keyed by a hash: the counters never hold an email address.
    await consumeOrThrow(this.byAccount, sha256Hex(email), message);
  }

  /** The password was right: the account's failures are forgotten. */
  async succeeded(email: string, address: string): Promise<void> {
    await this.byAccount.delete(sha256Hex(email));
    await this.byAddress.giveBack(address);
  }

  /**
   * A right answer that opens no session yet (a right password asking for its second factor, a right code): no guess,
   * so this attempt's points are given back.
   */
  async refund(email: string, address: string): Promise<void> {
    // one attempt's point each, never more: successes must not buy credit for guesses
    await this.byAccount.giveBack(sha256Hex(email));
    await this.byAddress.giveBack(address);
  }

  /** A password reset ends an account's lock (its owner proved control of the mailbox). */
  async unlock(email: string): Promise<void> {
    await this.byAccount.delete(sha256Hex(email));
  }
}
