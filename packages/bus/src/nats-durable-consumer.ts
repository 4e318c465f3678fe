import {
  AckPolicy,
  type ConsumerMessages,
  DeliverPolicy,
  type JsMsg,
  type NatsConnection,
  nanos,
} from 'nats';
import { type BusReports, reportedDurableHandler } from './handler-failures';
import { type JetStream, JetStreamUnavailable } from './nats-jetstream';
import type { Consumer, DurableConsumerOptions, StreamOptions } from './port';

/**
 * What nats.js stops a consumer with (abort_on_missing_resource) when its stream or consumer is missing on the server,
 * as nats.js itself tells them apart: at a reconnection, after missed heartbeats, or in answer to a pull
 */
const MISSING_ON_SERVER = new Set([
  'stream not found',
  'consumer not found',
  'consumer deleted',
  'no responders',
]);

/** the longest wait between two attempts at making a durable consumer (as between attempts at the first connection) */
const RETRY_MAX_WAIT_MS = 5_000;

/** What a durable consumer needs from its bus */
export interface DurableConsumerBus extends BusReports {
  /** NATS as the logs say it (never with a secret) */
  server: string;
  jetstream: JetStream;
  /** the consumers pulling: the bus closes them when it is closed, and knows from them it may ask JetStream's API */
  pulling: Set<ConsumerMessages>;
  /** the stream as ensureStream was asked for it, made again with a consumer refused or lost */
  streamEnsured(name: string): StreamOptions | undefined;
  /** the connection, once there is one; it never comes when the bus is closed first */
  connection: Promise<NatsConnection>;
  isClosed(): boolean;
}

/** waits `ms`, or less once the function handed to `wake` is called (its consumer stopped) */
const pause = (ms: number, wake: (resolve: () => void) => void) =>
  new Promise<void>((resolve) => {
    wake(resolve);
    setTimeout(resolve, ms).unref();
  });

/** A durable consumer of the bus: started at once on `conn` when there is one and JetStream answers, else as below. */
export async function consumeDurable(
  bus: DurableConsumerBus,
  conn: NatsConnection | null,
  consumerOptions: DurableConsumerOptions,
): Promise<Consumer> {
  if (conn) {
    try {
      return await startConsumer(bus, conn, consumerOptions);
    } catch (err) {
      if (!(err instanceof JetStreamUnavailable)) throw err;
    }
  }
  // Made once connected and JetStream answers; stopping it first cancels it, at once, connected or not. Nobody
  // awaits it then, so a refusal (its stream not made yet, JetStream missing or still electing its leader) is
  // tried again, every 0.25 s doubling to 5 s, its stream first: given up, the service would run on without
  // consuming. JetStream missing is reported once, as what to fix; other refusals every twelfth attempt.
  let stopped = false;
  let wake: (() => void) | undefined;
  let cancel!: () => void;
  const cancelled = new Promise<null>((resolve) => {
    cancel = () => resolve(null);
  });
  const started = Promise.race([bus.connection, cancelled]).then(
    async (conn) => {
      for (let attempt = 0, wait = 250; conn && !stopped && !bus.isClosed(); attempt++) {
        try {
          const stream = attempt > 0 ? bus.streamEnsured(consumerOptions.stream) : undefined;
          return await startConsumer(bus, conn, consumerOptions, stream);
        } catch (err) {
          if (attempt % 12 === 0 && !(err instanceof JetStreamUnavailable))
            bus.report(
              err,
              `durable ${consumerOptions.durable} of ${consumerOptions.stream}: not made; retrying`,
            );
        }
        await pause(wait, (resolve) => {
          wake = resolve;
        });
        wait = Math.min(wait * 2, RETRY_MAX_WAIT_MS);
      }
      return null;
    },
    () => null,
  );
  return {
    async stop() {
      stopped = true;
      // a consumer still waiting for NATS stops now, not once its bus is closed (which comes after)
      cancel();
      wake?.();
      const consumer = await started;
      await consumer?.stop();
    },
  };
}

/**
 * Makes the durable consumer (one that exists with the same configuration is taken as it is) and pulls from it.
 * `stream` is made first when given: a consumer retried, or whose stream was lost.
 */
