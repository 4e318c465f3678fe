import type { EventPayloads } from '@platform/contracts';
import {
  AckPolicy,
  type ConsumerMessages,
  connect,
  DeliverPolicy,
  ErrorCode,
  Events,
  type JetStreamManager,
  type JsMsg,
  type NatsConnection,
  type NatsError,
  nanos,
  type Status,
  StorageType,
  StringCodec,
  type Subscription,
} from 'nats';
import {
  credentialsRefused,
  type NatsServerOptions,
  natsConnectionOptions,
  natsUrlForLogs,
} from './nats-connection';
import type { Bus, Consumer, DurableConsumerOptions, EventSubject, StreamOptions } from './port';

const codec = StringCodec();
/** how long close() lets a connection drain before closing it outright */
const DRAIN_TIMEOUT_MS = 2_000;

export interface NatsBusOptions extends NatsServerOptions {
  /** connection name shown in the server's monitoring: the service's name (`llm-gateway`) */
  name: string;
  /**
   * where the answers to this connection's requests come (JetStream's acknowledgements and API replies, pulled
   * messages): `<inboxPrefix>.<unique id>`. Default `_INBOX.<name>`, so NATS can let each service's user read its
   * own inbox alone (deploy/nats/authorization.conf, decision 0104).
   */
  inboxPrefix?: string;
  /** errors from handlers and the connection, for the service's logger */
  onError?: (err: unknown, context: string) => void;
  /** the time that paces a failing handler's reports and dates them (default: the system's) */
  clock?: { now(): Date };
}

/** `_INBOX.<name>`, with anything a subject token cannot hold (dots, wildcards, spaces) as `_` */
const serviceInbox = (name: string): string => `_INBOX.${name.replace(/[^A-Za-z0-9_-]/g, '_') || '_'}`;

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

/** while a durable's handler keeps failing, how often it is said again (as the kernel's OutageLog) */
const FAILURE_REMINDER_MS = 60_000;

/** the longest wait between two attempts at the first connection */
const FIRST_CONNECT_MAX_WAIT_MS = 5_000;
/** core publications kept until the first connection (as nats.js keeps them while it reconnects) */
const EARLY_PUBLICATIONS_MAX = 10_000;

/** a subscription, made on the connection once there is one */
interface SubscriptionEntry {
  subject: string;
  handler: (payload: unknown) => void | Promise<void>;
  sub?: Subscription;
}

class NotConnected extends Error {
  constructor(why?: string) {
    super(why ? `NATS is not connected yet: ${why}` : 'NATS is not connected yet');
  }
}

/**
 * NATS answers, but not with JetStream (nats-server started without -js, or an account without it): durable work
 * waits for it, as it waits for NATS. What the server said, when it said something: else nothing answered.
 */
class JetStreamUnavailable extends Error {
  constructor(server: string, said?: string) {
    super(
      said
        ? `JetStream is not available on ${server}: ${said}`
        : `JetStream is not enabled on ${server}: start nats-server with -js`,
    );
  }
}

/** Why an attempt to connect failed, as the logs and /readyz say it (never with a secret). */
const connectFailure = (err: unknown): string => {
  // nats-server quotes its errors: 'Authorization Violation'
  const message = (err instanceof Error ? err.message : String(err)).replace(/^'(.*)'$/, '$1');
  return credentialsRefused(err) ? `NATS refused the credentials (${message})` : message;
};

/** What an asynchronous error from the server means: a refused permission, or refused credentials. */
const serverError = (status: Status): Error => {
  const refused = status.permissionContext;
  if (refused) {
    return new Error(
      `NATS refused this user the permission to ${refused.operation} "${refused.subject}" (permissions violation)`,
    );
  }
  return new Error(
    credentialsRefused({ code: status.data })
      ? `NATS refused the credentials (${status.data}); trying again`
      : `NATS: ${status.data}`,
  );
};

