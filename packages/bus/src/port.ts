import type { EventPayloads } from '@platform/contracts';

export type EventSubject = keyof EventPayloads;

/** A message taken from a durable stream. Throwing from the handler asks for redelivery later. */
export interface DurableMessage {
  subject: string;
  /** the payload as published (JSON text); consumers validate it themselves */
  data: string;
  /** how many times this message has been delivered, 1 the first time */
  deliveryCount: number;
}

export interface DurableConsumerOptions {
  /** stream name, e.g. ANALYTICS */
  stream: string;
  /** durable consumer name: instances sharing it share the work, and it survives restarts */
  durable: string;
  filterSubject: string;
  handler: (message: DurableMessage) => Promise<void>;
  /** how long a failed message waits before redelivery (ms) */
  retryDelayMs?: number;
  /**
   * How many messages the handler may be running at once (default 1: one after the other). Messages
   * are still acknowledged one by one, each when its own handler returns (NATS), or in waves of up to
   * this many (in-process).
   */
  concurrency?: number;
}

export interface StreamOptions {
  name: string;
  subjects: string[];
  /** how long messages are kept (ms); 0 keeps them until limits apply */
  maxAgeMs?: number;
  /** window within which a re-published message id is dropped (ms) */
  duplicateWindowMs?: number;
}

/** What a bus says out of its callers' sight (a durable handler failing), for the service's logger. */
export interface BusReporting {
  onError?: (err: unknown, context: string) => void;
  /** the time that paces a failing handler's reports and dates them (default: the system's) */
  clock?: { now(): Date };
}

export interface Consumer {
  stop(): Promise<void>;
}

/**
 * The event bus port. Two implementations: NATS (production and integration tests, with a real
 * nats-server) and in-process (standalone mode).
 */
export interface Bus {
  readonly kind: 'nats' | 'in-process' | 'ipc';
  /** fire-and-forget (core NATS) */
  publish<S extends EventSubject>(subject: S, payload: EventPayloads[S]): Promise<void>;
  /** receives every message on the subject; the payload is parsed JSON, to be validated by the handler */
  subscribe(subject: EventSubject, handler: (payload: unknown) => void | Promise<void>): () => void;
  /** creates the stream if it does not exist (idempotent) */
  ensureStream(options: StreamOptions): Promise<void>;
  /** publishes into a stream and waits for its acknowledgement; `id` de-duplicates within the window */
  publishDurable<S extends EventSubject>(subject: S, payload: EventPayloads[S], id?: string): Promise<void>;
  consumeDurable(options: DurableConsumerOptions): Promise<Consumer>;
  /** calls back after the connection came back (to reconcile what may have been missed) */
  onReconnect(listener: () => void): () => void;
  /** throws when the bus cannot deliver */
  ping(): Promise<void>;
  close(): Promise<void>;
}
