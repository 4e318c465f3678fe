import { createHash } from 'node:crypto';
import { RateLimited } from '@platform/kernel';
import { type RateWindows, rateWindowsFor, type Store } from '@platform/store';
import { clientKey, compileAddressList } from './address-keys';
import type { LegacyContext } from './context';

type Scope = 'address' | 'user';

/** A budget refused in memory until its window ends stops costing store writes; beyond this many, the ended go. */
const MAX_REMEMBERED_REFUSALS = 10_000;
/** While the counters fail, one log line per this long (with the number of messages let through meanwhile). */
const OUTAGE_LOG_INTERVAL_MS = 60_000;

class Budget {
  private readonly windows: RateWindows;
  /**
   * keys refused in this process, until the end of their window (the injected clock's ms): on MongoDB a client
   * that keeps sending after its 429 then costs a map lookup per message instead of a round trip to one hot document
   */
  private readonly refusedUntil = new Map<string, number>();

  constructor(
    private readonly ctx: LegacyContext,
    store: Store,
    readonly scope: Scope,
    readonly points: number,
  ) {
    this.windows = rateWindowsFor(store, ctx.clock, {
      name: `legacy:messages-${scope}`,
      durationMs: ctx.config.LEGACY_MESSAGES_RATE_WINDOW_SECONDS * 1000,
    });
  }

  /** Takes one point; the seconds to wait when the budget is spent, else undefined. */
  async take(key: string): Promise<number | undefined> {
    const now = this.ctx.clock.now().getTime();
    const until = this.refusedUntil.get(key);
    if (until !== undefined && until > now) return secondsUntil(until - now);
    const window = await this.windows.consume(key, 1);
    if (window.consumedPoints <= this.points) return undefined;
    this.remember(key, now + window.msBeforeNext, now);
    return secondsUntil(window.msBeforeNext);
  }

  private remember(key: string, until: number, now: number): void {
    if (this.refusedUntil.size >= MAX_REMEMBERED_REFUSALS)
      for (const [k, end] of this.refusedUntil) if (end <= now) this.refusedUntil.delete(k);
    if (this.refusedUntil.size < MAX_REMEMBERED_REFUSALS) this.refusedUntil.set(key, until);
  }
}

const secondsUntil = (ms: number) => Math.max(1, Math.ceil(ms / 1000));
const hashed = (text: string) => createHash('sha256').update(text).digest('base64url').slice(0, 22);

/**
 * The rate limits of `/v1/Messages` (decision 0112): per assistant, a budget for each client address (what a
 * person, an office behind one NAT address, or a page's copied token can send) and one for each `userId` (one
 * person's conversation), in rate windows every instance shares (@platform/store: MongoDB's documents, or the maps
 * of the process owning the embedded store). When the counters fail, messages go through (logged and counted)
 * rather than fail: the limits protect the service, they are not a reason to stop it.
 */
export class MessageLimits {
  private readonly byAddress: Budget | undefined;
  private readonly byUser: Budget | undefined;
  private readonly unlimited: (address: string) => boolean;
  private outage = { loggedAt: Number.NEGATIVE_INFINITY, letThrough: 0 };

  constructor(
    private readonly ctx: LegacyContext,
    store: Store,
  ) {
    const { config } = ctx;
    if (config.LEGACY_MESSAGES_PER_ADDRESS > 0)
      this.byAddress = new Budget(ctx, store, 'address', config.LEGACY_MESSAGES_PER_ADDRESS);
    if (config.LEGACY_MESSAGES_PER_USER > 0)
      this.byUser = new Budget(ctx, store, 'user', config.LEGACY_MESSAGES_PER_USER);
    this.unlimited = compileAddressList(config.LEGACY_MESSAGES_UNLIMITED_ADDRESSES);
  }

  /** One message from `address` to the assistant; RateLimited when the address spent its window's budget. */
  async admitAddress(assistantId: string, address: string): Promise<void> {
    if (!this.byAddress || this.unlimited(address)) return;
    await this.admit(this.byAddress, `${assistantId}:${clientKey(address)}`);
  }

  /** One message of `userId` to the assistant; RateLimited when that user spent the window's budget. */
  async admitUser(assistantId: string, userId: string): Promise<void> {
    if (!this.byUser) return;
    // hashed: the counters hold no user ids, and a long id makes no long key
    await this.admit(this.byUser, `${assistantId}:${hashed(userId)}`);
  }

  private async admit(budget: Budget, key: string): Promise<void> {
    let retryAfter: number | undefined;
    try {
      retryAfter = await budget.take(key);
    } catch (err) {
      this.letThrough(err);
      return;
    }
    if (retryAfter === undefined) return;
    this.ctx.metrics.messageLimit(budget.scope);
    const who = budget.scope === 'address' ? 'this address' : 'this user';
    const window = this.ctx.config.LEGACY_MESSAGES_RATE_WINDOW_SECONDS;
    throw new RateLimited(
      retryAfter,
      `Too many messages from ${who} to this assistant (at most ${budget.points} per ${window} seconds); try again in ${retryAfter} seconds`,
      { details: { scope: budget.scope, limit: budget.points, windowSeconds: window } },
    );
  }

  /** The counters failed: the message goes through, and the outage is logged once a minute, not per message. */
  private letThrough(err: unknown): void {
    this.ctx.metrics.messageLimit('store_failed');
    this.outage.letThrough++;
    const now = this.ctx.clock.now().getTime();
    if (now - this.outage.loggedAt < OUTAGE_LOG_INTERVAL_MS) return;
    this.ctx.logger.error(
      { err, messagesLetThrough: this.outage.letThrough },
      'message rate counters failed; messages go through uncounted',
    );
    this.outage = { loggedAt: now, letThrough: 0 };
  }
}
