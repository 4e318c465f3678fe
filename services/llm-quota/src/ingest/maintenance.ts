import type { Clock, Logger } from '@platform/kernel';
import type { QuotaCollections } from '../data/collections';
import { countersBefore } from '../domain/windows';
import type { UsageWriter } from './usage-writer';

export interface MaintenanceOptions {
  collections: QuotaCollections;
  writer: Pick<UsageWriter, 'recover' | 'stuckBatches' | 'sweepMarkers'>;
  clock: Clock;
  logger: Logger;
  intervalMs: number;
  eventIdRetentionMs: number;
  minuteRetentionMs: number;
  /** after the recoveries of each pass: how many batches are still stuck (`UsageWriter.stuckBatches`) */
  onStuckBatches?: (count: number) => void;
}

/**
 * Background upkeep, on every instance (all of it is safe to run concurrently): finish or undo batches left
 * unfinished (reporting how many are still stuck), remove the markers of finished batches, then, about once a minute,
 * forget event ids and minute counters past their retention (an event id: past the later of its arrival and its
 * `occurredAt`). Month counters are the usage ledger and are kept.
 */
export class Maintenance {
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;
  private lastRetention = 0;

  constructor(private readonly options: MaintenanceOptions) {}

  start(): void {
    if (this.timer) return;
    this.timer = setInterval(() => void this.runOnce(), this.options.intervalMs);
    this.timer.unref();
    void this.runOnce();
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.running;
  }

  /** One pass; overlapping calls share the pass in progress. */
  runOnce(): Promise<void> {
    if (!this.running) {
      this.running = this.pass()
        .catch((err) => this.options.logger.warn({ err }, 'usage maintenance pass failed'))
        .finally(() => {
          this.running = null;
        });
    }
    return this.running;
  }

  private async pass(): Promise<void> {
    while ((await this.options.writer.recover()) > 0) {
      // keep going while there is a backlog
    }
    this.options.onStuckBatches?.(await this.options.writer.stuckBatches());
    await this.options.writer.sweepMarkers();
    const realNow = Date.now();
    if (realNow - this.lastRetention < 60_000) return;
    this.lastRetention = realNow;
    const now = this.options.clock.now().getTime();
    const { ledger, counters, batches, finishedBatches } = this.options.collections;
    // An id is kept past the later of its arrival and its date: an event dated ahead is not too old by its own date
    // until then, and its replay must still be known.
    const idCutoff = new Date(now - this.options.eventIdRetentionMs);
    // A claim holds `occurredAt` only when it is later than its arrival (and always, if written before decision 0124).
    const ids =
      (await ledger.deleteMany({ receivedAt: { $lt: idCutoff }, occurredAt: { $exists: false } })) +
      (await ledger.deleteMany({ receivedAt: { $lt: idCutoff }, occurredAt: { $lt: idCutoff } }));
    const minutes = await counters.deleteMany({
      _id: countersBefore('minute', new Date(now - this.options.minuteRetentionMs)),
    });
    // Batches are kept a little longer than the claims that point to them.
    const batchCutoff = new Date(now - this.options.eventIdRetentionMs - 3_600_000);
    await finishedBatches.deleteMany({
      countedAt: { $lt: batchCutoff },
      latestOccurredAt: { $lt: batchCutoff },
    });
    await finishedBatches.deleteMany({
      countedAt: { $lt: batchCutoff },
      latestOccurredAt: { $exists: false },
    });
    await batches.deleteMany({ state: 'aborted', countedAt: { $lt: batchCutoff } });
    if (ids || minutes)
      this.options.logger.info({ ids, minutes }, 'forgot old event ids and minute counters');
  }
}
