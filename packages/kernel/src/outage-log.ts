import type { Clock } from './clock';
import type { Logger } from './logger';

/** while a dependency refuses, how often the logs say so again (the metrics say it continuously) */
export const OUTAGE_REMINDER_MS = 60_000;

interface Outage {
  since: Date;
  remindedAt: number;
  /** operations refused since the outage began */
  refusals: number;
}

/**
 * A dependency (the store, the bus, another service) refusing, as the logs tell it: one warning when it starts
 * (with why), a reminder at most every OUTAGE_REMINDER_MS while it lasts, one line when it ends. Logging every
 * refused operation instead is a line per request or per timer tick for as long as the outage lasts; the
 * metrics, not the logs, are what alerts read.
 */
export class OutageLog {
  private outage: Outage | undefined;

  constructor(
    private readonly deps: { clock: Clock; logger: Logger },
    private readonly lines: { starts: string; lasts: string; ends: string },
  ) {}

  /** the outage under way, if any */
  get current(): Readonly<Outage> | undefined {
    return this.outage;
  }

  /** An operation refused: the first one of an outage is logged, with why. True when this one started it. */
  refused(err: unknown, fields: object = {}): boolean {
    if (this.outage) {
      this.outage.refusals++;
      return false;
    }
    const since = this.deps.clock.now();
    this.outage = { since, remindedAt: since.getTime(), refusals: 1 };
    this.deps.logger.warn({ err, ...fields }, this.lines.starts);
    return true;
  }

  /** At most one line per OUTAGE_REMINDER_MS while the outage lasts: since when, how many refusals, and `fields`. */
  async remind(fields: () => object | Promise<object> = () => ({})): Promise<void> {
    const outage = this.outage;
    const now = this.deps.clock.now().getTime();
    if (!outage || now - outage.remindedAt < OUTAGE_REMINDER_MS) return;
    outage.remindedAt = now;
    this.deps.logger.warn({ ...(await fields()), ...this.span(outage) }, this.lines.lasts);
  }

  /** The dependency answers again: the end of the outage under way is logged, if there is one. */
  ended(fields: object = {}): void {
    const outage = this.outage;
    if (!outage) return;
    this.outage = undefined;
    this.deps.logger.info({ ...fields, ...this.span(outage) }, this.lines.ends);
  }

  private span(outage: Outage) {
    const now = this.deps.clock.now().getTime();
    return {
      since: outage.since.toISOString(),
      outageSeconds: Math.round((now - outage.since.getTime()) / 1000),
      refusals: outage.refusals,
    };
  }
}
