import type { Clock } from '@platform/kernel';
import type { Store } from '@platform/store';
import { type MonthCounterPort, MonthCounters, type MonthUsage, monthKey } from './month-counters';
import { StoreRateLimiter, windowEnd } from './store-rate-limiter';

/** What a rate window answers after a change: the points in the live window and the time it has left. */
export interface WindowCount {
  consumedPoints: number;
  msBeforeNext: number;
}

/**
 * Fixed one-minute windows by key, as admission uses them (rate-limiter-flexible's `consume`,
 * `penalty` and `reward`): `StoreRateLimiter` on a shared store, `MemoryWindows` in one process.
 * Windows are calendar minutes (decision 0016), the ones llm-quota reports: a window starting at a caller's
 * first request would refuse one whose usage gauge reads 0 and answer a Retry-After its `resets_at` contradicts.
 */
export interface RateWindows {
  consume(key: string, points: number): Promise<WindowCount>;
  penalty(key: string, points: number): Promise<unknown>;
  reward(key: string, points: number): Promise<unknown>;
}

/** The counters admission keeps: request and token windows, and the organizations' months. */
export interface QuotaCounters {
  requests: RateWindows;
  tokens: RateWindows;
  months: MonthCounterPort;
}

interface Window {
  points: number;
  /** ms since the epoch, on the gateway's clock */
  expire: number;
}

/**
 * Rate windows in a plain map of this process. Every change is one synchronous step of the event
 * loop (read, add, answer), so concurrent requests of every gateway instance sharing the map are
 * counted one after the other: exactly what atomic `$inc` gives on a shared store.
 */
export class MemoryWindows implements RateWindows {
  private nextSweep = 0;

  constructor(
    private readonly table: Map<string, Window>,
    private readonly clock: Clock,
    private readonly durationMs: number,
  ) {}

  /** adds points to the key's live window (a new window when none is live) and returns it */
  private add(key: string, points: number): WindowCount {
    const now = this.clock.now().getTime();
    if (now >= this.nextSweep) this.sweep(now);
    let window = this.table.get(key);
    if (!window || window.expire <= now) {
      window = { points: 0, expire: windowEnd(now, this.durationMs) };
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

  consume(key: string, points: number): Promise<WindowCount> {
    return Promise.resolve(this.add(key, points));
  }

  penalty(key: string, points: number): Promise<WindowCount> {
    return Promise.resolve(this.add(key, points));
  }

  reward(key: string, points: number): Promise<WindowCount> {
    return Promise.resolve(this.add(key, -points));
  }
}

/** The organizations' month counters in a map of this process (same protocol as MemoryWindows). */
export class MemoryMonths implements MonthCounterPort {
  constructor(
    private readonly table: Map<string, MonthUsage & { month: string }>,
    private readonly clock: Clock,
  ) {}

  add(orgSlug: string, tokens: number, costMicros: number): Promise<MonthUsage> {
    const month = monthKey(this.clock.now());
    const key = `${orgSlug}|${month}`;
    let usage = this.table.get(key);
    if (!usage) {
      // a new month for this organization: the months before it are over for everyone
      for (const [k, u] of this.table) if (u.month < month) this.table.delete(k);
      usage = { tokens: 0, costMicros: 0, month };
      this.table.set(key, usage);
    }
    usage.tokens += tokens;
    usage.costMicros += costMicros;
    return Promise.resolve({ tokens: usage.tokens, costMicros: usage.costMicros });
  }
}

interface SharedTables {
  requests: Map<string, Window>;
  tokens: Map<string, Window>;
  months: Map<string, MonthUsage & { month: string }>;
}

const processTables = new WeakMap<Store, SharedTables>();

/**
 * Where the rate windows and month counters live. On MongoDB: the gateway's database (atomic `$inc`
 * on one document per key), shared by every instance of every process. On the embedded engine, which
 * one process owns: maps of this process, shared by every gateway instance built on the same store
 * (which is what "instances sharing the embedded store" means), so the hot path touches no file and
 * copies no document. The windows last a minute and the month counters only lead llm-quota's durable
 * ones (its month is taken as a floor), so nothing durable is lost at a restart. See decision 0078.
 */
export function quotaCountersFor(store: Store, clock: Clock): QuotaCounters {
  if (store.engine !== 'embedded') {
    const limiter = (name: string) =>
      new StoreRateLimiter({ store, clock, keyPrefix: `llm:${name}`, durationSeconds: 60 });
    return { requests: limiter('rpm'), tokens: limiter('tpm'), months: new MonthCounters(store, clock) };
  }
  let tables = processTables.get(store);
  if (!tables) {
    tables = { requests: new Map(), tokens: new Map(), months: new Map() };
    processTables.set(store, tables);
  }
  return {
    requests: new MemoryWindows(tables.requests, clock, 60_000),
    tokens: new MemoryWindows(tables.tokens, clock, 60_000),
    months: new MemoryMonths(tables.months, clock),
  };
}
