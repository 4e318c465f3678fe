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

  /** Stores the event, then tries to publish it at once; resolves when it is durable in the store. */
  record(event: LlmCompletionEvent): Promise<void> {
    const work = (async () => {
      await this.docs.insertOne({ _id: event.id, event, createdAt: this.deps.clock.now(), attempts: 0 });
      try {
        await this.publish(event);
        await this.docs.deleteOne({ _id: event.id });
        this.deps.onPublished?.('published');
      } catch (err) {
        this.deps.onPublished?.('deferred');
        this.deps.logger.warn(
          { err, eventId: event.id },
          'usage event kept in the outbox: the bus refused it',
        );
      }
    })();
    this.pending.add(work);
    void work.finally(() => this.pending.delete(work)).catch(() => undefined);
    return work;
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
          await this.docs.deleteOne({ _id: doc._id });
          this.deps.onPublished?.('republished');
        }),
      );
      const failed = results.filter((r) => r.status === 'rejected').length;
      if (failed > 0) {
        await this.docs.updateMany({ _id: { $in: batch.map((d) => d._id) } }, { $inc: { attempts: 1 } });
        this.deps.logger.warn({ failed, waiting: batch.length }, 'outbox: the bus still refuses events');
        return;
      }
    }
  }
}
