import type { EventPayloads } from '@platform/contracts';
import {
  AckPolicy,
  type ConsumerMessages,
  connect,
  DeliverPolicy,
  type JsMsg,
  type NatsConnection,
  nanos,
  StorageType,
  StringCodec,
} from 'nats';
import type { Bus, Consumer, EventSubject } from './port';

const codec = StringCodec();
/** how long close() lets a connection drain before closing it outright */
const DRAIN_TIMEOUT_MS = 2_000;

export interface NatsBusOptions {
  url: string;
  /** connection name shown in the server's monitoring */
  name: string;
  /** errors from handlers and the connection, for the service's logger */
  onError?: (err: unknown, context: string) => void;
}

/** The bus on a real NATS server: core subjects for notifications, JetStream for durable streams. */
export async function createNatsBus(options: NatsBusOptions): Promise<Bus> {
  const nc: NatsConnection = await connect({
    servers: options.url,
    name: options.name,
    maxReconnectAttempts: -1,
    reconnectTimeWait: 500,
    waitOnFirstConnect: false,
  });
  const report = options.onError ?? (() => undefined);
  const reconnectListeners = new Set<() => void>();
  void (async () => {
    for await (const status of nc.status()) {
      if (status.type === 'reconnect') for (const listener of reconnectListeners) listener();
    }
  })().catch((err) => report(err, 'status'));
  const consumers = new Set<ConsumerMessages>();

  return {
    kind: 'nats',
    async publish<S extends EventSubject>(subject: S, payload: EventPayloads[S]) {
      nc.publish(subject, codec.encode(JSON.stringify(payload)));
    },
    subscribe(subject, handler) {
      const sub = nc.subscribe(subject, {
        callback: (err, msg) => {
          if (err) return report(err, `subscription ${subject}`);
          let payload: unknown;
          try {
            payload = JSON.parse(codec.decode(msg.data));
          } catch (parseError) {
            return report(parseError, `malformed message on ${subject}`);
          }
          Promise.resolve()
            .then(() => handler(payload))
            .catch((e) => report(e, `handler for ${subject}`));
        },
      });
      return () => sub.unsubscribe();
    },
    async ensureStream(stream) {
      const jsm = await nc.jetstreamManager();
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
    },
    async publishDurable<S extends EventSubject>(subject: S, payload: EventPayloads[S], id?: string) {
      await nc
        .jetstream()
        .publish(subject, codec.encode(JSON.stringify(payload)), id ? { msgID: id } : undefined);
    },
    async consumeDurable(consumerOptions): Promise<Consumer> {
      const jsm = await nc.jetstreamManager();
      await jsm.consumers.add(consumerOptions.stream, {
        durable_name: consumerOptions.durable,
        ack_policy: AckPolicy.Explicit,
        deliver_policy: DeliverPolicy.All,
        filter_subject: consumerOptions.filterSubject,
        ack_wait: nanos(30_000),
      });
      const consumer = await nc.jetstream().consumers.get(consumerOptions.stream, consumerOptions.durable);
      const messages = await consumer.consume({ max_messages: 512 });
      consumers.add(messages);
      const handle = async (m: JsMsg) => {
        try {
          await consumerOptions.handler({
            subject: m.subject,
            data: m.string(),
            deliveryCount: m.info.redeliveryCount,
          });
          m.ack();
        } catch (err) {
          report(err, `durable ${consumerOptions.durable}`);
          m.nak(consumerOptions.retryDelayMs ?? 1000);
        }
      };
      const limit = Math.max(1, consumerOptions.concurrency ?? 1);
      const inFlight = new Set<Promise<void>>();
      const loop = (async () => {
        try {
          for await (const m of messages) {
            const task: Promise<void> = handle(m).finally(() => inFlight.delete(task));
            inFlight.add(task);
            if (inFlight.size >= limit) await Promise.race(inFlight);
          }
        } finally {
          await Promise.all(inFlight);
        }
      })().catch((err) => report(err, `durable ${consumerOptions.durable} loop`));
      return {
        async stop() {
          await messages.close();
          // The server forgets this consumer's pull request only once it has read the unsubscription; until
          // then it hands new messages to an inbox nobody reads, and they come back only after ack_wait (30 s).
          await nc.flush().catch(() => undefined);
          consumers.delete(messages);
          await loop;
        },
      };
    },
    onReconnect(listener) {
      reconnectListeners.add(listener);
      return () => reconnectListeners.delete(listener);
    },
    async ping() {
      if (nc.isClosed()) throw new Error('NATS connection is closed');
      await nc.flush();
    },
    async close() {
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
