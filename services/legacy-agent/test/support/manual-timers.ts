import type { RetrainTimers } from '../../src/domain/timers';

/** Timers that fire only when the test moves time. */
export class ManualTimers implements RetrainTimers {
  private current = 0;
  private nextId = 1;
  private readonly due = new Map<number, { at: number; fn: () => void }>();

  now(): number {
    return this.current;
  }

  set(fn: () => void, ms: number): unknown {
    const id = this.nextId++;
    this.due.set(id, { at: this.current + ms, fn });
    return id;
  }

  clear(handle: unknown): void {
    this.due.delete(handle as number);
  }

  /** how many timers wait */
  get pending(): number {
    return this.due.size;
  }

  /** moves time on, firing every timer that falls due, in order */
  advance(ms: number): void {
    this.current += ms;
    const ready = [...this.due].filter(([, t]) => t.at <= this.current).sort((a, b) => a[1].at - b[1].at);
    for (const [id, t] of ready) {
      this.due.delete(id);
      t.fn();
    }
  }
}
