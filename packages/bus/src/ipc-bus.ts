import type { EventPayloads } from '@platform/contracts';
import {
  busReports,
  type ReportedHandler,
  reportedDurableHandler,
  reportedSubscriptionHandler,
} from './handler-failures';
import { createInProcessBus } from './in-process-bus';
import type {
  Bus,
  BusReporting,
  Consumer,
  DurableConsumerOptions,
  DurableMessage,
  EventSubject,
  StreamOptions,
} from './port';

/**
 * The bus of `pnpm start` when each service runs in its own process and no NATS is configured: the
 * parent process holds one in-process bus (the hub) and every child reaches it over its Node IPC
 * channel. Core subjects fan out to every child subscribed; durable streams are the in-process bus's
 * queues, kept in the parent, so a child that restarts finds its backlog waiting (docs/decisions/0037).
 */
export interface IpcChannel {
  send(message: IpcBusMessage): void;
  onMessage(listener: (message: unknown) => void): () => void;
}

type ChildToHub =
  | { bus: 'sub'; pattern: string }
  | { bus: 'unsub'; pattern: string }
  | { bus: 'pub'; subject: string; data: string }
  | { bus: 'call'; id: number; op: 'ensureStream'; options: StreamOptions }
  | { bus: 'call'; id: number; op: 'publishDurable'; subject: string; data: string; msgId?: string }
  | { bus: 'call'; id: number; op: 'consume'; consumerId: number; options: ConsumeOptions }
  | { bus: 'call'; id: number; op: 'stopConsumer'; consumerId: number }
  | { bus: 'call'; id: number; op: 'ping' }
  | { bus: 'ack'; deliveryId: number; ok: boolean };

type HubToChild =
  | { bus: 'msg'; pattern: string; data: string }
  | { bus: 'result'; id: number; error?: string }
  | { bus: 'deliver'; consumerId: number; deliveryId: number; message: DurableMessage };

export type IpcBusMessage = ChildToHub | HubToChild | { bus: 'batch'; messages: IpcBusMessage[] };

type ConsumeOptions = Omit<DurableConsumerOptions, 'handler'>;
type Call = Extract<ChildToHub, { bus: 'call' }>;
/** a call without its id (distributes over the union, unlike Omit) */
type CallRequest = Call extends infer C ? (C extends Call ? Omit<C, 'id'> : never) : never;

const isBusMessage = (m: unknown): m is IpcBusMessage =>
  typeof m === 'object' && m !== null && typeof (m as { bus?: unknown }).bus === 'string';

/**
 * What one turn of the event loop sends over `channel` leaves as one IPC message (`batch`), and batches
 * received are handed on message by message, in order. An outbox group of N usage events then costs the
 * gateway, the hub and llm-quota one IPC write and read each way instead of N: each message is a
 * serialisation and a system call on both ends (decision 0083). What is sent waits at most for the end of
 * the loop's turn (`setImmediate`).
 */
export function batchingChannel(channel: IpcChannel): IpcChannel {
  let queued: IpcBusMessage[] = [];
  const flush = () => {
    const messages = queued;
    queued = [];
    try {
      channel.send(messages.length === 1 ? messages[0]! : { bus: 'batch', messages });
    } catch {
      // the channel closed: the process at its other end is gone, and so is what it was owed
    }
  };
  return {
    send(message) {
      if (queued.length === 0) setImmediate(flush);
      queued.push(message);
    },
    onMessage: (listener) =>
      channel.onMessage((raw) => {
        if (isBusMessage(raw) && raw.bus === 'batch') for (const m of raw.messages) listener(m);
        else listener(raw);
      }),
  };
}

/** The channel of a process started with an IPC channel (child_process.fork), batching what it sends. */
export function parentProcessChannel(): IpcChannel {
  if (!process.send) throw new Error('this process has no IPC channel to a parent');
  return batchingChannel({
    send: (message) => {
      if (process.connected) process.send!(message);
    },
    onMessage: (listener) => {
      process.on('message', listener);
      return () => process.off('message', listener);
    },
  });
}

/**
 * A child's side: the Bus port, each operation a message to the hub. Handlers, durable or not, run here, so their
 * failures are reported here, to `onError` (the service's log), as the NATS bus reports them: the hub only redelivers.
 */
