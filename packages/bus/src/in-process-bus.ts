import type { EventPayloads } from '@platform/contracts';
import {
  type BusReports,
  busReports,
  type ReportedHandler,
  reportedDurableHandler,
  reportedSubscriptionHandler,
} from './handler-failures';
import type {
  Bus,
  BusReporting,
  Consumer,
  DurableConsumerOptions,
  DurableMessage,
  EventSubject,
  StreamOptions,
} from './port';

/** a subscription's handler, given the payload's JSON: it never throws, its failures are reported (handler-failures.ts) */
type Handler = ReportedHandler<string>;

/** NATS subject matching: `*` matches one token, `>` the rest. */
export function subjectMatches(pattern: string, subject: string): boolean {
  const p = pattern.split('.');
  const s = subject.split('.');
  for (let i = 0; i < p.length; i++) {
    if (p[i] === '>') return s.length > i;
    if (i >= s.length || (p[i] !== '*' && p[i] !== s[i])) return false;
  }
  return p.length === s.length;
}

const takes = (stream: InProcessStream, subject: string) =>
  stream.options.subjects.some((pattern) => subjectMatches(pattern, subject));

interface QueuedMessage {
  subject: string;
  data: string;
  deliveryCount: number;
}

/** durable messages kept for a stream or a first consumer not made yet, at most this many (the oldest go first) */
const WAITING_MAX = 10_000;

const hold = (list: QueuedMessage[], message: QueuedMessage) => {
  if (list.length >= WAITING_MAX) {
    const dropped = list.shift()!;
    // the publisher (the gateway's outbox) took it as delivered: say so, once per subject, where an operator looks
    if (!warnedSubjects.has(dropped.subject)) {
      warnedSubjects.add(dropped.subject);
      process.emitWarning(
        `more than ${WAITING_MAX} durable messages on ${dropped.subject} wait for a stream or its first consumer: the oldest are dropped`,
        'BusWarning',
      );
    }
  }
  list.push(message);
};
const warnedSubjects = new Set<string>();

interface InProcessStream {
  options: StreamOptions;
  consumers: Map<string, DurableQueue>;
  /** what the stream took before it had a consumer, for its first one (JetStream keeps it in the stream) */
  waiting: QueuedMessage[];
}

/**
 * The bus of standalone mode: one process, delivery on a later tick like a network would.
 * Durable streams are queues kept for the life of the process, shared by consumers of one name.
 * A durable publication made before its stream or the stream's first consumer exists (services start
 * at once: the gateway's outbox may publish before llm-quota made them) waits for them.
 * A handler's failures, durable or not, are reported to `onError` as the NATS bus reports them (handler-failures.ts).
 */
