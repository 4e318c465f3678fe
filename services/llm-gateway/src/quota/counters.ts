import type { Clock } from '@platform/kernel';
import { type RateWindows, rateWindowsFor, type Store } from '@platform/store';
import { type MonthCounterPort, MonthCounters, type MonthUsage, monthKey } from './month-counters';

/**
 * The counters admission keeps: request and token windows (fixed one-minute windows by key, `RateWindows` of
 * @platform/store) and the organizations' months. Windows are calendar minutes (decision 0016), the ones llm-quota
 * reports: a window starting at a caller's first request would refuse one whose usage gauge reads 0 and answer a
 * Retry-After its `resets_at` contradicts.
 */
export interface QuotaCounters {
  requests: RateWindows;
  tokens: RateWindows;
  months: MonthCounterPort;
}

/** The organizations' month counters in a map of this process (the protocol of @platform/store's in-process rate windows). */
export class MemoryMonths implements MonthCounterPort {
  constructor(
    private readonly table: Map<string, MonthUsage & { month: string }>,
    private readonly clock: Clock,
  ) {}

  add(
    orgSlug: string,
    tokens: number,
    costMicros: number,
    month = monthKey(this.clock.now()),
  ): Promise<MonthUsage> {
    const key = `${orgSlug}|${month}`;
    let usage = this.table.get(key);
    if (!usage) {
      // a month over for everyone is gone: what a request that went on past midnight gives back to it goes nowhere
      for (const u of this.table.values())
        if (u.month > month) return Promise.resolve({ tokens: 0, costMicros: 0 });
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

const processMonths = new WeakMap<Store, Map<string, MonthUsage & { month: string }>>();

/**
 * Where the rate windows and month counters live. On MongoDB: the gateway's database (atomic `$inc`
 * on one document per key), shared by every instance of every process. On the embedded engine, which
 * one process owns: maps of this process, shared by every gateway instance built on the same store
 * (which is what "instances sharing the embedded store" means), so the hot path touches no file and
 * copies no document. The windows last a minute and the month counters only lead llm-quota's durable
 * ones (its month is taken as a floor), so nothing durable is lost at a restart. See decision 0078.
 */
export function quotaCountersFor(store: Store, clock: Clock): QuotaCounters {
  const windows = (name: string) => rateWindowsFor(store, clock, { name, durationMs: 60_000 });
  const counters = { requests: windows('llm:rpm'), tokens: windows('llm:tpm') };
  if (store.engine !== 'embedded') return { ...counters, months: new MonthCounters(store, clock) };
  let months = processMonths.get(store);
  if (!months) {
    months = new Map();
    processMonths.set(store, months);
  }
  return { ...counters, months: new MemoryMonths(months, clock) };
}
