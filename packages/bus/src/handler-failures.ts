import type { BusReporting, DurableConsumerOptions, DurableMessage } from './port';

/** while a handler keeps failing, how often it is said again (as the kernel's OutageLog) */
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

/** A handler called through its bus: true once it returned, false when it threw (and that was said as below). */
export type ReportedHandler<M> = (message: M) => Promise<boolean>;

/** how a handler's failures are said: the first one's context, a reminder's, and what the end of them is about */
interface Wording {
  starts: string;
  lasts: string;
  ends: string;
}

/**
 * Failed handler calls since the last one that succeeded, said as the platform logs an outage: once when they start
 * (with why), at most once a minute while they last (how many, since when), once when a message is handled again. A
 * handler failing for an outage of what it writes to fails every message at every redelivery: a line each would be
 * 12,000 a minute for llm-quota's backlog, and saying nothing leaves an operator blind while usage stops moving.
 *
 * Only a call during which no other call failed ends them: with several messages handled at once, one handled while
 * others fail beside it (a duplicate, or a dead letter, while the store refuses writes) is no sign the handler works
 * again, and taken for one it was an end and a start said again for every message.
 */
function reported<M>(
  handler: (message: M) => void | Promise<void>,
  { starts, lasts, ends }: Wording,
  { report, clock }: BusReports,
): ReportedHandler<M> {
  let failing: { since: Date; remindedAt: number; failures: number } | undefined;
  /** failed calls ever: a call that returned sees from it whether another one failed meanwhile */
  let failedCalls = 0;
  const failed = (err: unknown) => {
    failedCalls++;
    const now = clock.now();
    if (!failing) {
      failing = { since: now, remindedAt: now.getTime(), failures: 1 };
      return report(err, starts);
    }
    failing.failures++;
    if (now.getTime() - failing.remindedAt < FAILURE_REMINDER_MS) return;
    failing.remindedAt = now.getTime();
    report(err, `${lasts}: ${failing.failures} failures since ${failing.since.toISOString()}`);
  };
  const handled = () => {
    if (!failing) return;
    const { since, failures } = failing;
    failing = undefined;
    const seconds = Math.round((clock.now().getTime() - since.getTime()) / 1000);
    report(
      new Error(
        `${ends} handles messages again, after ${failures} failures since ${since.toISOString()} (${seconds} s)`,
      ),
      ends,
    );
  };
  return async (message) => {
    const failedBefore = failedCalls;
    try {
      await handler(message);
    } catch (err) {
      failed(err);
      return false;
    }
    if (failedCalls === failedBefore) handled();
    return true;
  };
}

/** A durable consumer's handler, its failures said as above (a failed message is delivered again: the bus's part). */
export const reportedDurableHandler = (
  { durable, retryDelayMs = 1000, handler }: DurableConsumerOptions,
  reports: BusReports,
): ReportedHandler<DurableMessage> =>
  reported(
    handler,
    {
      starts: `durable ${durable}: its handler failed; each failed message is delivered again after ${retryDelayMs} ms, and failures are said again at most once a minute until one is handled`,
      lasts: `durable ${durable}: its handler still fails`,
      ends: `durable ${durable}`,
    },
    reports,
  );

/**
 * A plain subscription's handler, its failures said as above. The first one is said as the NATS bus always said each
 * (`handler for <subject>`): a notification fails for what its handler reads or writes being away, and a line for
 * each is a flood in the log as a durable's would be.
 */
export const reportedSubscriptionHandler = <M>(
  subject: string,
  handler: (message: M) => void | Promise<void>,
  reports: BusReports,
): ReportedHandler<M> =>
  reported(
    handler,
    {
      starts: `handler for ${subject}`,
      lasts: `handler for ${subject}: still fails`,
      ends: `handler for ${subject}`,
    },
    reports,
  );