/**
 * The bus on a real NATS server: core subjects for notifications, JetStream for durable streams.
 *
 * A service starts whether NATS is there or not (decision 0038: a NATS outage degrades, it never keeps
 * every instance down, and a pod restarted during one must come up too). When the first attempt fails the
 * bus keeps trying in the background, every 0.25 s doubling to 5 s. Until then: core publications wait in
 * memory (up to 10,000) and go out on connection, subscriptions, streams and durable consumers are made
 * on connection, a durable publication fails at once (the gateway's outbox keeps the event), and `ping`
 * fails (readiness reports it, with the reason: refused credentials are named). Reconnect listeners are called
 * once connected, to reconcile. Credentials refused at a reconnection (rotated on the server first) do not
 * end the connection: it keeps trying, as for an outage. Nothing logged or thrown carries a password.
 *
 * A NATS without JetStream (nats-server without -js) degrades the same way, said once as what to fix: a stream is
 * made, and a durable consumer started, once JetStream answers (the consumer keeps trying, its stream first); a
 * durable publication fails saying why; `ping` fails with the same reason. A server restarted with -js on the same
 * address is taken up without a restart. JetStream lost again later (restarted without -js) is said again, once.
 *
 * A running durable consumer whose stream or consumer goes missing (deleted, or lost with a server restarted on empty
 * storage: nats.js finds it at the reconnection or when a pull is refused) is made again with its stream, as
 * ensureStream was asked, and consumes on without a restart; it is said once per loss. Only the bus that ensured the
 * stream (llm-quota's) makes it: a publisher's durable publications are refused until then, and its outbox keeps them.
 *
 * A durable handler's failures are reported as the platform logs an outage: once when they start (with why), at most
 * once a minute while they last (how many, since when), once when a message is handled again.
 */
