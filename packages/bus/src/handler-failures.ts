import type { BusReporting } from './port';

/** while a durable's handler keeps failing, how often it is said again (as the kernel's OutageLog) */
const FAILURE_REMINDER_MS = 60_000;

/** What a bus reports to, and the time that paces and dates its reports: `BusReporting` with the defaults filled in. */
export interface BusReports {
  report: (err: unknown, context: string) => void;
  clock: { now(): Date };
}

export const busReports = (options: BusReporting): BusReports => ({
  report: options.onError ?? (() => undefined),
  clock: options.clock ?? { now: () => new Date() },
});

/** What a durable consumer tells of each message its handler was given. */
export interface HandlerFailures {
  failed(err: unknown): void;
  handled(): void;
}

/**
 * Failed handler calls since the last one that succeeded, said as the platform logs an outage: once when they start
 * (with why), at most once a minute while they last (how many, since when), once when a message is handled again. A
 * handler failing for an outage of what it writes to fails every message at every redelivery: a line each would be
 * 12,000 a minute for llm-quota's backlog, and saying nothing leaves an operator blind while usage stops moving.
 */
export function handlerFailures(
  durable: string,
  retryDelayMs: number,
  { report, clock }: BusReports,
): HandlerFailures {
  let failing: { since: Date; remindedAt: number; failures: number } | undefined;
  return {
    failed(err) {
      const now = clock.now();
      if (!failing) {
        failing = { since: now, remindedAt: now.getTime(), failures: 1 };
        return report(
          err,
          `durable ${durable}: its handler failed; each failed message is delivered again after ${retryDelayMs} ms, and failures are said again at most once a minute until one is handled`,
        );
      }
      failing.failures++;
      if (now.getTime() - failing.remindedAt < FAILURE_REMINDER_MS) return;
      failing.remindedAt = now.getTime();
      report(
        err,
        `durable ${durable}: its handler still fails: ${failing.failures} failures since ${failing.since.toISOString()}`,
      );
    },
    handled() {
      if (!failing) return;
      const { since, failures } = failing;
      failing = undefined;
      const seconds = Math.round((clock.now().getTime() - since.getTime()) / 1000);
      report(
        new Error(
          `durable ${durable} handles messages again, after ${failures} failures since ${since.toISOString()} (${seconds} s)`,
        ),
        `durable ${durable}`,
      );
    },
  };
}