export function createIpcBusClient(channel: IpcChannel, reporting: BusReporting = {}): Bus {
  const reports = busReports(reporting);
  /** each subscription's handler, given the payload's JSON */
  const handlers = new Map<string, Set<ReportedHandler<string>>>();
  const calls = new Map<number, { resolve: () => void; reject: (err: Error) => void }>();
  const consumers = new Map<number, ReportedHandler<DurableMessage>>();
  let nextId = 1;
  let closed = false;

  const call = (message: CallRequest) =>
    new Promise<void>((resolve, reject) => {
      if (closed) return reject(new Error('bus is closed'));
      const id = nextId++;
      calls.set(id, { resolve, reject });
      try {
        channel.send({ ...message, id } as ChildToHub);
      } catch (err) {
        calls.delete(id);
        reject(err instanceof Error ? err : new Error(String(err)));
      }
    });

  const stopListening = channel.onMessage((raw) => {
    if (!isBusMessage(raw)) return;
    const message = raw as HubToChild;
    if (message.bus === 'result') {
      const pending = calls.get(message.id);
      calls.delete(message.id);
      if (message.error) pending?.reject(new Error(message.error));
      else pending?.resolve();
    } else if (message.bus === 'msg') {
      for (const handler of handlers.get(message.pattern) ?? []) void handler(message.data);
    } else if (message.bus === 'deliver') {
      const handle = consumers.get(message.consumerId);
      const answer = (ok: boolean) => {
        if (!closed) channel.send({ bus: 'ack', deliveryId: message.deliveryId, ok });
      };
      if (!handle) return answer(false);
      void handle(message.message).then(answer);
    }
  });

  return {
    kind: 'ipc',
    async publish<S extends EventSubject>(subject: S, payload: EventPayloads[S]) {
      if (closed) throw new Error('bus is closed');
      channel.send({ bus: 'pub', subject, data: JSON.stringify(payload) });
    },
    subscribe(subject, handler) {
      let set = handlers.get(subject);
      if (!set) {
        set = new Set();
        handlers.set(subject, set);
        channel.send({ bus: 'sub', pattern: subject });
      }
      const reported = reportedSubscriptionHandler(
        subject,
        (data: string) => handler(JSON.parse(data)),
        reports,
      );
      set.add(reported);
      return () => {
        if (!set.delete(reported) || set.size > 0) return;
        handlers.delete(subject);
        if (!closed) channel.send({ bus: 'unsub', pattern: subject });
      };
    },
    ensureStream: (options) => call({ bus: 'call', op: 'ensureStream', options }),
    publishDurable: <S extends EventSubject>(subject: S, payload: EventPayloads[S], msgId?: string) =>
      call({ bus: 'call', op: 'publishDurable', subject, data: JSON.stringify(payload), msgId }),
    async consumeDurable(options): Promise<Consumer> {
      const consumerId = nextId++;
      consumers.set(consumerId, reportedDurableHandler(options, reports));
      const { handler: _handler, ...rest } = options;
      await call({ bus: 'call', op: 'consume', consumerId, options: rest });
      return {
        stop: async () => {
          consumers.delete(consumerId);
          if (!closed) await call({ bus: 'call', op: 'stopConsumer', consumerId });
        },
      };
    },
    onReconnect() {
      // the channel to the parent never reconnects: when it closes, the child shuts down
      return () => undefined;
    },
    ping: () => call({ bus: 'call', op: 'ping' }),
    async close() {
      closed = true;
      stopListening();
      handlers.clear();
      consumers.clear();
      for (const pending of calls.values()) pending.reject(new Error('bus is closed'));
      calls.clear();
    },
  };
}

export interface BusHub {
  /** the hub's own bus: the parent process may publish and subscribe on it too */
  readonly bus: Bus;
  /** serves one child over its channel until the returned function is called (the child exited) */
  attach(channel: IpcChannel): () => void;
  close(): Promise<void>;
}

/** The parent's side: an in-process bus shared by every attached child. */
export function createIpcBusHub(): BusHub {
  const bus = createInProcessBus();
  let nextDeliveryId = 1;

  const attach = (channel: IpcChannel) => {
    const subscriptions = new Map<string, () => void>();
    const consumers = new Map<number, Consumer>();
    const deliveries = new Map<number, { resolve: () => void; reject: (err: Error) => void }>();
    let detached = false;
    const send = (message: HubToChild) => {
      if (!detached) channel.send(message);
    };

    const handle = async (message: ChildToHub): Promise<void> => {
      switch (message.bus) {
        case 'sub':
          if (!subscriptions.has(message.pattern)) {
            const pattern = message.pattern as EventSubject;
            const off = bus.subscribe(pattern, (payload) =>
              send({ bus: 'msg', pattern, data: JSON.stringify(payload) }),
            );
            subscriptions.set(message.pattern, off);
          }
          return;
        case 'unsub':
          subscriptions.get(message.pattern)?.();
          subscriptions.delete(message.pattern);
          return;
        case 'pub':
          await bus.publish(message.subject as EventSubject, JSON.parse(message.data));
          return;
        case 'ack': {
          const pending = deliveries.get(message.deliveryId);
          deliveries.delete(message.deliveryId);
          if (message.ok) pending?.resolve();
          else pending?.reject(new Error('not acknowledged'));
          return;
        }
        case 'call':
          try {
            await callOf(message);
            send({ bus: 'result', id: message.id });
          } catch (err) {
            send({ bus: 'result', id: message.id, error: err instanceof Error ? err.message : String(err) });
          }
      }
    };

    const callOf = async (message: Extract<ChildToHub, { bus: 'call' }>): Promise<void> => {
      switch (message.op) {
        case 'ensureStream':
          return bus.ensureStream(message.options);
        case 'publishDurable':
          return bus.publishDurable(message.subject as EventSubject, JSON.parse(message.data), message.msgId);
        case 'ping':
          return bus.ping();
        case 'stopConsumer':
          await consumers.get(message.consumerId)?.stop();
          consumers.delete(message.consumerId);
          return;
        case 'consume': {
          const { consumerId } = message;
          const consumer = await bus.consumeDurable({
            ...message.options,
            handler: (delivered) =>
              new Promise<void>((resolve, reject) => {
                if (detached) return reject(new Error('consumer gone'));
                const deliveryId = nextDeliveryId++;
                deliveries.set(deliveryId, { resolve, reject });
                send({ bus: 'deliver', consumerId, deliveryId, message: delivered });
              }),
          });
          consumers.set(consumerId, consumer);
        }
      }
    };

    const stopListening = channel.onMessage((raw) => {
      if (isBusMessage(raw)) void handle(raw as ChildToHub).catch(() => undefined);
    });
    return () => {
      if (detached) return;
      detached = true;
      stopListening();
      for (const off of subscriptions.values()) off();
      // what the child held unacknowledged goes back to its queue, for the next instance to take
      for (const pending of deliveries.values()) pending.reject(new Error('consumer gone'));
      deliveries.clear();
      for (const consumer of consumers.values()) void consumer.stop();
      consumers.clear();
    };
  };

  return { bus, attach, close: () => bus.close() };
}