export async function createNatsBus(options: NatsBusOptions): Promise<Bus> {
  const report = options.onError ?? (() => undefined);
  const clock = options.clock ?? { now: () => new Date() };
  const server = natsUrlForLogs(options.url);
  const connectionOptions = natsConnectionOptions(options);
  /** why the last attempt at the first connection failed */
  let lastFailure: string | undefined;
  const reconnectListeners = new Set<() => void>();
  const consumers = new Set<ConsumerMessages>();
  const subscriptions = new Set<SubscriptionEntry>();
  const earlyPublications: Array<{ subject: string; data: Uint8Array }> = [];
  const earlyStreams: StreamOptions[] = [];
  /**
   * every stream ensured, by name: a durable consumer makes its own again when it was refused (ensured while NATS or
   * its JetStream was away) or lost (the server back on empty storage)
   */
  const streamsEnsured = new Map<string, StreamOptions>();
  /** why JetStream cannot be used, since a call found it missing and until one finds it back */
  let jetstreamMissing: JetStreamUnavailable | undefined;
  let nc: NatsConnection | null = null;
  let closed = false;
  let connected!: (conn: NatsConnection) => void;
  let neverConnected!: (err: Error) => void;
  const connection = new Promise<NatsConnection>((resolve, reject) => {
    connected = resolve;
    neverConnected = reject;
  });
  connection.catch(() => undefined);

  const inboxPrefix = options.inboxPrefix ?? serviceInbox(options.name);
  const open = () =>
    connect({
      ...connectionOptions,
      name: options.name,
      inboxPrefix,
      maxReconnectAttempts: -1,
      reconnectTimeWait: 500,
      // by default nats.js gives up for good after the same credentials are refused twice
      ignoreAuthErrorAbort: true,
      waitOnFirstConnect: false,
      // a server that does not answer at all (not one that refuses) holds a start this long, not 20 s
      timeout: 5_000,
    });

  const subscribeOn = (conn: NatsConnection, entry: SubscriptionEntry) => {
    entry.sub = conn.subscribe(entry.subject, {
      callback: (err, msg) => {
        if (err) return report(err, `subscription ${entry.subject}`);
        let payload: unknown;
        try {
          payload = JSON.parse(codec.decode(msg.data));
        } catch (parseError) {
          return report(parseError, `malformed message on ${entry.subject}`);
        }
        Promise.resolve()
          .then(() => entry.handler(payload))
          .catch((e) => report(e, `handler for ${entry.subject}`));
      },
    });
  };

  /**
   * What to fix, reported once per time JetStream is missing: callers that keep trying (consumers, an outbox) would
   * otherwise say it at every attempt.
   */
  const jetstreamIsMissing = (said?: string): JetStreamUnavailable => {
    const missing = new JetStreamUnavailable(server, said);
    if (!jetstreamMissing) report(missing, `NATS at ${server}`);
    jetstreamMissing = missing;
    return missing;
  };

  /** JetStream's API on the connection; without JetStream nats.js throws a bare "503", thrown here as what to fix */
  const jetstreamManagerOn = async (conn: NatsConnection): Promise<JetStreamManager> => {
    try {
      const jsm = await conn.jetstreamManager();
      jetstreamMissing = undefined;
      return jsm;
    } catch (err) {
      if ((err as NatsError).code !== ErrorCode.JetStreamNotEnabled) throw err;
      throw jetstreamIsMissing((err as NatsError).api_error?.description);
    }
  };

  const ensureStreamOn = async (conn: NatsConnection, stream: StreamOptions) => {
    const jsm = await jetstreamManagerOn(conn);
    try {
      await jsm.streams.info(stream.name);
    } catch {
      await jsm.streams.add({
        name: stream.name,
        subjects: stream.subjects,
        storage: StorageType.File,
        max_age: nanos(stream.maxAgeMs ?? 0),
        duplicate_window: nanos(stream.duplicateWindowMs ?? 2 * 60_000),
      });
    }
  };

  /**
   * Calls every reconnect listener; one that throws is reported. Thrown out of here, it ended the status loop (no
   * later reconnection told) or, at a late first connection, had the connection opened again, and again.
   */
  const tellReconnected = () => {
    for (const listener of reconnectListeners) {
      try {
        listener();
      } catch (err) {
        report(err, 'reconnect listener');
      }
    }
  };

  /** takes the connection into use: what waited for it first, then the callers */
  const adopt = async (conn: NatsConnection, late: boolean) => {
    void (async () => {
      // refused credentials are said once per time away, not at every attempt to reconnect
      let refusalReported = false;
      for await (const status of conn.status()) {
        if (status.type === Events.Reconnect) {
          refusalReported = false;
          tellReconnected();
          // A running consumer asks JetStream's API no more: a server back without JetStream is said here, once, as at
          // the start. Whatever else fails this question is the consumers' to retry (nats.js does, every 30 s).
          if (consumers.size > 0) void jetstreamManagerOn(conn).catch(() => undefined);
        } else if (status.type === Events.Error) {
          // a refused subscription is reported by the subscription itself
          if (status.permissionContext?.operation === 'subscription') continue;
          const refusal = credentialsRefused({ code: status.data });
          if (refusal && refusalReported) continue;
          refusalReported ||= refusal;
          report(serverError(status), `NATS at ${server}`);
        }
      }
    })().catch((err) => report(err, 'status'));
    for (let stream = earlyStreams.shift(); stream; stream = earlyStreams.shift()) {
      const name = stream.name;
      // JetStream missing is reported once, and its consumers make the stream once it is there
      await ensureStreamOn(conn, stream).catch(
        (err) => err instanceof JetStreamUnavailable || report(err, `stream ${name}`),
      );
    }
    for (const entry of subscriptions) subscribeOn(conn, entry);
    for (const { subject, data } of earlyPublications.splice(0)) conn.publish(subject, data);
    nc = conn;
    connected(conn);
    if (late) tellReconnected();
  };

  // the first attempt is awaited (a reachable NATS is connected before the service goes on); later ones are not
  try {
    await adopt(await open(), false);
  } catch (err) {
    lastFailure = connectFailure(err);
    report(err, `connect to ${server}: ${lastFailure}; retrying in the background`);
    void (async () => {
      let wait = 250;
      for (let attempt = 1; !closed; attempt++) {
        await new Promise((resolve) => setTimeout(resolve, wait).unref());
        wait = Math.min(wait * 2, FIRST_CONNECT_MAX_WAIT_MS);
        if (closed) break;
        try {
          const conn = await open();
          if (closed) {
            await conn.close();
            break;
          }
          await adopt(conn, true);
          return;
        } catch (retryError) {
          lastFailure = connectFailure(retryError);
          if (attempt % 12 === 0) report(retryError, `connect to ${server}: ${lastFailure}; still retrying`);
        }
      }
      neverConnected(new Error('the bus was closed before NATS was reached'));
    })();
  }

  /** waits `ms`, or less once the function handed to `wake` is called (its consumer stopped) */
  const pause = (ms: number, wake: (resolve: () => void) => void) =>
    new Promise<void>((resolve) => {
      wake(resolve);
      setTimeout(resolve, ms).unref();
    });

  /**
   * Makes the durable consumer (one that exists with the same configuration is taken as it is) and pulls from it.
   * `stream` is made first when given: a consumer retried, or whose stream was lost.
   */
  const pullFrom = async (
    conn: NatsConnection,
    consumerOptions: DurableConsumerOptions,
    stream?: StreamOptions,
  ): Promise<ConsumerMessages> => {
    if (stream) await ensureStreamOn(conn, stream);
    const jsm = await jetstreamManagerOn(conn);
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
    consumers.add(messages);
    return messages;
  };

  const startConsumer = async (
    conn: NatsConnection,
    consumerOptions: DurableConsumerOptions,
    withStream?: StreamOptions,
  ): Promise<Consumer> => {
    const { stream, durable } = consumerOptions;
    let messages = await pullFrom(conn, consumerOptions, withStream);
    let stopped = false;
    let wake: (() => void) | undefined;
    const retryDelayMs = consumerOptions.retryDelayMs ?? 1000;
    /**
     * Failed handler calls since the last one that succeeded. Said once when they start (with why), at most once a
     * minute while they last, once when a message is handled again: a handler failing for an outage of what it writes
     * to fails every message at every redelivery, which was a line each (12,000 a minute for llm-quota's backlog).
     */
    let failing: { since: Date; remindedAt: number; failures: number } | undefined;
    const failed = (err: unknown) => {
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
    };
    const handled = () => {
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
    };
    const handle = async (m: JsMsg) => {
      try {
        await consumerOptions.handler({
          subject: m.subject,
          data: m.string(),
          deliveryCount: m.info.redeliveryCount,
        });
      } catch (err) {
        failed(err);
        return m.nak(retryDelayMs);
      }
      m.ack();
      handled();
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
        consumers.delete(pulled);
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
          if (stopped || closed) return;
          if (!MISSING_ON_SERVER.has((err as Error).message)) throw err;
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
          if (stopped || closed) return;
          try {
            messages = await pullFrom(conn, consumerOptions, streamsEnsured.get(stream));
            break;
          } catch (err) {
            if (attempt % 12 === 0 && !(err instanceof JetStreamUnavailable))
              report(err, `durable ${durable} of ${stream}: not made again; retrying`);
          }
          wait = Math.min(wait * 2, FIRST_CONNECT_MAX_WAIT_MS);
        }
        // stopped while it was being made
        if (stopped || closed) return messages.close();
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

  return {
    kind: 'nats',
    async publish<S extends EventSubject>(subject: S, payload: EventPayloads[S]) {
      const data = codec.encode(JSON.stringify(payload));
      if (nc) return nc.publish(subject, data);
      if (earlyPublications.length >= EARLY_PUBLICATIONS_MAX) {
        earlyPublications.shift();
        report(new NotConnected(), `publish ${subject}: the oldest waiting publication was dropped`);
      }
      earlyPublications.push({ subject, data });
    },
    subscribe(subject, handler) {
      const entry: SubscriptionEntry = { subject, handler };
      subscriptions.add(entry);
      if (nc) subscribeOn(nc, entry);
      return () => {
        subscriptions.delete(entry);
        entry.sub?.unsubscribe();
      };
    },
    async ensureStream(stream) {
      streamsEnsured.set(stream.name, stream);
      if (nc) {
        try {
          return await ensureStreamOn(nc, stream);
        } catch (err) {
          if (!(err instanceof JetStreamUnavailable)) throw err;
          // made by its consumers once JetStream answers
          return;
        }
      }
      earlyStreams.push(stream);
    },
    async publishDurable<S extends EventSubject>(subject: S, payload: EventPayloads[S], id?: string) {
      const conn = nc;
      if (!conn) throw new NotConnected();
      try {
        await conn
          .jetstream()
          .publish(subject, codec.encode(JSON.stringify(payload)), id ? { msgID: id } : undefined);
        jetstreamMissing = undefined;
      } catch (err) {
        if ((err as NatsError).code !== ErrorCode.NoResponders) throw err;
        // Nobody answered: the server has no JetStream, which its INFO tells (asking JetStream's API needs a permission
        // the gateway's user is not given, deploy/nats/authorization.conf), or no stream takes the subject yet.
        if (!conn.info?.jetstream) throw jetstreamIsMissing();
        jetstreamMissing = undefined;
        throw err;
      }
    },
    async consumeDurable(consumerOptions): Promise<Consumer> {
      if (nc) {
        try {
          return await startConsumer(nc, consumerOptions);
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
      const started = Promise.race([connection, cancelled]).then(
        async (conn) => {
          for (let attempt = 0, wait = 250; conn && !stopped && !closed; attempt++) {
            try {
              const stream = attempt > 0 ? streamsEnsured.get(consumerOptions.stream) : undefined;
              return await startConsumer(conn, consumerOptions, stream);
            } catch (err) {
              if (attempt % 12 === 0 && !(err instanceof JetStreamUnavailable))
                report(
                  err,
                  `durable ${consumerOptions.durable} of ${consumerOptions.stream}: not made; retrying`,
                );
            }
            await pause(wait, (resolve) => {
              wake = resolve;
            });
            wait = Math.min(wait * 2, FIRST_CONNECT_MAX_WAIT_MS);
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
    },
    onReconnect(listener) {
      reconnectListeners.add(listener);
      return () => reconnectListeners.delete(listener);
    },
    async ping() {
      if (!nc) throw new NotConnected(lastFailure);
      if (nc.isClosed()) throw new Error('NATS connection is closed');
      await nc.flush();
      // JetStream may be back without a reconnection (enabled by a configuration reload, a cluster's leader elected):
      // a bus whose consumers run may ask, the others are told by their next durable publication
      if (jetstreamMissing && consumers.size > 0) await jetstreamManagerOn(nc);
      else if (jetstreamMissing) throw jetstreamMissing;
    },
    async close() {
      closed = true;
      if (!nc) {
        // consumers still waiting for the connection give up now, not at the retry loop's next wake-up
        neverConnected(new Error('the bus was closed before NATS was reached'));
        return;
      }
      for (const messages of consumers) await messages.close().catch(() => undefined);
      if (nc.isClosed()) return;
      // Drain delivers what is pending, but a connection that is away (reconnecting, or its server gone)
      // cannot: past a short wait it is closed outright, else its reconnect loop and heartbeat timers
      // would keep the process alive for ever.
      let timer: NodeJS.Timeout | undefined;
      const waited = new Promise<void>((resolve) => {
        timer = setTimeout(resolve, DRAIN_TIMEOUT_MS);
      });
      await Promise.race([nc.drain().catch(() => undefined), waited]);
      clearTimeout(timer);
      if (!nc.isClosed()) await nc.close().catch(() => undefined);
    },
  };
}
