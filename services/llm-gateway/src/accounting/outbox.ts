import type { Bus } from '@platform/bus';
import { type LlmCompletionEvent, Subjects } from '@platform/contracts';
import type { Clock, Logger } from '@platform/kernel';
import type { Collection, Doc, Store } from '@platform/store';

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
 */
export class Outbox {
  private readonly docs: Collection<OutboxDoc>;
  private timer: NodeJS.Timeout | undefined;
  private flushing: Promise<void> | null = null;
  private readonly pending = new Set<Promise<void>>();
  private unsubscribe: (() => void) | undefined;

  constructor(
    private readonly deps: {
      store: Store;
      bus: Bus;
      clock: Clock;
      logger: Logger;
      intervalMs: number;
      /** a publication not acknowledged within this is left to the outbox (it may still land: ids de-duplicate) */
      publishTimeoutMs: number;
      onPublished?: (outcome: 'published' | 'deferred' | 'republished') => void;
    },
  ) {
    this.docs = deps.store.collection<OutboxDoc>('outbox', [{ fields: { createdAt: 1 } }]);
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
    } finally {
      clearTimeout(timer);
    }
  }

  /**
   * Stores the event, then tries to publish it at once; resolves when it has been published or left
   * in the outbox. Events recorded in the same tick are stored together (one write for the group).
   */
  record(event: LlmCompletionEvent): Promise<void> {
    const work = new Promise<void>((resolve, reject) => {
      this.group.push({ event, resolve, reject });
      if (this.group.length === 1) setImmediate(() => void this.commitGroup());
    });
    this.pending.add(work);
    void work.finally(() => this.pending.delete(work)).catch(() => undefined);
    return work;
  }

  private group: Array<{ event: LlmCompletionEvent; resolve: () => void; reject: (err: unknown) => void }> =
    [];

  private async commitGroup(): Promise<void> {
    const group = this.group;
    this.group = [];
    const now = this.deps.clock.now();
    const docs = group.map(({ event }) => ({ _id: event.id, event, createdAt: now, attempts: 0 }));
    try {
      if (this.docs.insertMany) await this.docs.insertMany(docs);
      else for (const doc of docs) await this.docs.insertOne(doc);
    } catch (err) {
      for (const g of group) g.reject(err);
      return;
    }
    const published: string[] = [];
    await Promise.all(
      group.map(async ({ event }) => {
        try {
          await this.publish(event);
          published.push(event.id);
          this.deps.onPublished?.('published');
        } catch (err) {
          this.deps.onPublished?.('deferred');
          this.deps.logger.warn(
            { err, eventId: event.id },
            'usage event kept in the outbox: the bus refused it',
          );
        }
      }),
    );
    try {
      if (published.length > 0) await this.docs.deleteMany({ _id: { $in: published } });
    } catch (err) {
      // Left in the outbox: published again later under the same id, which is refused as a duplicate.
      this.deps.logger.warn({ err }, 'outbox: published events could not be removed yet');
    }
    for (const g of group) g.resolve();
  }

  start(): void {
    this.timer = setInterval(() => void this.flush(), this.deps.intervalMs);
    this.timer.unref();
    this.unsubscribe = this.deps.bus.onReconnect(() => void this.flush());
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.unsubscribe?.();
    await Promise.allSettled([...this.pending]);
    await this.flushing;
  }

  /** how many events wait for the bus */
  size(): Promise<number> {
    return this.docs.count({});
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
    for (;;) {
      const batch = await this.docs.find({}, { sort: { createdAt: 1 }, limit: 256 });
      if (batch.length === 0) return;
      const results = await Promise.allSettled(
        batch.map(async (doc) => {
          await this.publish(doc.event);
          this.deps.onPublished?.('republished');
          return doc._id;
        }),
      );
      const done = results.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []));
      if (done.length > 0) await this.docs.deleteMany({ _id: { $in: done } });
      const failed = results.filter((r) => r.status === 'rejected').length;
      if (failed > 0) {
        await this.docs.updateMany({ _id: { $in: batch.map((d) => d._id) } }, { $inc: { attempts: 1 } });
        this.deps.logger.warn({ failed, waiting: batch.length }, 'outbox: the bus still refuses events');
        return;
      }
    }
  }
}