export function createInProcessBus(reporting: BusReporting = {}): Bus {
  const reports = busReports(reporting);
  const subscribers = new Map<string, Set<Handler>>();
  const streams = new Map<string, InProcessStream>();
  /** durable messages no stream takes yet */
  const unrouted: QueuedMessage[] = [];
  let closed = false;

  const deliver = (subject: string, data: string) => {
    for (const [pattern, handlers] of subscribers) {
      if (!subjectMatches(pattern, subject)) continue;
      for (const handler of handlers) {
        setImmediate(() => void handler(data));
      }
    }
  };

  return {
    kind: 'in-process',
    async publish<S extends EventSubject>(subject: S, payload: EventPayloads[S]) {
      if (closed) throw new Error('bus is closed');
      deliver(subject, JSON.stringify(payload));
    },
    subscribe(subject, handler) {
      let set = subscribers.get(subject);
      if (!set) {
        set = new Set();
        subscribers.set(subject, set);
      }
      const reported = reportedSubscriptionHandler(
        subject,
        (data: string) => handler(JSON.parse(data)),
        reports,
      );
      set.add(reported);
      return () => set.delete(reported);
    },
    async ensureStream(options) {
      if (streams.has(options.name)) return;
      const stream: InProcessStream = { options, consumers: new Map(), waiting: [] };
      streams.set(options.name, stream);
      for (let i = 0; i < unrouted.length; ) {
        if (takes(stream, unrouted[i]!.subject)) stream.waiting.push(...unrouted.splice(i, 1));
        else i++;
      }
    },
    async publishDurable<S extends EventSubject>(subject: S, payload: EventPayloads[S]) {
      if (closed) throw new Error('bus is closed');
      const data = JSON.stringify(payload);
      let stored = false;
      for (const stream of streams.values()) {
        if (!takes(stream, subject)) continue;
        stored = true;
        const message = { subject, data, deliveryCount: 0 };
        if (stream.consumers.size === 0) hold(stream.waiting, message);
        for (const queue of stream.consumers.values()) queue.push({ ...message });
      }
      if (!stored) hold(unrouted, { subject, data, deliveryCount: 0 });
      deliver(subject, data);
    },
    async consumeDurable(options) {
      const stream = streams.get(options.stream);
      if (!stream) throw new Error(`No stream ${options.stream}`);
      let queue = stream.consumers.get(options.durable);
      if (!queue) {
        queue = new DurableQueue(options.filterSubject, reports);
        stream.consumers.set(options.durable, queue);
        for (const message of stream.waiting.splice(0)) queue.push(message);
      }
      return queue.attach(options);
    },
    onReconnect() {
      return () => undefined;
    },
    async ping() {
      if (closed) throw new Error('bus is closed');
    },
    async close() {
      closed = true;
      subscribers.clear();
      await Promise.all([...streams.values()].flatMap((s) => [...s.consumers.values()].map((q) => q.stop())));
    },
  };
}

/** A durable consumer's options, and its handler with its failures said as the NATS bus says them */
interface Attached {
  options: DurableConsumerOptions;
  handle: ReportedHandler<DurableMessage>;
}

/** A durable consumer's backlog: messages wait here until a handler acknowledges them. */
class DurableQueue {
  private readonly pending: QueuedMessage[] = [];
  private attached?: Attached;
  private running = false;
  private stopped = false;

  constructor(
    private readonly filter: string,
    private readonly reports: BusReports,
  ) {}

  push(message: QueuedMessage): void {
    if (!subjectMatches(this.filter, message.subject)) return;
    this.pending.push(message);
    this.kick();
  }

  attach(options: DurableConsumerOptions): Consumer {
    this.attached = { options, handle: reportedDurableHandler(options, this.reports) };
    this.stopped = false;
    this.kick();
    return { stop: () => this.stop() };
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.attached = undefined;
  }

  private kick(): void {
    if (this.running || !this.attached || this.stopped) return;
    this.running = true;
    setImmediate(() => void this.drain());
  }

  private async drain(): Promise<void> {
    while (this.pending.length && this.attached && !this.stopped) {
      const { options, handle } = this.attached;
      const concurrency = options.concurrency ?? 1;
      if (concurrency > 1) {
        await this.deliverSome(this.attached, concurrency);
        continue;
      }
      const message = this.pending[0]!;
      message.deliveryCount++;
      const delivered: DurableMessage = { ...message };
      if (!(await handle(delivered))) {
        await new Promise((r) => setTimeout(r, this.attached?.options.retryDelayMs ?? 1000));
        continue;
      }
      this.pending.shift();
    }
    this.running = false;
  }

  /** Up to `concurrency` messages handled at once; the failed ones wait `retryDelayMs`, then come first again. */
  private async deliverSome({ options, handle }: Attached, concurrency: number): Promise<void> {
    const taken = this.pending.splice(0, concurrency);
    const failed: QueuedMessage[] = [];
    await Promise.all(
      taken.map(async (message) => {
        message.deliveryCount++;
        if (!(await handle({ ...message }))) failed.push(message);
      }),
    );
    if (failed.length) {
      this.pending.unshift(...failed);
      await new Promise((r) => setTimeout(r, options.retryDelayMs ?? 1000));
    }
  }
}
