import type { Bus } from '@platform/bus';
import { type LlmCompletionEvent, Subjects } from '@platform/contracts';
import { type Clock, type Logger, OutageLog } from '@platform/kernel';
import type { Collection, Doc, Store } from '@platform/store';

/** the most events one group commit writes (one append of the embedded engine, one insertMany) */
const MAX_GROUP = 512;
/** the most events kept in memory while the store and the bus both refuse them (~1 KB each) */
export const MAX_HELD = 10_000;

interface Waiting {
  event: LlmCompletionEvent;
  resolve: () => void;
}

interface OutboxDoc extends Doc {
  event: LlmCompletionEvent;
  createdAt: Date;
  attempts: number;
}

/**
 * The durable outbox of `analytics.llm.completion`: every event is written to the store first, then
 * published to JetStream with its id as the message id, and removed once the stream acknowledged it.
 * What the bus refused (NATS away) is published again by a timer and on reconnection, by any
 * instance. A re-publication carries the same id: JetStream drops it within its duplicate window and
 * llm-quota's ledger refuses an id it has counted, so an event is never lost nor counted twice.
 *
 * When the store refuses a group (MongoDB away, a broken data file), its events go to the bus directly (a
 * durable publication is as safe as the outbox); what the bus refuses too is held in memory (at most
 * MAX_HELD events) and stored or published by the next flush. Only an instance that stops, or holds MAX_HELD
 * events, while both are away loses events, and it logs each one.
 *
 * An outage of the bus is logged as one warning when a publication is first refused (with the bus's error), a
 * reminder at most every OUTAGE_REMINDER_MS (what waits, since when), and one line once a flush finds nothing
 * waiting and nothing refused: a flush a second would otherwise log 3,600 lines an hour. An outage of the store
 * likewise (kernel's OutageLog): one warning at its first refused read or write, a reminder (what memory holds) at
 * most every OUTAGE_REMINDER_MS, and one line once it takes a write again; every group and every flush logged a
 * line before. The metrics (llm_gateway_usage_outbox_events, llm_gateway_usage_events_total) are what alerts read.
 */
export class Outbox {
  private readonly docs: Collection<OutboxDoc>;
  private timer: NodeJS.Timeout | undefined;
  private flushing: Promise<void> | null = null;
  private readonly pending = new Set<Promise<void>>();
  private unsubscribe: (() => void) | undefined;
  private readonly busOutage: OutageLog;
  /** events that waited and this instance has delivered since the bus's outage began */
  private deliveredInOutage = 0;
  private readonly storeOutage: OutageLog;

  constructor(
    private readonly deps: {
      store: Store;
      bus: Bus;
      clock: Clock;
      logger: Logger;
      intervalMs: number;
      /** under load, at most one group write per this many ms (default 0: write as soon as the last one ended) */
      lingerMs?: number;
      /** a publication not acknowledged within this is left to the outbox (it may still land: ids de-duplicate) */
      publishTimeoutMs: number;
      /** what became of each event: on the bus at once or later, left in the outbox, held in memory, or lost */
      onPublished?: (outcome: 'published' | 'deferred' | 'republished' | 'held' | 'lost') => void;
    },
  ) {
    this.docs = deps.store.collection<OutboxDoc>('outbox', [{ fields: { createdAt: 1 } }]);
    this.busOutage = new OutageLog(deps, {
      starts:
        'outbox: the bus refuses events; they wait and are published again on a timer and on reconnection ' +
        '(llm_gateway_usage_outbox_events counts them)',
      lasts: 'outbox: the bus still refuses events',
      ends: 'outbox: the bus takes events again; what waited is delivered',
    });
    this.storeOutage = new OutageLog(deps, {
      starts:
        'outbox: the store refuses usage events; they are published directly, and held in memory while the bus ' +
        'refuses them too (llm_gateway_usage_events_total counts them by outcome)',
      lasts: 'outbox: the store still refuses usage events',
      ends: 'outbox: the store takes usage events again',
    });
  }

