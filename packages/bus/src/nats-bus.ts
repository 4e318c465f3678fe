import type { EventPayloads } from '@platform/contracts';
import {
  type ConsumerMessages,
  connect,
  Events,
  type NatsConnection,
  type Status,
  StringCodec,
  type Subscription,
} from 'nats';
import { type ReportedHandler, reportedSubscriptionHandler } from './handler-failures';
import {
  credentialsRefused,
  type NatsServerOptions,
  natsConnectionOptions,
  natsUrlForLogs,
} from './nats-connection';
import { consumeDurable, type DurableConsumerBus } from './nats-durable-consumer';
import { JetStreamUnavailable, jetstreamOf } from './nats-jetstream';
import type { Bus, EventSubject, StreamOptions } from './port';

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

/** the longest wait between two attempts at the first connection */
const FIRST_CONNECT_MAX_WAIT_MS = 5_000;
/** core publications kept until the first connection (as nats.js keeps them while it reconnects) */
const EARLY_PUBLICATIONS_MAX = 10_000;

/** a subscription, made on the connection once there is one */
interface SubscriptionEntry {
  subject: string;
  /** its handler, its failures said as an outage (handler-failures.ts) */
  handler: ReportedHandler<unknown>;
  sub?: Subscription;
}

class NotConnected extends Error {
  constructor(why?: string) {
    super(why ? `NATS is not connected yet: ${why}` : 'NATS is not connected yet');
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
  const jetstream = jetstreamOf(server, report);
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
        void entry.handler(payload);
      },
    });
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
          if (consumers.size > 0) void jetstream.managerOn(conn).catch(() => undefined);
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
      await jetstream
        .ensureStreamOn(conn, stream)
        .catch((err) => err instanceof JetStreamUnavailable || report(err, `stream ${name}`));
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

  const durables: DurableConsumerBus = {
    server,
    report,
    clock,
    jetstream,
    pulling: consumers,
    streamEnsured: (name) => streamsEnsured.get(name),
    connection,
    isClosed: () => closed,
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
      const entry: SubscriptionEntry = {
        subject,
        handler: reportedSubscriptionHandler(subject, handler, { report, clock }),
      };
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
          return await jetstream.ensureStreamOn(nc, stream);
        } catch (err) {
          if (!(err instanceof JetStreamUnavailable)) throw err;
          // made by its consumers once JetStream answers
          return;
        }
      }
      earlyStreams.push(stream);
    },
    async publishDurable<S extends EventSubject>(subject: S, payload: EventPayloads[S], id?: string) {
      if (!nc) throw new NotConnected();
      await jetstream.publishOn(nc, subject, codec.encode(JSON.stringify(payload)), id);
    },
    consumeDurable(consumerOptions) {
      return consumeDurable(durables, nc, consumerOptions);
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
      const missing = jetstream.missing();
      if (missing && consumers.size > 0) await jetstream.managerOn(nc);
      else if (missing) throw missing;
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
