import { type Bus, createNatsBus } from '@platform/bus';
import { type LlmCompletionEvent, Subjects } from '@platform/contracts';
import { ManualClock } from '@platform/kernel';
import { createEmbeddedStore, type Store } from '@platform/store';
import {
  describeWithNats,
  type NatsServerHandle,
  startNatsServer,
  tempDir,
  waitFor,
} from '@platform/testkit';
import { connect, type NatsConnection, StringCodec } from 'nats';
import request from 'supertest';
import { quotaCollections } from '../src/data/collections';
import { counterId } from '../src/domain/windows';
import { completion, edgeHeaders, principal, type QuotaServiceHandle, startQuotaService } from './support';

const codec = StringCodec();
const NOW = '2025-03-15T12:00:30.000Z';

describeWithNats('llm-quota consuming analytics.llm.completion from a real nats-server', () => {
  let nats: NatsServerHandle;
  let nc: NatsConnection;
  let bus: Bus;
  let clock: ManualClock;
  let data: ReturnType<typeof tempDir>;
  let quota: QuotaServiceHandle;
  const started: QuotaServiceHandle[] = [];

  /** As an external LLM gateway would: a plain publish on the subject, captured by the stream. */
  let published = 0;
  const publish = (event: LlmCompletionEvent | string) => {
    published++;
    nc.publish(
      Subjects.llmCompletion,
      codec.encode(typeof event === 'string' ? event : JSON.stringify(event)),
    );
  };
  const start = async (options: { store?: Store } = {}) => {
    const handle = await startQuotaService({ bus, clock, dataDir: data.dir, ...options });
    started.push(handle);
    return handle;
  };
  const monthCounter = (org = 'acme') =>
    quotaCollections(quota.store).counters.findOne({
      _id: counterId({ orgSlug: org }, 'month', new Date('2025-03-01Z')),
    });
  const monthRequests = async (org = 'acme') => (await monthCounter(org))?.requests ?? 0;
  /** Messages not handled yet, once the stream holds every publish (it stores core publishes asynchronously). */
  const pending = async () => {
    const jsm = await nc.jetstreamManager();
    await nc.flush();
    await waitFor(async () => (await jsm.streams.info('ANALYTICS')).state.last_seq >= published, {
      what: 'the stream to store every publish',
    });
    const info = await jsm.consumers.info('ANALYTICS', 'llm-quota');
    return info.num_pending + info.num_ack_pending;
  };

  beforeAll(async () => {
    nats = await startNatsServer();
    nc = await connect({ servers: nats.url });
  });
  afterAll(async () => {
    await nc.close();
    await nats.dispose();
  });
  beforeEach(async () => {
    // A fresh stream per test: the durable consumer starts from the first message.
    const jsm = await nc.jetstreamManager();
    await jsm.streams.delete('ANALYTICS').catch(() => undefined);
    published = 0;
    bus = await createNatsBus({ url: nats.url, name: 'llm-quota-test' });
    clock = new ManualClock(NOW);
    data = tempDir('llm-quota-nats-');
    quota = await start();
  });
  afterEach(async () => {
    for (const handle of started.splice(0)) await handle.service.stop();
    await quota.store.close();
    await bus.close();
    data.remove();
  });

  // how fast (the 1 s) is measured by bench/llm-quota/ingest.ts (one event at a time), not asserted here
  it('counts an event published by a gateway', async () => {
    publish(completion({ occurredAt: NOW }));
    await waitFor(async () => (await monthRequests()) === 1, {
      timeoutMs: 10_000,
      what: 'the event counted',
    });
    const res = await request(quota.service.handler)
      .get('/v1/quotas/usage')
      .set(edgeHeaders(principal(), clock));
    expect(res.body.enforced[0]).toMatchObject({ key: 'llm.rpm', used: 1, as_of: NOW });
  });

  it('counts a duplicated or redelivered event once', async () => {
    const event = completion();
    for (let i = 0; i < 3; i++) publish(event);
    publish(completion({ orgSlug: 'marker-org' }));
    await waitFor(async () => (await monthRequests('marker-org')) === 1 && (await pending()) === 0, {
      what: 'all handled',
    });
    expect(await monthCounter()).toMatchObject({ requests: 1, tokens: 100, cost_micros: 250_000 });
    // later again, as a gateway retrying after a timeout would
    publish(event);
    publish(completion({ orgSlug: 'marker-org' }));
    await waitFor(async () => (await monthRequests('marker-org')) === 2 && (await pending()) === 0, {
      what: 'handled',
    });
    expect(await monthRequests()).toBe(1);
  });

  it('sends malformed, invalid and too old events to the dead letters, acknowledges them, and keeps consuming', async () => {
    const dead: Array<{ reason: string; raw: string; at: string }> = [];
    const sub = nc.subscribe(Subjects.llmCompletionDeadLetter, {
      callback: (_err, msg) => dead.push(JSON.parse(codec.decode(msg.data))),
    });
    await nc.flush();
    publish('{not json');
    publish(JSON.stringify({ ...completion(), version: 2 }));
    publish(
      JSON.stringify({
        ...completion(),
        usage: { prompt_tokens: -1, completion_tokens: 0, total_tokens: 0 },
      }),
    );
    publish(JSON.stringify({ ...completion(), orgSlug: 'Not A Slug' }));
    publish(completion({ occurredAt: '2025-03-01T00:00:00Z' })); // 14 days old, beyond the 7-day limit
    publish(completion());
    await waitFor(() => dead.length === 5, { what: 'five dead letters' });
    await waitFor(async () => (await monthRequests()) === 1 && (await pending()) === 0, {
      what: 'the valid one',
    });
    // handled concurrently, so in any order
    expect(dead.map((d) => d.reason.split(':')[0]).sort()).toEqual([
      'invalid_event',
      'invalid_event',
      'invalid_event',
      'malformed_json',
      'too_old',
    ]);
    expect(dead.find((d) => d.reason === 'malformed_json')).toMatchObject({ raw: '{not json', at: NOW });
    expect(dead.some((d) => d.reason.includes('usage.prompt_tokens'))).toBe(true);
    sub.unsubscribe();
    // The dead letters are kept in the stream too, for an operator to inspect or replay.
    const jsm = await nc.jetstreamManager();
    const info = await jsm.streams.info('ANALYTICS', { subjects_filter: Subjects.llmCompletionDeadLetter });
    expect(info.state.subjects).toEqual({ [Subjects.llmCompletionDeadLetter]: 5 });
  });

  it('dead-letters an invalid event too large to be stored whole as a dead letter, and acknowledges it', async () => {
    const dead: Array<{ reason: string; raw: string }> = [];
    const sub = nc.subscribe(Subjects.llmCompletionDeadLetter, {
      callback: (_err, msg) => dead.push(JSON.parse(codec.decode(msg.data))),
    });
    await nc.flush();
    // 800 kB, under the server's 1 MB payload limit; quoted again inside a dead letter, each `\"` takes 4 bytes
    const raw = JSON.stringify({ ...completion(), version: 2, note: '"'.repeat(400_000) });
    publish(raw);
    publish(completion());
    await waitFor(() => dead.length === 1, { what: 'the dead letter' });
    await waitFor(async () => (await monthRequests()) === 1 && (await pending()) === 0, {
      what: 'the valid event counted and the invalid one acknowledged',
    });
    expect(dead[0]!.reason).toMatch(
      /^invalid_event: .*version.*\(raw truncated to its first 100000 of 800\d{3} characters\)$/,
    );
    expect(raw.startsWith(dead[0]!.raw)).toBe(true);
    expect(dead[0]!.raw).toHaveLength(100_000);
    sub.unsubscribe();
    // kept in the stream, as every dead letter
    const jsm = await nc.jetstreamManager();
    const info = await jsm.streams.info('ANALYTICS', { subjects_filter: Subjects.llmCompletionDeadLetter });
    expect(info.state.subjects).toEqual({ [Subjects.llmCompletionDeadLetter]: 1 });
  });

  it('counts an event from a gateway whose clock runs ahead at its arrival time, not in a later window', async () => {
    publish(completion({ occurredAt: '2025-04-02T00:00:00Z' }));
    await waitFor(async () => (await monthRequests()) === 1, { what: 'counted in March' });
    const res = await request(quota.service.handler)
      .get('/v1/quotas/usage')
      .set(edgeHeaders(principal(), clock));
    expect(res.body.enforced[0]).toMatchObject({ key: 'llm.rpm', used: 1, as_of: NOW });
  });

  it('remembers the id of an event dated ahead for as long as the event could be accepted again', async () => {
    const collections = () => quotaCollections(quota.store);
    const marker = completion({ orgSlug: 'marker-org' });
    publish(marker);
    await waitFor(async () => (await monthRequests('marker-org')) === 1, { what: 'the marker counted' });
    const ahead = completion({ occurredAt: '2025-03-19T12:00:00Z' }); // four days ahead of its arrival
    publish(ahead);
    await waitFor(async () => (await monthRequests()) === 1 && (await pending()) === 0, {
      what: 'counted at its arrival',
    });

    // Ten days later its arrival is past the id retention (8 days), its own date is not past the maximum age (7).
    for (const handle of started.splice(0)) await handle.service.stop();
    clock.set('2025-03-25T12:00:00Z');
    quota = await start({ store: quota.store }); // its first maintenance pass forgets what is past retention
    await waitFor(async () => (await collections().ledger.findOne({ _id: marker.id })) === null, {
      what: 'the retention pass',
    });
    publish(ahead); // replayed by a gateway, or by an operator from the stream
    publish(completion({ orgSlug: 'marker-org', occurredAt: '2025-03-25T12:00:00Z' }));
    await waitFor(async () => (await monthRequests('marker-org')) === 2 && (await pending()) === 0, {
      what: 'both handled',
    });
    expect(await monthRequests()).toBe(1);
  });

  it('loses nothing published while llm-quota is stopped', async () => {
    publish(completion());
    await waitFor(async () => (await monthRequests()) === 1, { what: 'first event' });
    for (const handle of started.splice(0)) await handle.service.stop();
    for (let i = 0; i < 50; i++) publish(completion());
    expect(await pending()).toBe(50);
    expect(await monthRequests()).toBe(1);
    await start({ store: quota.store });
    await waitFor(async () => (await monthRequests()) === 51 && (await pending()) === 0, {
      what: 'the backlog',
    });
    expect(await monthCounter()).toMatchObject({ requests: 51, tokens: 5_100 });
  });

  it('shares the work between instances on one durable consumer, and they agree on every count', async () => {
    const second = await start({ store: quota.store });
    const events = Array.from({ length: 400 }, (_, i) => completion({ userId: `user-${i % 7}` }));
    for (const event of events) publish(event);
    for (const event of events.slice(0, 100)) publish(event); // duplicates, delivered to either instance
    await waitFor(async () => (await monthRequests()) === 400 && (await pending()) === 0, {
      what: 'all counted',
    });
    expect(await monthCounter()).toMatchObject({ requests: 400, tokens: 40_000, cost_micros: 100_000_000 });
    const a = await request(quota.service.handler)
      .get('/v1/quotas/usage')
      .set(edgeHeaders(principal(), clock));
    const b = await request(second.service.handler)
      .get('/v1/quotas/usage')
      .set(edgeHeaders(principal(), clock));
    expect(a.body.enforced).toEqual(b.body.enforced);
    expect(a.body.enforced[1]).toMatchObject({ key: 'llm.tpm', used: 40_000 });
  });

  it('an instance restarted on the same data folder reads the same usage', async () => {
    publish(completion());
    await waitFor(async () => (await monthRequests()) === 1, { what: 'counted' });
    for (const handle of started.splice(0)) await handle.service.stop();
    await quota.store.close();
    const reopened = createEmbeddedStore({ dataDir: data.dir });
    quota = await start({ store: reopened });
    expect(await monthRequests()).toBe(1);
  });
});