  /** JetStream's acknowledgement, or a rejection after publishTimeoutMs. */
  private async publish(event: LlmCompletionEvent): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new Error('no acknowledgement from the bus in time')),
        this.deps.publishTimeoutMs,
      );
    });
    try {
      await Promise.race([this.deps.bus.publishDurable(Subjects.llmCompletion, event, event.id), timeout]);
    } catch (err) {
      if (this.busOutage.refused(err, { retryEveryMs: this.deps.intervalMs })) this.deliveredInOutage = 0;
      throw err;
    } finally {
      clearTimeout(timer);
    }
  }

  /**
   * Stores the event, then tries to publish it at once; resolves (never rejects) when it has been published,
   * left in the outbox, or held in memory while the store and the bus both refuse it. Group commit: one group is written at a time, and the events recorded meanwhile
   * form the next group (one append and one removal per group, however many events it holds); under
   * load a group is written at most once per `lingerMs`, so the writes per event shrink as the load
   * grows. Accounting runs after the answer has gone out: the wait delays no client.
   */
  record(event: LlmCompletionEvent): Promise<void> {
    const work = new Promise<void>((resolve) => {
      this.group.push({ event, resolve });
      if (!this.committing) this.committing = this.commitGroups();
    });
    this.pending.add(work);
    void work.finally(() => this.pending.delete(work));
    return work;
  }

  private group: Waiting[] = [];
  private committing: Promise<void> | null = null;
  private lastGroupAt = Number.NEGATIVE_INFINITY;
  /** ids published and still to remove from the outbox */
  private readonly published: string[] = [];
  /**
   * ids this instance stored and is publishing or about to remove: the timer's flush leaves them alone
   * (publishing them again would only make duplicates for llm-quota to refuse)
   */
  private readonly inHand = new Set<string>();

  private async commitGroups(): Promise<void> {
    try {
      // the events of this tick join the first group
      await new Promise<void>((resolve) => setImmediate(resolve));
      while (this.group.length > 0 || this.published.length > 0) {
        const wait = this.lastGroupAt + (this.deps.lingerMs ?? 0) - performance.now();
        if (wait > 0 && this.group.length < MAX_GROUP) {
          await new Promise<void>((resolve) => setTimeout(resolve, wait));
        }
        this.lastGroupAt = performance.now();
        const group = this.group.splice(0, MAX_GROUP);
        // the next group is written while this one is published (a bus that is away never delays a write)
        if (group.length > 0 && (await this.store(group))) void this.publishGroup(group);
        // what every group published meanwhile leaves the outbox in one removal
        const done = this.published.splice(0);
        if (done.length > 0) {
          await this.remove(done);
          for (const id of done) this.inHand.delete(id);
        }
      }
    } finally {
      this.committing = null;
    }
  }

  private async remove(ids: string[]): Promise<void> {
    try {
      await this.docs.deleteMany({ _id: { $in: ids } });
      this.storeOutage.ended();
    } catch (err) {
      // Left in the outbox: published again later under the same id, which is refused as a duplicate.
      await this.storeRefused(err);
    }
  }

  /** one write for the group; false when the store refused it (the group then goes to the bus directly) */
  private async store(group: Waiting[]): Promise<boolean> {
    try {
      await this.insert(group.map(({ event }) => event));
      for (const { event } of group) this.inHand.add(event.id);
      this.storeOutage.ended();
      return true;
    } catch (err) {
      await this.storeRefused(err);
      void this.publishUnstored(group.map(({ event }) => event))
        .catch((publishErr: unknown) =>
          this.deps.logger.error({ err: publishErr }, 'outbox: direct publication failed'),
        )
        .finally(() => {
          for (const g of group) g.resolve();
        });
      return false;
    }
  }

  private async insert(events: LlmCompletionEvent[]): Promise<void> {
    const now = this.deps.clock.now();
    const docs = events.map((event) => ({ _id: event.id, event, createdAt: now, attempts: 0 }));
    if (this.docs.insertMany) await this.docs.insertMany(docs);
    else for (const doc of docs) await this.docs.insertOne(doc);
  }

  /** events neither stored nor published yet (the store and the bus both refused them), oldest first */
  private readonly held: LlmCompletionEvent[] = [];

  /** Publishes events the store refused; those the bus refuses too are held for the next flush (`again`: held before). */
  private async publishUnstored(events: LlmCompletionEvent[], again = false): Promise<void> {
    const results = await Promise.allSettled(events.map((event) => this.publish(event)));
    for (const [i, result] of results.entries()) {
      const event = events[i]!;
      if (result.status === 'fulfilled') {
        this.deps.onPublished?.(again ? 'republished' : 'published');
        if (again) this.deliveredInOutage++;
      } else if (this.held.length < MAX_HELD) {
        this.held.push(event);
        if (!again) this.deps.onPublished?.('held');
      } else {
        this.deps.onPublished?.('lost');
        this.deps.logger.error(
          { event, held: this.held.length },
          'usage event lost: the store and the bus refuse it, and memory already holds the most events it may',
        );
      }
    }
  }

  /** The held events into the store, else onto the bus; what neither takes stays held. */
  private async retryHeld(): Promise<void> {
    if (this.held.length === 0) return;
    const events = this.held.splice(0);
    try {
      await this.insert(events);
      this.storeOutage.ended();
    } catch (err) {
      await this.storeRefused(err);
      await this.publishUnstored(events, true);
    }
  }

  private async publishGroup(group: Waiting[]): Promise<void> {
    await Promise.all(
      group.map(async ({ event }) => {
        try {
          await this.publish(event);
          this.published.push(event.id);
          this.deps.onPublished?.('published');
        } catch {
          // the outbox keeps it (its outage is logged once, not once per event)
          this.inHand.delete(event.id); // the timer's flush takes it over
          this.deps.onPublished?.('deferred');
        }
      }),
    );
    if (this.published.length > 0 && !this.committing) this.committing = this.commitGroups();
    for (const g of group) g.resolve();
  }

  start(): void {
    this.timer = setInterval(() => void this.flushQuietly(), this.deps.intervalMs);
    this.timer.unref();
    this.unsubscribe = this.deps.bus.onReconnect(() => void this.flushQuietly());
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.unsubscribe?.();
    await Promise.allSettled([...this.pending]);
    await this.committing;
    await this.flushing?.catch(() => undefined);
    await this.retryHeld();
    for (const event of this.held.splice(0)) {
      this.deps.onPublished?.('lost');
      this.deps.logger.error({ event }, 'usage event lost at shutdown: the store and the bus refused it');
    }
  }

  /** A flush nobody awaits (timer, reconnection): a store that cannot serve is an outage logged, never thrown. */
  flushQuietly(): Promise<void> {
    return this.flush().catch((err: unknown) => this.storeRefused(err));
  }

  /** how many events wait for the bus (stored, or held in memory while the store refuses them) */
  async size(): Promise<number> {
    return (await this.docs.count({})) + this.held.length;
  }

  /** Publishes what waits, oldest first, until the bus refuses again. One flush at a time. */
  flush(): Promise<void> {
    if (!this.flushing) {
      this.flushing = this.drain().finally(() => {
        this.flushing = null;
      });
    }
    return this.flushing;
  }

  private async drain(): Promise<void> {
    const refusalsBefore = this.busOutage.current?.refusals;
    await this.retryHeld();
    for (;;) {
      const found = await this.docs.find({}, { sort: { createdAt: 1 }, limit: 256 });
      const batch = found.filter((doc) => !this.inHand.has(doc._id));
      if (batch.length === 0) {
        // nothing waits any more, and nothing was refused meanwhile: the bus is back
        if (this.busOutage.current?.refusals === refusalsBefore) {
          this.busOutage.ended({ delivered: this.deliveredInOutage });
        }
        return;
      }
      const results = await Promise.allSettled(
        batch.map(async (doc) => {
          await this.publish(doc.event);
          this.deps.onPublished?.('republished');
          return doc._id;
        }),
      );
      const done = results.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []));
      if (done.length > 0) await this.docs.deleteMany({ _id: { $in: done } });
      this.deliveredInOutage += done.length;
      const failed = results.filter((r) => r.status === 'rejected').length;
      if (failed > 0) {
        await this.docs.updateMany({ _id: { $in: batch.map((d) => d._id) } }, { $inc: { attempts: 1 } });
        // the count is for the reader; a store that cannot give it leaves it out of the line
        await this.busOutage.remind(async () => ({ waiting: await this.size().catch(() => undefined) }));
        return;
      }
    }
  }

  /** A read or write the store refused: logged when the outage starts, then at most every OUTAGE_REMINDER_MS. */
  private async storeRefused(err: unknown): Promise<void> {
    this.storeOutage.refused(err, { held: this.held.length });
    await this.storeOutage.remind(() => ({ held: this.held.length }));
  }
}
