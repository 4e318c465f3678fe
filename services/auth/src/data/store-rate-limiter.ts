import type { Clock } from '@platform/kernel';
import { type Collection, DuplicateKeyError, type Store } from '@platform/store';
import {
  type RateLimiterAbstract,
  RateLimiterRes,
  type RateLimiterStoreAbstract,
} from 'rate-limiter-flexible';

// rate-limiter-flexible's base for store-backed limiters is not re-exported from its index.
// eslint-disable-next-line @typescript-eslint/no-require-imports
const StoreAbstract = require('rate-limiter-flexible/lib/RateLimiterStoreAbstract') as new (
  opts: Record<string, unknown>,
) => RateLimiterStoreAbstract;

interface CounterDoc {
  _id: string;
  points: number;
  /** end of the window, by the injected clock */
  expire: Date | null;
  /**
   * When the store may remove the counter, by the wall clock (the TTL index runs on real time): its last write
   * plus the window plus GC_GRACE_SECONDS. The index itself is fixed (`expireAfterSeconds: 0`), so a window
   * changed by configuration never conflicts with the index MongoDB already has.
   */
  removeAt: Date;
}

/** Counters idle this long past their window are removed by the store. */
const GC_GRACE_SECONDS = 3600;

export interface StoreRateLimiterOptions {
  store: Store;
  clock: Clock;
  keyPrefix: string;
  points: number;
  durationSeconds: number;
}

/**
 * rate-limiter-flexible on the service's own store (embedded or MongoDB), so every instance of a
 * service counts in one place. One document per key: `$inc` inside a live window, reset when the
 * window has passed, insert when absent; each step is one atomic findOneAndUpdate of the port, and a
 * lost insert race retries (the winner's document is then incremented).
 */
class StoreRateLimiter extends StoreAbstract {
  private readonly counters: Collection<CounterDoc>;
  private readonly clock: Clock;

  constructor(options: StoreRateLimiterOptions) {
    super({ keyPrefix: options.keyPrefix, points: options.points, duration: options.durationSeconds });
    this.clock = options.clock;
    this.counters = options.store.collection<CounterDoc>('rate_limits', [
      { fields: { removeAt: 1 }, expireAfterSeconds: 0 },
    ]);
  }

  _getRateLimiterRes(_key: string, changedPoints: number, doc: CounterDoc): RateLimiterRes {
    return new RateLimiterRes(
      Math.max(this.points - doc.points, 0),
      doc.expire ? Math.max(doc.expire.getTime() - this.clock.now().getTime(), 0) : -1,
      doc.points,
      doc.points === changedPoints,
    );
  }

  _upsert(key: string, points: number, msDuration: number, forceExpire = false): Promise<CounterDoc> {
    return this.write(key, points, msDuration, forceExpire, 0);
  }

  private async write(
    key: string,
    points: number,
    msDuration: number,
    forceExpire: boolean,
    attempt: number,
  ): Promise<CounterDoc> {
    const now = this.clock.now();
    const expire = msDuration > 0 ? new Date(now.getTime() + msDuration) : null;
    const removeAt = new Date(Date.now() + this.duration * 1000 + GC_GRACE_SECONDS * 1000);
    if (forceExpire) {
      return (await this.counters.findOneAndUpdate(
        { _id: key },
        { $set: { points, expire, removeAt } },
        { upsert: true },
      ))!;
    }
    const live = await this.counters.findOneAndUpdate(
      { _id: key, $or: [{ expire: { $gt: now } }, { expire: null }] },
      { $inc: { points }, $set: { removeAt } },
    );
    if (live) return live;
    const renewed = await this.counters.findOneAndUpdate(
      { _id: key, expire: { $lte: now } },
      { $set: { points, expire, removeAt } },
    );
    if (renewed) return renewed;
    try {
      return await this.counters.insertOne({ _id: key, points, expire, removeAt });
    } catch (err) {
      if (err instanceof DuplicateKeyError && attempt < 3)
        return this.write(key, points, msDuration, false, attempt + 1);
      throw err;
    }
  }

  async _get(key: string): Promise<CounterDoc | null> {
    const now = this.clock.now();
    return this.counters.findOne({ _id: key, $or: [{ expire: { $gt: now } }, { expire: null }] });
  }

  async _delete(key: string): Promise<boolean> {
    return (await this.counters.deleteOne({ _id: key })) > 0;
  }
}

/** A limiter whose counts live in the store (shared by every instance on that store). */
export function createStoreRateLimiter(options: StoreRateLimiterOptions): RateLimiterAbstract {
  return new StoreRateLimiter(options);
}
