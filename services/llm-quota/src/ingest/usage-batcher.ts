import type { CountableEvent } from './intake';
import type { Outcome, UsageWriter } from './usage-writer';

interface Waiting {
  event: CountableEvent;
  resolve(outcome: Outcome): void;
  reject(err: unknown): void;
}

/**
 * Gathers events handled at the same time into batches for the writer: one batch at a time, the
 * next made of everything that arrived meanwhile (up to `maxBatch`). Alone, an event is written at
 * once; under load, batches grow and the writes per event shrink. A batch starts at most once per
 * `lingerMs` (unless `maxBatch` events wait): a steady stream of events is counted in batches of
 * `lingerMs` worth of events instead of one or two at a time, each batch costing the same dozen writes
 * (and markers on the counters) whatever its size.
 */
export class UsageBatcher {
  private queue: Waiting[] = [];
  private running: Promise<void> | null = null;
  private lastStart = Number.NEGATIVE_INFINITY;

  constructor(
    private readonly writer: Pick<UsageWriter, 'apply'>,
    private readonly maxBatch: number,
    private readonly onBatch?: (size: number) => void,
    private readonly lingerMs = 0,
  ) {}

  /** Resolves once the event is durably counted (or known as a duplicate, or to be retried). */
  add(event: CountableEvent): Promise<Outcome> {
    return new Promise<Outcome>((resolve, reject) => {
      this.queue.push({ event, resolve, reject });
      if (!this.running) this.running = this.drain();
    });
  }

  /** Waits for everything queued so far. */
  async idle(): Promise<void> {
    while (this.running) await this.running;
  }

  private async drain(): Promise<void> {
    // Let the handlers of messages already received add their events first.
    await new Promise<void>((resolve) => setImmediate(resolve));
    try {
      while (this.queue.length) {
        const wait = this.lastStart + this.lingerMs - performance.now();
        if (wait > 0 && this.queue.length < this.maxBatch) {
          await new Promise<void>((resolve) => setTimeout(resolve, wait));
        }
        this.lastStart = performance.now();
        const taken = this.queue.splice(0, this.maxBatch);
        await this.write(taken);
      }
    } finally {
      this.running = null;
    }
  }

  private async write(taken: Waiting[]): Promise<void> {
    // One event id once per batch; its other deliveries share the first one's fate.
    const first = new Map<string, CountableEvent>();
    for (const { event } of taken) if (!first.has(event.id)) first.set(event.id, event);
    let outcomes: Map<string, Outcome>;
    try {
      outcomes = await this.writer.apply([...first.values()]);
      this.onBatch?.(first.size);
    } catch (err) {
      for (const waiting of taken) waiting.reject(err);
      return;
    }
    for (const waiting of taken) {
      const outcome = outcomes.get(waiting.event.id) ?? 'retry';
      const isFirst = first.get(waiting.event.id) === waiting.event;
      waiting.resolve(isFirst || outcome === 'retry' ? outcome : 'duplicate');
      if (isFirst) first.delete(waiting.event.id);
    }
  }
}
