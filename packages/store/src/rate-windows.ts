import type { Clock } from '@platform/kernel';
import { type Collection, DuplicateKeyError, type Store } from './port';

/** What a rate window answers after a change: the points in the live window and the time it has left. */
export interface WindowCount {
  consumedPoints: number;
  msBeforeNext: number;
}

/**
 * Fixed windows of points by key, aligned on the clock (a one-minute window runs from :00 to :00), so every
 * instance's window of a key is the same one, the one a usage report shows. Limits are the caller's: it compares
 * `consumedPoints` with the limit in force (limits differ per organization, user or assistant) and gives back on
 * refusal when a refusal must not count. The subset of rate-limiter-flexible's API the callers use.
 */
export interface RateWindows {
  /** adds points to the key's live window (a new window when none is live) */
  consume(key: string, points: number): Promise<WindowCount>;
  /** adds points without a request: a settlement that used more than was consumed */
  penalty(key: string, points: number): Promise<WindowCount>;
  /**
   * takes points back: a refused or rolled-back request, a settlement that used less. Only from the live window:
   * points counted in a window that has ended are not owed to the next one (which would admit more than its limit)
   */
  reward(key: string, points: number): Promise<WindowCount>;
}

export interface RateWindowsOptions {
  /** what the windows count (`llm:rpm`, `legacy:messages-address`); one name, one duration, per store */
  name: string;
  durationMs: number;
}

/** The end of the aligned window of `durationMs` holding `now` (both ms since the epoch). */
const windowEnd = (now: number, durationMs: number) => Math.floor(now / durationMs) * durationMs + durationMs;

/** One key's count in one window (collection `rate_windows` of the service's store). */
interface RateWindowDoc {
  /** `name:key` */
  _id: string;
  points: number;
  /** the window's end, by the callers' clock */
  expire: Date;
  /** when the store removes the record (TTL index): REMOVAL_GRACE_MS after the window's end */
  removeAt: Date;
}

/**
 * An ended window's record stays this long: windows end on the instances' clocks, removal runs on the store's,
 * and a record removed before every instance saw its window end would open a new window early.
 */
const REMOVAL_GRACE_MS = 3_600_000;

/**
 * Rate windows in the store's documents, shared by every instance of every process on that store (MongoDB in
 * production). One document per key, changed only by atomic operations: `$inc` in a live window, else an insert,
 * else the reset of an ended one. Losing the insert or the reset to another instance means its window is live
 * now: the next turn counts in it, so concurrent changes are each counted once, in one window.
 */
export class StoreRateWindows implements RateWindows {
  private readonly windows: Collection<RateWindowDoc>;

  constructor(
    store: Store,
    private readonly clock: Clock,
    private readonly options: RateWindowsOptions,
  ) {
    // the index is fixed (`removeAt` says when): windows of any length share it, and a length changed by
    // configuration never conflicts with the index MongoDB already holds
    this.windows = store.collection<RateWindowDoc>('rate_windows', [
      { fields: { removeAt: 1 }, expireAfterSeconds: 0 },
    ]);
  }

  consume(key: string, points: number): Promise<WindowCount> {
    return this.add(key, points);
  }

  penalty(key: string, points: number): Promise<WindowCount> {
    return this.add(key, points);
  }

  reward(key: string, points: number): Promise<WindowCount> {
    return this.add(key, -points);
  }

  private async add(key: string, points: number): Promise<WindowCount> {
    const _id = `${this.options.name}:${key}`;
    const now = this.clock.now().getTime();
    const at = new Date(now);
    const count = (doc: RateWindowDoc): WindowCount => ({
      consumedPoints: doc.points,
      msBeforeNext: Math.max(new Date(doc.expire).getTime() - now, 0),
    });
    const end = windowEnd(now, this.options.durationMs);
    const fresh = { points, expire: new Date(end), removeAt: new Date(end + REMOVAL_GRACE_MS) };
    for (let attempt = 0; attempt < 5; attempt++) {
      const live = await this.windows.findOneAndUpdate({ _id, expire: { $gt: at } }, { $inc: { points } });
      if (live) return count(live);
      // a reward with no live window has nothing to take back
      if (points < 0) return { consumedPoints: 0, msBeforeNext: end - now };
      try {
        return count(await this.windows.insertOne({ _id, ...fresh }));
      } catch (err) {
        if (!(err instanceof DuplicateKeyError)) throw err;
      }
      const reset = await this.windows.findOneAndUpdate({ _id, expire: { $lte: at } }, { $set: fresh });
      if (reset) return count(reset);
    }
    throw new Error(`rate window ${_id} kept changing under concurrent writers`);
  }
}

interface Window {
  points: number;
  /** ms since the epoch, on the callers' clock */
  expire: number;
}

/**
 * Rate windows in a plain map of this process. Every change is one synchronous step of the event loop (read, add,
 * answer), so concurrent changes of every instance sharing the map are counted one after the other: exactly what
 * atomic `$inc` gives on a shared store. No document copied, no file written.
 */
export class MemoryWindows implements RateWindows {
  private nextSweep = 0;

  constructor(
    private readonly table: Map<string, Window>,
    private readonly clock: Clock,
    private readonly durationMs: number,
  ) {}

  consume(key: string, points: number): Promise<WindowCount> {
    return Promise.resolve(this.add(key, points));
  }

  penalty(key: string, points: number): Promise<WindowCount> {
    return Promise.resolve(this.add(key, points));
  }

  reward(key: string, points: number): Promise<WindowCount> {
    return Promise.resolve(this.add(key, -points));
  }

  private add(key: string, points: number): WindowCount {
    const now = this.clock.now().getTime();
    if (now >= this.nextSweep) this.sweep(now);
    let window = this.table.get(key);
    if (!window || window.expire <= now) {
      const expire = windowEnd(now, this.durationMs);
      // a reward with no live window has nothing to take back
      if (points < 0) return { consumedPoints: 0, msBeforeNext: expire - now };
      window = { points: 0, expire };
      this.table.set(key, window);
    }
    window.points += points;
    return { consumedPoints: window.points, msBeforeNext: window.expire - now };
  }

  /** forgets the windows that ended (at most once per window length) */
  private sweep(now: number): void {
    this.nextSweep = now + this.durationMs;
    for (const [key, window] of this.table) if (window.expire <= now) this.table.delete(key);
  }
}

/** The windows of each embedded store, by name: every instance built on the same store object shares them. */
const processWindows = new WeakMap<Store, Map<string, Map<string, Window>>>();

/**
 * The rate windows `name` on `store`. On MongoDB, the store's documents, shared by every instance of every
 * process. On the embedded engine, which one process owns, maps of that process held per `Store` object, so every
 * instance built on the same store (which is what instances sharing the embedded store means) counts in them and a
 * change touches no file. Windows last a window's length: what a restart loses of them is at most that
 * (decisions 0078 and 0112).
 */
export function rateWindowsFor(store: Store, clock: Clock, options: RateWindowsOptions): RateWindows {
  if (store.engine !== 'embedded') return new StoreRateWindows(store, clock, options);
  let tables = processWindows.get(store);
  if (!tables) {
    tables = new Map();
    processWindows.set(store, tables);
  }
  let table = tables.get(options.name);
  if (!table) {
    table = new Map();
    tables.set(options.name, table);
  }
  return new MemoryWindows(table, clock, options.durationMs);
}
