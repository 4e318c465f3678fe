import type { LlmCompletionEvent } from '@platform/contracts';
import { describeWithNats, type NatsServerHandle, startNatsServer, waitFor } from '@platform/testkit';
import { connect } from 'nats';
import { type Bus, createNatsBus, type DurableMessage } from '../src';

const completion = (id: string): LlmCompletionEvent => ({
  id,
  version: 1,
  occurredAt: '2026-11-23T10:00:00Z',
  orgSlug: 'acme',
  model: 'm',
  provider: 'p',
  usage: { prompt_tokens: 1, completion_tokens: 2, total_tokens: 3 },
  cost: 0.01,
});

/** A durable consumer of the completions on `stream` that hands each one's id to `seen`. */
const consumeIds = (bus: Bus, stream: string, durable: string, seen: (id: string) => void) =>
  bus.consumeDurable({
    stream,
    durable,
    filterSubject: 'analytics.llm.completion',
    handler: async (m: DurableMessage) => {
      seen((JSON.parse(m.data) as LlmCompletionEvent).id);
    },
  });

/** true once `promise` resolves, false if it rejects: for waiting until a call succeeds */
const succeeds = (promise: Promise<unknown>) =>
  promise.then(
    () => true,
    () => false,
  );

describeWithNats('NATS bus on a real nats-server', () => {
  let server: NatsServerHandle;
  const buses: Bus[] = [];
  const open = async (name: string) => {
    const bus = await createNatsBus({ url: server.url, name });
    buses.push(bus);
    return bus;
  };
  /** a bus that keeps what it reports to `onError` in `errors` (made while the server is away, in these tests) */
  const openKeepingErrors = async (name: string) => {
    const errors: string[] = [];
    const bus = await createNatsBus({
      url: server.url,
      name,
      onError: (_err, context) => errors.push(context),
    });
    buses.push(bus);
    return { bus, errors };
  };
  /** a plain nats.js connection beside the buses, to watch or administer the server */
  const connectPlainly = () => connect({ servers: server.url.replace(/^nats:\/\//, '') });
  // a test that stops the server may leave it stopped: it comes back before the next test
  let serverAway = false;
  const stopServer = async () => {
    await server.stop();
    serverAway = true;
  };
  const startServer = async () => {
    await server.start();
    serverAway = false;
  };

  beforeAll(async () => {
    server = await startNatsServer();
  });
  afterEach(async () => {
    if (serverAway) await startServer();
    await Promise.all(buses.splice(0).map((b) => b.close()));
  });
  afterAll(async () => {
    await server.dispose();
  });

  it('delivers core messages between connections', async () => {
    const a = await open('a');
    const b = await open('b');
    const seen: unknown[] = [];
    b.subscribe('gateway.jwks.updated', (payload) => {
      seen.push(payload);
    });
    await b.ping();
    await a.publish('gateway.jwks.updated', { version: 1, created: ['k1'], deleted: [], at: 'now' });
    await waitFor(() => seen.length === 1);
    expect(seen[0]).toEqual({ version: 1, created: ['k1'], deleted: [], at: 'now' });
  });

  it('keeps stream messages for a durable consumer that starts later, de-duplicating by id', async () => {
    const producer = await open('producer');
    await producer.ensureStream({ name: 'TEST1', subjects: ['analytics.>'] });
    await producer.publishDurable('analytics.llm.completion', completion('e1'), 'e1');
    await producer.publishDurable('analytics.llm.completion', completion('e1'), 'e1');
    await producer.publishDurable('analytics.llm.completion', completion('e2'), 'e2');

    const consumerBus = await open('consumer');
    const got: string[] = [];
    const consumer = await consumeIds(consumerBus, 'TEST1', 'test-consumer', (id) => got.push(id));
    await waitFor(() => got.length >= 2);
    expect(got).toEqual(['e1', 'e2']);
    await consumer.stop();
  });

  it('receives the answers to its requests on its own inbox, _INBOX.<its name>, whatever the name holds', async () => {
    const watcher = await connectPlainly();
    const inboxes: string[] = [];
    watcher.subscribe('_INBOX.>', { callback: (_err, m) => inboxes.push(m.subject) });
    await watcher.flush();
    const odd = await open('usage writer.1 >');
    await odd.ensureStream({ name: 'TEST_INBOX', subjects: ['llm.catalogue.updated'] });
    await odd.publishDurable('llm.catalogue.updated', { version: 1, at: '2026-11-27T10:00:00Z' });
    await watcher.flush();
    await watcher.close();
    // the stream's API answers and the publication's acknowledgement
    expect(inboxes.length).toBeGreaterThan(1);
    expect(inboxes.filter((subject) => !subject.startsWith('_INBOX.usage_writer_1__.'))).toEqual([]);
  });

  it('redelivers a message whose handler failed', async () => {
    const bus = await open('retry');
    // The stream of the previous test: this consumer sees its messages too, and keeps only its own.
    await bus.ensureStream({ name: 'TEST1', subjects: ['analytics.>'] });
    const deliveries: DurableMessage[] = [];
    const consumer = await bus.consumeDurable({
      stream: 'TEST1',
      durable: 'retrying',
      filterSubject: 'analytics.llm.completion',
      retryDelayMs: 50,
      handler: async (m) => {
        if ((JSON.parse(m.data) as LlmCompletionEvent).id !== 'r1') return;
        deliveries.push(m);
        if (deliveries.length === 1) throw new Error('first attempt fails');
      },
    });
    await bus.publishDurable('analytics.llm.completion', completion('r1'));
    await waitFor(() => deliveries.length === 2);
    expect(deliveries.map((d) => d.deliveryCount)).toEqual([1, 2]);
    await consumer.stop();
  });

  it('hands nothing to a stopped consumer: what is published right after stop() goes to the next one at once', async () => {
    const producer = await open('producer-restarts');
    await producer.ensureStream({ name: 'TEST1', subjects: ['analytics.>'] });
    const consumerBus = await open('restarting');
    const got = new Set<string>();
    const consume = () => consumeIds(consumerBus, 'TEST1', 'restarting', (id) => got.add(id));
    await (await consume()).stop(); // the durable consumer exists: later rounds only see what they publish
    got.clear();
    // a rolling restart, eight times: stop, events arrive from another connection at once, start again
    for (let round = 0; round < 8; round++) {
      const consumer = await consume();
      await consumerBus.ping();
      await consumer.stop();
      const ids = Array.from({ length: 10 }, (_, i) => `restart-${round}-${i}`);
      await Promise.all(
        ids.map((id) => producer.publishDurable('analytics.llm.completion', completion(id), id)),
      );
      const next = await consume();
      // a message handed to the stopped consumer's inbox would only come back after ack_wait (30 s)
      await waitFor(() => ids.every((id) => got.has(id)), {
        timeoutMs: 10_000, // well under ack_wait, above what a loaded machine takes
        what: `round ${round}'s events`,
      });
      await next.stop();
    }
  });

  it('starts while the server is away, and once it is there makes the streams, subscriptions, consumers and publications that waited', async () => {
    await stopServer();
    const { bus: early, errors } = await openKeepingErrors('early');
    expect(errors).toEqual([expect.stringContaining('retrying in the background')]);
    await expect(early.ping()).rejects.toThrow('NATS is not connected yet');
    await expect(
      early.publishDurable('analytics.llm.completion', completion('refused'), 'refused'),
    ).rejects.toThrow('NATS is not connected yet');
    let reconnects = 0;
    early.onReconnect(() => reconnects++);
    await early.ensureStream({ name: 'TEST1', subjects: ['analytics.>'] });
    const seen: unknown[] = [];
    early.subscribe('gateway.jwks.updated', (payload) => void seen.push(payload));
    const durable: string[] = [];
    const consumer = await consumeIds(early, 'TEST1', 'early', (id) => durable.push(id));
    // a publication made while away goes out once connected; this bus hears it on its own subscription
    const jwks = { version: 1 as const, created: ['k-early'], deleted: [], at: '2026-11-26T00:00:00Z' };
    await early.publish('gateway.jwks.updated', jwks);

    await startServer();
    await waitFor(() => succeeds(early.ping()), { timeoutMs: 15_000, what: 'connected' });
    expect(reconnects).toBe(1);
    await waitFor(() => seen.length === 1, { what: 'the publication that waited' });
    expect(seen).toEqual([jwks]);
    const producer = await open('early-producer');
    await producer.publishDurable('analytics.llm.completion', completion('after'), 'after');
    await waitFor(() => durable.includes('after'), { what: 'the consumer made once connected' });
    expect(durable).not.toContain('refused');
    await consumer.stop();
  });

  it('a reconnect listener that throws is reported, and neither doubles the connection nor silences later reconnections', async () => {
    await stopServer();
    const { bus, errors } = await openKeepingErrors('throwing-listener');
    bus.onReconnect(() => {
      throw new Error('a listener fails');
    });
    let reconnects = 0;
    bus.onReconnect(() => reconnects++);
    const seen: unknown[] = [];
    bus.subscribe('gateway.jwks.updated', (payload) => void seen.push(payload));
    await startServer();
    await waitFor(() => reconnects === 1, { timeoutMs: 15_000, what: 'connected' });
    const other = await open('throwing-listener-peer');
    const jwks = { version: 1 as const, created: ['k-once'], deleted: [], at: '2026-11-28T00:00:00Z' };
    await other.publish('gateway.jwks.updated', jwks);
    await waitFor(() => seen.length > 0, { what: 'the publication' });
    // one more message through the same connection: it comes after any second copy of the first
    await other.publish('gateway.jwks.updated', { ...jwks, created: ['k-next'] });
    await waitFor(() => seen.some((p) => (p as typeof jwks).created[0] === 'k-next'), {
      what: 'the next one',
    });
    expect(seen.map((p) => (p as typeof jwks).created[0])).toEqual(['k-once', 'k-next']);
    expect(errors.some((e) => e.includes('reconnect listener'))).toBe(true);
    await stopServer();
    await startServer();
    await waitFor(() => reconnects === 2, { timeoutMs: 15_000, what: 'the second reconnection' });
  });

  it('a bus closed before the server came stops trying, and its waiting consumer stops at once', async () => {
    await stopServer();
    const bus = await createNatsBus({ url: server.url, name: 'never' });
    const consumer = await consumeIds(bus, 'TEST1', 'never', () => undefined);
    await bus.close();
    await consumer.stop();
    await expect(bus.ping()).rejects.toThrow('NATS is not connected yet');
  });

  it('a consumer waiting for the server stops at once while its bus is still open, as a service stops before its bus', async () => {
    await stopServer();
    const bus = await createNatsBus({ url: server.url, name: 'stopped-first' });
    buses.push(bus);
    const consumer = await consumeIds(bus, 'TEST1', 'stopped-first', () => undefined);
    let stopped = false;
    void consumer.stop().then(() => {
      stopped = true;
    });
    await waitFor(() => stopped, { timeoutMs: 10_000, what: 'the consumer stopped, NATS still away' });
  });

  it('tells listeners when the connection comes back after the server restarts', async () => {
    const bus = await open('reconnect');
    let reconnects = 0;
    bus.onReconnect(() => reconnects++);
    await stopServer();
    await startServer();
    await waitFor(() => reconnects > 0, { timeoutMs: 10_000, what: 'reconnect' });
    await expect(bus.ping()).resolves.toBeUndefined();
  });

  it('a consumer made while the server was away, whose stream could not be made at first, starts once it can', async () => {
    // a stream taking the same subjects keeps the stream below from being made at first (run last: TEST1 goes)
    const admin = await connectPlainly();
    const jsm = await admin.jetstreamManager();
    await jsm.streams.delete('TEST1').catch(() => undefined);
    await jsm.streams.add({ name: 'BLOCKER', subjects: ['analytics.>'] });
    await admin.close();
    await stopServer();
    const { bus: early, errors } = await openKeepingErrors('early-refused');
    await early.ensureStream({ name: 'LATE_STREAM', subjects: ['analytics.llm.completion'] });
    const got: string[] = [];
    const consumer = await consumeIds(early, 'LATE_STREAM', 'late', (id) => got.push(id));
    await startServer();
    await waitFor(() => errors.some((e) => e.includes('LATE_STREAM')), { what: 'the refused stream' });
    // what refused it goes away
    const again = await connectPlainly();
    await (await again.jetstreamManager()).streams.delete('BLOCKER');
    await again.close();
    const producer = await open('late-producer');
    await waitFor(
      () => succeeds(producer.publishDurable('analytics.llm.completion', completion('late-1'), 'late-1')),
      { timeoutMs: 15_000, what: 'the stream made at last' },
    );
    await waitFor(() => got.includes('late-1'), {
      timeoutMs: 15_000,
      what: 'the consumer started at last',
    });
    await consumer.stop();
  });
});
