import type { Clock } from '@platform/kernel';
import { type Collection, type Doc, DuplicateKeyError } from '@platform/store';
import { RateLimiterRes, type RateLimiterStoreAbstract as StoreAbstract } from 'rate-limiter-flexible';

// The library's base class for custom stores is typed but not exported by its index.
const RateLimiterStoreAbstract: typeof StoreAbstract = require('rate-limiter-flexible/lib/RateLimiterStoreAbstract');

/** One limiter key's counter: `expire` is epoch ms (null: never). */
export interface RateCounterDoc extends Doc {
  points: number;
  expire: number | null;
  /**
   * when the store removes it (TTL index, decision 0094): COUNTER_GRACE_MS after its window or block ends, so the
   * counters of addresses and emails tried once do not pile up; absent on older records until dated
   */
  removeAt?: Date;
}

/** A counter is removed this long after its window (or its block) ended, as the anonymous-login counters (0088). */
export const COUNTER_GRACE_MS = 3_600_000;

/** The removal time of a counter whose window ends at `expire` (epoch ms; null, which no limiter here uses: `now`). */
export const counterRemovalTime = (expire: number | null, now: number): Date =>
  new Date((expire ?? now) + COUNTER_GRACE_MS);

/**
 * rate-limiter-flexible on the store port, so every auth instance sharing the database shares the
 * counters (embedded store or MongoDB). It follows RateLimiterMongo's algorithm: increment a live
 * counter, else insert one, else replace an expired one; time comes from the injected clock.
 */
export class RateLimiterStorePort extends RateLimiterStoreAbstract {
  private readonly counters: Collection<RateCounterDoc>;
  private readonly clock: Clock;

  constructor(opts: {
    collection: Collection<RateCounterDoc>;
    clock: Clock;
    keyPrefix: string;
    points: number;
    duration: number;
    blockDuration?: number;
  }) {
    super({
      storeClient: opts.collection,
      keyPrefix: opts.keyPrefix,
      points: opts.points,
      duration: opts.duration,
      blockDuration: opts.blockDuration ?? 0,
    });
    this.counters = opts.collection;
    this.clock = opts.clock;
  }

  private now(): number {
    return this.clock.now().getTime();
  }

  _getRateLimiterRes(_rlKey: string, changedPoints: number, doc: RateCounterDoc): RateLimiterRes {
    const consumed = doc.points;
    return new RateLimiterRes(
      Math.max(this.points - consumed, 0),
      doc.expire === null ? -1 : Math.max(doc.expire - this.now(), 0),
      consumed,
      consumed === changedPoints,
    );
  }

  async _upsert(
    key: string,
    points: number,
    msDuration: number,
    forceExpire = false,
  ): Promise<RateCounterDoc> {
    const now = this.now();
    const expire = msDuration > 0 ? now + msDuration : null;
    const removeAt = counterRemovalTime(expire, now);
    if (forceExpire) {
      const doc = await this.counters.findOneAndUpdate(
        { _id: key },
        { $set: { points, expire, removeAt } },
        { upsert: true },
      );
      return doc!;
    }
    const live = { $or: [{ expire: { $gt: now } }, { expire: null }] };
    try {
      const doc = await this.counters.findOneAndUpdate(
        { _id: key, ...live },
        { $setOnInsert: { expire, removeAt }, $inc: { points } },
        { upsert: true },
      );
      return doc!;
    } catch (err) {
      if (!(err instanceof DuplicateKeyError)) throw err;
      // An expired counter holds the key: start a new window over it (or, if a peer just did, count in it).
      const replaced = await this.counters.findOneAndUpdate(
        { _id: key, expire: { $lte: now } },
        { $set: { points, expire, removeAt } },
      );
      return replaced ?? this._upsert(key, points, msDuration, false);
    }
  }

  /**
   * Gives back one point of `key`'s live counter, never below zero. Unlike `reward`, which reads and then makes a
   * counter of -1 if it is gone, a counter deleted or expired meanwhile gets no credit.
   */
  async giveBack(key: string): Promise<void> {
    const now = this.now();
    await this.counters.updateOne(
      { _id: this.getKey(key), points: { $gt: 0 }, $or: [{ expire: { $gt: now } }, { expire: null }] },
      { $inc: { points: -1 } },
    );
  }

  async _get(key: string): Promise<RateCounterDoc | null> {
    const doc = await this.counters.findOne({ _id: key });
    if (!doc || (doc.expire !== null && doc.expire <= this.now())) return null;
    return doc;
  }

  async _delete(key: string): Promise<boolean> {
    return (await this.counters.deleteOne({ _id: key })) > 0;
  }
}