const pullFrom = async (
  bus: DurableConsumerBus,
  conn: NatsConnection,
  consumerOptions: DurableConsumerOptions,
  stream?: StreamOptions,
): Promise<ConsumerMessages> => {
  if (stream) await bus.jetstream.ensureStreamOn(conn, stream);
  const jsm = await bus.jetstream.managerOn(conn);
  await jsm.consumers.add(consumerOptions.stream, {
    durable_name: consumerOptions.durable,
    ack_policy: AckPolicy.Explicit,
    deliver_policy: DeliverPolicy.All,
    filter_subject: consumerOptions.filterSubject,
    ack_wait: nanos(30_000),
  });
  const consumer = await conn.jetstream().consumers.get(consumerOptions.stream, consumerOptions.durable);
  // By default nats.js waits, for ever, for a stream or consumer gone from the server to come back, and nothing
  // makes them again (a server back without its storage): stopped instead, the bus makes them again.
  const messages = await consumer.consume({ max_messages: 512, abort_on_missing_resource: true });
  bus.pulling.add(messages);
  return messages;
};

const startConsumer = async (
  bus: DurableConsumerBus,
  conn: NatsConnection,
  consumerOptions: DurableConsumerOptions,
  withStream?: StreamOptions,
): Promise<Consumer> => {
  const { report, server } = bus;
  const { stream, durable } = consumerOptions;
  let messages = await pullFrom(bus, conn, consumerOptions, withStream);
  let stopped = false;
  let wake: (() => void) | undefined;
  const retryDelayMs = consumerOptions.retryDelayMs ?? 1000;
  const handler = reportedDurableHandler(consumerOptions, bus);
  const handle = async (m: JsMsg) => {
    const ok = await handler({ subject: m.subject, data: m.string(), deliveryCount: m.info.redeliveryCount });
    if (ok) m.ack();
    else m.nak(retryDelayMs);
  };
  const limit = Math.max(1, consumerOptions.concurrency ?? 1);
  const inFlight = new Set<Promise<void>>();
  const drain = async (pulled: ConsumerMessages) => {
    try {
      for await (const m of pulled) {
        const task: Promise<void> = handle(m).finally(() => inFlight.delete(task));
        inFlight.add(task);
        if (inFlight.size >= limit) await Promise.race(inFlight);
      }
    } finally {
      bus.pulling.delete(pulled);
      await Promise.all(inFlight);
    }
  };
  /**
   * Consumes until stopped. A consumer stopped by nats.js because it or its stream is missing (deleted, or lost with
   * a server restarted on empty storage) is made again with its stream, as ensureStream was asked, tried every 0.25 s
   * doubling to 5 s: what the lost stream held unconsumed is gone with it, and what the gateway could not publish
   * meanwhile waits in its outbox.
   */
  const loop = (async () => {
    for (;;) {
      try {
        await drain(messages);
        return;
      } catch (err) {
        if (stopped || bus.isClosed()) return;
        if (!MISSING_ON_SERVER.has((err as Error).message)) throw err;
        // A pull answered by nobody on a server without JetStream (sent as the server went away, read by the one that
        // came back without -js): the bus says JetStream's absence once, and nothing was lost
        if ((err as Error).message !== 'no responders' || conn.info?.jetstream)
          report(
            new Error(
              `stream ${stream} or its durable consumer ${durable} is missing on NATS at ${server} (${(err as Error).message}): making them again; what a lost stream held unconsumed is lost with it`,
            ),
            `durable ${durable} of ${stream}`,
          );
      }
      for (let attempt = 1, wait = 250; ; attempt++) {
        await pause(wait, (resolve) => {
          wake = resolve;
        });
        if (stopped || bus.isClosed()) return;
        try {
          messages = await pullFrom(bus, conn, consumerOptions, bus.streamEnsured(stream));
          break;
        } catch (err) {
          if (attempt % 12 === 0 && !(err instanceof JetStreamUnavailable))
            report(err, `durable ${durable} of ${stream}: not made again; retrying`);
        }
        wait = Math.min(wait * 2, RETRY_MAX_WAIT_MS);
      }
      // Stopped while it was being made (stop() closed the one before): closed here, and read to its end by the drain
      // above, as stop() has it. nats.js ends a close only once what it pulled is read: left unread, it would stay
      // among the bus's consumers pulling, and the stop, which waits for this loop, would never end.
      if (stopped || bus.isClosed()) void messages.close();
    }
  })().catch((err) => report(err, `durable ${durable} loop`));
  return {
    async stop() {
      stopped = true;
      wake?.();
      await messages.close();
      // The server forgets this consumer's pull request only once it has read the unsubscription; until
      // then it hands new messages to an inbox nobody reads, and they come back only after ack_wait (30 s).
      await conn.flush().catch(() => undefined);
      await loop;
    },
  };
};
