import type { Clock } from '@platform/kernel';
import { type Collection, type Doc, DuplicateKeyError, type Store } from '@platform/store';
import { RateLimiterRes, type RateLimiterStoreAbstract as StoreAbstractType } from 'rate-limiter-flexible';

// The library's base class for storage engines is not exported from its index (its own Mongo, Redis
// and SQL limiters extend it from the file): take it from there, typed by the index's declaration.
// eslint-disable-next-line @typescript-eslint/no-require-imports
const RateLimiterStoreAbstract =
  require('rate-limiter-flexible/lib/RateLimiterStoreAbstract') as typeof StoreAbstractType;

/** The end of the aligned window of `durationMs` holding `now` (both ms since the epoch). */
export const windowEnd = (now: number, durationMs: number) =>
  Math.floor(now / durationMs) * durationMs + durationMs;

interface WindowDoc extends Doc {
  points: number;
  expire: Date;
}

/**
 * rate-limiter-flexible on the store port, with windows aligned on the clock (`windowEnd`): one document per key
 * and window holding the points
 * consumed, changed only with atomic `$inc`, so every gateway instance sharing the store (MongoDB in
 * production, the embedded engine in one process) counts against the same numbers.
 */
export class StoreRateLimiter extends RateLimiterStoreAbstract {
  private readonly windows: Collection<WindowDoc>;
  private readonly now: () => number;

  constructor(options: {
    store: Store;
    clock: Clock;
    keyPrefix: string;
    durationSeconds: number;
    points?: number;
  }) {
    super({
      storeClient: options.store,
      keyPrefix: options.keyPrefix,
      duration: options.durationSeconds,
      // Limits differ per organization and user: callers compare consumedPoints with their own limit.
      points: options.points ?? Number.MAX_SAFE_INTEGER,
      inMemoryBlockOnConsumed: 0,
    });
    this.windows = options.store.collection<WindowDoc>('rate_windows', [
      // an hour after a window's end (the store's clock; instances' clocks may differ a little)
      { fields: { expire: 1 }, expireAfterSeconds: 3_600 },
    ]);
    this.now = () => options.clock.now().getTime();
  }

  // The library's storage hooks (its Mongo/Redis limiters implement the same three).
  async _upsert(key: string, points: number, msDuration: number, forceExpire = false): Promise<WindowDoc> {
    const now = this.now();
    const fresh = () => ({ points, expire: new Date(windowEnd(now, msDuration)) });
    if (forceExpire) {
      const doc = await this.windows.findOneAndUpdate({ _id: key }, { $set: fresh() }, { upsert: true });
      return doc!;
    }
    for (let attempt = 0; attempt < 5; attempt++) {
      const live = await this.windows.findOneAndUpdate(
        { _id: key, expire: { $gt: new Date(now) } },
        { $inc: { points } },
      );
      if (live) return live;
      // No live window: start one, either by inserting or by resetting an expired one. Losing either
      // race to another instance means its window is live now: count in it on the next turn.
      try {
        return await this.windows.insertOne({ _id: key, ...fresh() });
      } catch (err) {
        if (!(err instanceof DuplicateKeyError)) throw err;
      }
      const reset = await this.windows.findOneAndUpdate(
        { _id: key, expire: { $lte: new Date(now) } },
        { $set: fresh() },
      );
      if (reset) return reset;
    }
    throw new Error(`rate window ${key} kept changing under concurrent writers`);
  }

  async _get(key: string): Promise<WindowDoc | null> {
    return this.windows.findOne({ _id: key, expire: { $gt: new Date(this.now()) } });
  }

  async _delete(key: string): Promise<boolean> {
    return (await this.windows.deleteOne({ _id: key })) > 0;
  }

  _getRateLimiterRes(_key: string, changedPoints: number, doc: WindowDoc): RateLimiterRes {
    return new RateLimiterRes(
      Math.max(this.points - doc.points, 0),
      Math.max(new Date(doc.expire).getTime() - this.now(), 0),
      doc.points,
      doc.points === changedPoints,
    );
  }
}
