import type { Clock } from '@platform/kernel';
import { type Collection, type Doc, DuplicateKeyError, type Store } from '@platform/store';

interface MonthDoc extends Doc {
  orgSlug: string;
  month: string;
  tokens: number;
  /** millionths of the plan currency */
  cost_micros: number;
}

export interface MonthUsage {
  tokens: number;
  costMicros: number;
}

/**
 * Adds to an organization's month (negative to give back) and returns the month after the change: the current UTC
 * month, or `month` (`YYYY-MM`), the one a request counts in.
 */
export interface MonthCounterPort {
  add(orgSlug: string, tokens: number, costMicros: number, month?: string): Promise<MonthUsage>;
}

export const monthKey = (at: Date): string => at.toISOString().slice(0, 7);

/** seconds from `at` to the next UTC month */
export function secondsToNextMonth(at: Date): number {
  const next = Date.UTC(at.getUTCFullYear(), at.getUTCMonth() + 1, 1);
  return Math.max(1, Math.ceil((next - at.getTime()) / 1000));
}

/**
 * The gateway's own month counters per organization: what it has admitted and consumed this UTC
 * month, changed only by atomic `$inc`, shared by every instance through the store. They lead
 * llm-quota's counters (which wait for events), so budgets are enforced without lag.
 */
export class MonthCounters implements MonthCounterPort {
  private readonly docs: Collection<MonthDoc>;

  constructor(
    store: Store,
    private readonly clock: Clock,
  ) {
    this.docs = store.collection<MonthDoc>('month_usage');
  }

  /** adds to the organization's month (negative to give back) and returns the month after the change */
  async add(
    orgSlug: string,
    tokens: number,
    costMicros: number,
    month = monthKey(this.clock.now()),
  ): Promise<MonthUsage> {
    const _id = `${orgSlug}|${month}`;
    for (let attempt = 0; ; attempt++) {
      try {
        const doc = await this.docs.findOneAndUpdate(
          { _id },
          { $inc: { tokens, cost_micros: costMicros }, $setOnInsert: { orgSlug, month } },
          { upsert: true },
        );
        return { tokens: doc!.tokens, costMicros: doc!.cost_micros };
      } catch (err) {
        // Two instances inserting the month's first document at once (MongoDB): the loser increments.
        if (!(err instanceof DuplicateKeyError) || attempt > 2) throw err;
      }
    }
  }
}
