import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createLogger, ManualClock, silentLogger } from '@platform/kernel';
import { type Collection, createEmbeddedStore, type Doc, type Store } from '@platform/store';
import { parseMetrics } from '@platform/testkit';
import { type CounterDoc, type QuotaCollections, quotaCollections } from '../data/collections';
import { counterId } from '../domain/windows';
import { createQuotaMetrics } from '../metrics';
import type { CountableEvent } from './intake';
import { Maintenance } from './maintenance';
import { COUNTED, sumIncrements, UsageWriter } from './usage-writer';

const NOW = new Date('2025-03-15T12:00:30Z');
const LEASE_MS = 60_000;
const LEASE_START = '2025-01-01T00:00:00Z';
/** the lease of a writer that starts its batch before the lease clock moved */
const leaseOfFirstWriter = Date.parse(LEASE_START) + LEASE_MS;

let n = 0;
function event(overrides: Partial<CountableEvent> = {}): CountableEvent {
  n++;
  const at = new Date('2025-03-15T12:00:10Z');
  return {
    id: `e-${n}`,
    orgSlug: 'acme',
    userId: 'u1',
    apiKeyId: null,
    model: 'm',
    provider: 'p',
    occurredAt: at,
    countedAt: at,
    receivedAt: NOW,
    prompt_tokens: 7,
    completion_tokens: 3,
    total_tokens: 10,
    cost_micros: 1_500,
    ...overrides,
  };
}

/** Wraps a collection so a chosen call fails, as if the process died or the store went away there. */
function failing<T extends Doc>(inner: Collection<T>, method: keyof Collection<T>, failOnCall: number) {
  let calls = 0;
  return new Proxy(inner, {
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver);
      if (prop !== method || typeof value !== 'function')
        return typeof value === 'function' ? value.bind(target) : value;
      return (...args: unknown[]) => {
        calls++;
        if (calls === failOnCall) return Promise.reject(new Error(`injected failure of ${String(method)}`));
        return (value as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
}

/**
 * Wraps a collection so that its calls of `method`, from the `fromCall`-th on, wait until `resume()`, as if the
 * writer stalled there (a pause, a slow store); `stalled` resolves when the first call waits, `landed()` when every
 * call made so far has landed (or failed).
 */
function stalling<T extends Doc>(inner: Collection<T>, method: keyof Collection<T>, fromCall = 1) {
  let calls = 0;
  let resume!: () => void;
  const resumed = new Promise<void>((resolve) => {
    resume = resolve;
  });
  let reached!: () => void;
  const stalled = new Promise<void>((resolve) => {
    reached = resolve;
  });
  const made: Promise<unknown>[] = [];
  const collection = new Proxy(inner, {
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver);
      if (prop !== method || typeof value !== 'function')
        return typeof value === 'function' ? value.bind(target) : value;
      return (...args: unknown[]) => {
        const call = (async () => {
          if (++calls >= fromCall) {
            reached();
            await resumed;
          }
          return (value as (...a: unknown[]) => unknown).apply(target, args);
        })();
        made.push(call);
        return call;
      };
    },
  });
  const landed = () => Promise.allSettled(made);
  return { collection, stalled, resume, landed };
}

describe('UsageWriter: exactly-once counting on a store without transactions', () => {
  let store: Store;
  let c: QuotaCollections;
  let lease: ManualClock;
  const writerWith = (collections: QuotaCollections, id = 'w1', leaseClock: ManualClock = lease) =>
    new UsageWriter({
      collections,
      clock: new ManualClock(NOW),
      leaseClock,
      leaseMs: LEASE_MS,
      logger: silentLogger(),
      instanceId: id,
    });
  const orgMonth = () =>
    c.counters.findOne({ _id: counterId({ orgSlug: 'acme' }, 'month', new Date('2025-03-01Z')) });
  const orgMinute = () =>
    c.counters.findOne({ _id: counterId({ orgSlug: 'acme' }, 'minute', new Date('2025-03-15T12:00:00Z')) });
  /** the tombstones of batches, apart from the one named `COUNTED` */
  const batchTombstones = () => c.finishedBatches.count({ _id: { $ne: COUNTED } });
  const userMinute = () =>
    c.counters.findOne({
      _id: counterId({ orgSlug: 'acme', userId: 'u1' }, 'minute', new Date('2025-03-15T12:00:00Z')),
    });

  beforeEach(() => {
    store = createEmbeddedStore();
    c = quotaCollections(store);
    lease = new ManualClock(LEASE_START);
  });
  afterEach(() => store.close());

  it('counts a batch into the org and user counters of its minute and month', async () => {
    const writer = writerWith(c);
    const outcomes = await writer.apply([event(), event({ userId: null }), event({ userId: 'u2' })]);
    expect([...outcomes.values()]).toEqual(['counted', 'counted', 'counted']);
    const month = (await orgMonth()) as CounterDoc;
    expect(month).toMatchObject({
      requests: 3,
      tokens: 30,
      prompt_tokens: 21,
      completion_tokens: 9,
      cost_micros: 4_500,
    });
    expect(month.refreshedAt).toEqual(NOW);
    expect(month.lastRequestAt).toEqual(new Date('2025-03-15T12:00:10Z'));
    // The batch's marker stays until the counter's next update, or the next sweep...
    expect(Object.keys(month.applied ?? {})).toHaveLength(1);
    lease.advance(20_000);
    await writer.sweepMarkers();
    expect((await orgMonth())?.applied).toEqual({});
    expect(await orgMinute()).toMatchObject({ requests: 3, tokens: 30 });
    expect(await userMinute()).toMatchObject({ requests: 1, tokens: 10 });
    expect(await c.batches.count({})).toBe(0);
    expect(await c.ledger.count({})).toBe(3);
    expect(await c.finishedBatches.count({})).toBe(1);
  });

  it("counts an organization API key's requests in its own minute and month, apart from the users'", async () => {
    const writer = writerWith(c);
    await writer.apply([
      event({ userId: null, apiKeyId: 'k1' }),
      event({ userId: null, apiKeyId: 'k1' }),
      event({ userId: null, apiKeyId: 'k2' }),
    ]);
    const key = (id: string, window: 'minute' | 'month', start: string) =>
      c.counters.findOne({ _id: counterId({ orgSlug: 'acme', apiKeyId: id }, window, new Date(start)) });
    expect(await key('k1', 'minute', '2025-03-15T12:00:00Z')).toMatchObject({
      apiKeyId: 'k1',
      userId: null,
      requests: 2,
      tokens: 20,
    });
    expect(await key('k1', 'month', '2025-03-01Z')).toMatchObject({ requests: 2, cost_micros: 3_000 });
    expect(await key('k2', 'minute', '2025-03-15T12:00:00Z')).toMatchObject({ requests: 1 });
    expect(await orgMinute()).toMatchObject({ requests: 3, tokens: 30 });
    expect(await userMinute()).toBeNull();
  });

  it('never counts an event id twice, in later batches or by another instance', async () => {
    const e = event();
    expect((await writerWith(c).apply([e])).get(e.id)).toBe('counted');
    expect((await writerWith(c).apply([e, event()])).get(e.id)).toBe('duplicate');
    expect((await writerWith(c, 'w2').apply([{ ...e, total_tokens: 999 }])).get(e.id)).toBe('duplicate');
    expect(await orgMonth()).toMatchObject({ requests: 2, tokens: 20 });
  });

  it('asks for a retry while another unfinished batch holds the event, then sees it as a duplicate', async () => {
    const e = event();
    // w1 dies right after journaling and claiming (before moving the batch to applying).
    const dying = { ...c, batches: failing(c.batches, 'findOneAndUpdate', 1) };
    await expect(writerWith(dying).apply([e])).rejects.toThrow('injected');
    expect(await c.ledger.count({ _id: e.id })).toBe(1);
    expect(await c.batches.count({ state: 'claiming' })).toBe(1);
    expect((await writerWith(c, 'w2').apply([e])).get(e.id)).toBe('retry');
    // The recovery sweep undoes the dead batch; the redelivered message is then counted, once.
    lease.advance(LEASE_MS + 1);
    expect(await writerWith(c, 'w2').recover()).toBe(1);
    expect((await writerWith(c, 'w2').apply([e])).get(e.id)).toBe('counted');
    expect((await writerWith(c, 'w2').apply([e])).get(e.id)).toBe('duplicate');
    expect(await orgMonth()).toMatchObject({ requests: 1, tokens: 10 });
  });

  it('takes over the claim of an undone batch whose leftovers are still there', async () => {
    const e = event();
    const dying = { ...c, batches: failing(c.batches, 'findOneAndUpdate', 1) };
    await expect(writerWith(dying).apply([e])).rejects.toThrow('injected');
    // Only the journal went away (say an operator removed it): the claim points to no batch.
    await c.batches.deleteMany({});
    expect((await writerWith(c, 'w2').apply([e])).get(e.id)).toBe('counted');
    expect(await orgMonth()).toMatchObject({ requests: 1 });
  });

  it('finishes a batch that died half-way through its counters, without counting anything twice', async () => {
    const events = [event(), event({ userId: 'u2' }), event({ userId: null })];
    // The third counter update fails: some counters have the batch, others not.
    const dying = { ...c, counters: failing(c.counters, 'updateOne', 3) };
    const outcomes = await writerWith(dying).apply(events);
    // Journaled as applying: the messages may be acknowledged, the sweep will finish the batch.
    expect([...outcomes.values()]).toEqual(['counted', 'counted', 'counted']);
    expect(await c.batches.count({ state: 'applying' })).toBe(1);
    expect(await writerWith(c, 'w2').recover()).toBe(1);
    expect(await orgMonth()).toMatchObject({ requests: 3, tokens: 30, cost_micros: 4_500 });
    expect(await orgMinute()).toMatchObject({ requests: 3 });
    expect(await userMinute()).toMatchObject({ requests: 1 });
    expect(await c.batches.count({})).toBe(0);
    expect(await c.finishedBatches.count({})).toBe(1);
    // Every event of it is now a duplicate.
    const again = await writerWith(c).apply(events);
    expect([...again.values()]).toEqual(['duplicate', 'duplicate', 'duplicate']);
    expect(await orgMonth()).toMatchObject({ requests: 3 });
  });

  it('re-applying a batch whose writer stalled past its lease changes nothing', async () => {
    const e = event();
    // w1 stalls after the counters (recording its batch of one event on the claim fails) and keeps its lease until
    // it runs out.
    const stalled = { ...c, ledger: failing(c.ledger, 'updateOne', 1) };
    const leaseless = { ...stalled, batches: failing(c.batches, 'updateOne', 1) };
    await writerWith(leaseless).apply([e]);
    expect(await orgMonth()).toMatchObject({ requests: 1 });
    expect(await writerWith(c, 'w2').recover()).toBe(0); // the lease is still w1's
    lease.advance(LEASE_MS + 1);
    expect(await writerWith(c, 'w2').recover()).toBe(1);
    expect(await orgMonth()).toMatchObject({ requests: 1 });
    expect(await c.batches.count({})).toBe(0);
    expect(await batchTombstones()).toBe(1);
  });

  it('leaves the batch to the recovery when its lease ran out before the counters', async () => {
    const e = event();
    const slowClaims = {
      ...c,
      ledger: new Proxy(c.ledger, {
        get(target, prop, receiver) {
          const value = Reflect.get(target, prop, receiver);
          if (prop === 'insertOne') {
            return async (doc: never) => {
              const r = await target.insertOne(doc);
              lease.advance(LEASE_MS); // the claim took the whole lease
              return r;
            };
          }
          return typeof value === 'function' ? value.bind(target) : value;
        },
      }),
    };
    expect((await writerWith(slowClaims).apply([e])).get(e.id)).toBe('retry');
    expect(await orgMonth()).toBeNull();
    lease.advance(1);
    await writerWith(c, 'w2').recover();
    expect((await writerWith(c, 'w2').apply([e])).get(e.id)).toBe('counted');
    expect(await orgMonth()).toMatchObject({ requests: 1 });
  });

  it('sums many events of one counter into one update, which also drops old markers', async () => {
    const writer = writerWith(c);
    const updates = jest.spyOn(c.counters, 'updateOne');
    await writer.apply(Array.from({ length: 50 }, () => event()));
    // org minute + org month + user minute + user month
    expect(updates).toHaveBeenCalledTimes(4);
    expect(await orgMonth()).toMatchObject({ requests: 50, tokens: 500, cost_micros: 75_000 });
    lease.advance(6_000);
    await writer.apply([event()]);
    expect(updates).toHaveBeenCalledTimes(8);
    const month = (await orgMonth()) as CounterDoc;
    expect(month).toMatchObject({ requests: 51 });
    // the first batch's marker went with the second batch's update; only the second's is left
    expect(Object.keys(month.applied ?? {})).toHaveLength(1);
    expect(await writer.sweepMarkers()).toBe(0);
  });

  it('keeps in a claim only what its look-up and its retention read, and in a tombstone only its retention', async () => {
    const ahead = new Date(NOW.getTime() + 3_600_000); // a gateway clock an hour ahead
    const [usual, other, datedAhead, alone] = [
      event(),
      event(),
      event({ occurredAt: ahead, countedAt: NOW }),
      event({ occurredAt: ahead, countedAt: NOW }),
    ];
    await writerWith(c).apply([usual, other]);
    await writerWith(c).apply([datedAhead, event()]);
    await writerWith(c).apply([alone]);
    const usualClaim = await c.ledger.findOne({ _id: usual.id });
    expect(usualClaim).toEqual({ _id: usual.id, batch: expect.any(String), receivedAt: NOW });
    expect(await c.ledger.findOne({ _id: datedAhead.id })).toEqual({
      _id: datedAhead.id,
      batch: expect.any(String),
      receivedAt: NOW,
      occurredAt: ahead,
    });
    expect(await c.finishedBatches.findOne({ _id: usualClaim!.batch })).toEqual({
      _id: usualClaim!.batch,
      countedAt: NOW,
    });
    expect(await c.finishedBatches.count({ latestOccurredAt: ahead })).toBe(1);
    // A batch of one event its writer finished is recorded on the claim: no tombstone, no batch id.
    expect(await c.ledger.findOne({ _id: alone.id })).toEqual({
      _id: alone.id,
      batch: COUNTED,
      receivedAt: NOW,
      occurredAt: ahead,
    });
    expect(await batchTombstones()).toBe(2);
    expect((await writerWith(c, 'w2').apply([alone, usual])).get(alone.id)).toBe('duplicate');
    expect(await orgMonth()).toMatchObject({ requests: 5 });
  });

  it('leaves a writer of the previous version a tombstone under the batch a counted claim names, which no retention removes', async () => {
    // That writer (an instance not upgraded yet, or after a rollback) reads a claim's batch from the open batches and
    // the tombstones alone: finding neither, it took the claim over and counted the event again.
    const alone = event();
    await writerWith(c).apply([alone]);
    expect((await c.ledger.findOne({ _id: alone.id }))?.batch).toBe(COUNTED);
    await writerWith(c, 'w2').apply([event()]); // written once
    const retention = new Maintenance({
      collections: c,
      writer: { recover: async () => 0, stuckBatches: async () => 0, sweepMarkers: async () => 0 },
      clock: new ManualClock('2100-01-01T00:00:00Z'),
      logger: silentLogger(),
      intervalMs: 60_000,
      eventIdRetentionMs: 192 * 3_600_000,
      minuteRetentionMs: 48 * 3_600_000,
    });
    await retention.runOnce();
    expect(await c.ledger.count({})).toBe(0);
    expect(await c.finishedBatches.find({})).toEqual([{ _id: COUNTED, countedAt: expect.any(Date) }]);
  });

  it('asks for a retry when the batch of a claim it read was recorded on that claim and deleted meanwhile', async () => {
    const e = event();
    const slowMark = stalling(c.ledger, 'updateOne');
    const first = writerWith({ ...c, ledger: slowMark.collection }).apply([e]);
    await slowMark.stalled; // w1 counted the event, it has not recorded it on the claim yet
    const slowLookUp = stalling(c.batches, 'findOne');
    const second = writerWith({ ...c, batches: slowLookUp.collection }, 'w2').apply([e]);
    await slowLookUp.stalled; // w2 read the claim, with w1's batch
    slowMark.resume();
    expect((await first).get(e.id)).toBe('counted');
    slowLookUp.resume();
    expect((await second).get(e.id)).toBe('retry'); // no batch, no tombstone, and the claim is no longer that batch's
    expect((await writerWith(c, 'w2').apply([e])).get(e.id)).toBe('duplicate');
    expect(await orgMonth()).toMatchObject({ requests: 1 });
  });

  it("drops a batch's markers with the next update of each counter when its own writer finished it", async () => {
    const writer = writerWith(c);
    await writer.apply([event()]);
    const first = Object.keys((await orgMonth())?.applied ?? {});
    await writer.apply([event()]); // at once: no time has passed
    const applied = Object.keys((await orgMonth())?.applied ?? {});
    expect(applied).toHaveLength(1);
    expect(applied).not.toEqual(first);
    expect(await orgMonth()).toMatchObject({ requests: 2 });
    lease.advance(5_000);
    expect(await writer.sweepMarkers()).toBe(4); // the second batch's, on its four counters, no update came
    expect((await orgMonth())?.applied).toEqual({});
  });

  it('keeps the markers of a batch its writer let go after a failure until its lease is past, then fences it off', async () => {
    const dying = { ...c, counters: failing(c.counters, 'updateOne', 3) };
    await writerWith(dying).apply([event()]);
    const recovering = writerWith(c, 'w2');
    expect(await recovering.recover()).toBe(1); // at once: the lease was let go
    const recovered = Object.keys((await orgMonth())?.applied ?? {});
    lease.advance(LEASE_MS);
    await recovering.apply([event()]);
    await recovering.apply([event()]); // takes the second batch's markers along, not the recovered one's
    expect(Object.keys((await orgMonth())?.applied ?? {})).toHaveLength(2);
    expect(Object.keys((await orgMonth())?.applied ?? {})).toContain(recovered[0]);
    lease.advance(1);
    await recovering.apply([event()]);
    expect(Object.keys((await orgMonth())?.applied ?? {})).not.toContain(recovered[0]);
    expect(await orgMonth()).toMatchObject({ requests: 4, fence: leaseOfFirstWriter });
  });

  it('appends about the size of its counters to the counters file per batch, however many batches came just before', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'usage-writer-'));
    const onDisk = createEmbeddedStore({ dataDir: dir, compactionIntervalMs: 0 });
    try {
      const writer = writerWith(quotaCollections(onDisk));
      const size = () => statSync(path.join(dir, 'usage_counters.db')).size;
      // Batches of one event, ~33 a second, as under a steady trickle of requests (a soak at 50 req/s).
      for (let i = 0; i < 200; i++) {
        await writer.apply([event()]);
        lease.advance(30);
      }
      const before = size();
      await writer.apply([event()]);
      // four counters (the organization's and the user's minute and month), each appended whole: ~330 bytes each
      // with one or two markers, ~6 KB each when they held every batch of the last 5 seconds
      expect(size() - before).toBeLessThan(4 * 600);
    } finally {
      await onDisk.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('leaves a batch taken over to the recovery holding it, whose counter updates may come after its first writer finished', async () => {
    // w1 stalls after its counters, before recording its batch of one event on the claim, past its lease.
    const slowMark = stalling(c.ledger, 'updateOne');
    const w1 = writerWith({ ...c, ledger: slowMark.collection });
    const first = w1.apply([event()]);
    await slowMark.stalled;
    lease.advance(LEASE_MS + 1);
    // w2 takes the batch over and stalls before its own counter updates (they find w1's markers, if still there).
    const slowCounters = stalling(c.counters, 'updateOne');
    const w2 = writerWith({ ...c, counters: slowCounters.collection }, 'w2');
    const recovered = w2.recover();
    await slowCounters.stalled;
    slowMark.resume();
    await first;
    // w1 goes on counting; more than the markers' grace later, its updates would take the batch's markers along.
    lease.advance(5_000);
    await w1.apply([event()]);
    slowCounters.resume();
    expect(await recovered).toBe(1);
    expect(await orgMonth()).toMatchObject({ requests: 2 });
    expect(await userMinute()).toMatchObject({ requests: 2 });
    expect(await c.batches.count({})).toBe(0);
    expect(await batchTombstones()).toBe(1); // the recovery's; w1's own batches are recorded on their claims
  });

  it("never counts a batch again when its first writer's counter updates land after a recovery finished it", async () => {
    // w1's counter updates leave within its lease and land only after it ran out, a recovery finished the batch and
    // the recovery's next updates took the batch's markers along, more than 5 s later.
    const slowCounters = stalling(c.counters, 'updateOne');
    const w1 = writerWith({ ...c, counters: slowCounters.collection });
    const first = w1.apply([event()]);
    await slowCounters.stalled;
    lease.advance(LEASE_MS + 1);
    const w2 = writerWith(c, 'w2');
    expect(await w2.recover()).toBe(1);
    lease.advance(5_001);
    await w2.apply([event()]);
    expect(Object.keys((await orgMonth())?.applied ?? {})).toHaveLength(1);
    slowCounters.resume();
    expect((await first).size).toBe(1);
    expect(await orgMonth()).toMatchObject({ requests: 2, tokens: 20 });
    expect(await orgMinute()).toMatchObject({ requests: 2 });
    expect(await userMinute()).toMatchObject({ requests: 2 });
  });

  it('never counts a batch again when updates of a writer that let it go after a failure land after a recovery finished it', async () => {
    // w1's first counter update fails, the others are still on their way when it lets the batch go to a recovery.
    const slowCounters = stalling(c.counters, 'updateOne');
    const w1 = writerWith({ ...c, counters: failing(slowCounters.collection, 'updateOne', 1) });
    await w1.apply([event()]);
    await slowCounters.stalled;
    const w2 = writerWith(c, 'w2');
    expect(await w2.recover()).toBe(1); // at once: the lease was let go
    lease.advance(5_001);
    await w2.apply([event()]); // the first batch's markers stay while w1's lease lasts
    lease.advance(LEASE_MS);
    await w2.sweepMarkers(); // the first batch's markers go once w1's lease is past
    expect((await orgMonth())?.applied).toEqual({});
    slowCounters.resume();
    await slowCounters.landed();
    expect(await orgMonth()).toMatchObject({ requests: 2, tokens: 20 });
    expect(await orgMinute()).toMatchObject({ requests: 2 });
    expect(await userMinute()).toMatchObject({ requests: 2 });
  });

  it('never lets a writer that failed after its lease ran out release the lease of the recovery now holding its batch', async () => {
    // w1's counter updates leave within its lease and come back after it ran out, the first one failed.
    const slowCounters = stalling(failing(c.counters, 'updateOne', 1), 'updateOne');
    const w1 = writerWith({ ...c, counters: slowCounters.collection });
    const first = w1.apply([event()]);
    await slowCounters.stalled;
    lease.advance(LEASE_MS + 1);
    // The same instance's recovery takes the batch over (same owner) and stalls before its counter updates.
    const slowRecovery = stalling(c.counters, 'updateOne');
    const recovered = writerWith({ ...c, counters: slowRecovery.collection }).recover();
    await slowRecovery.stalled;
    slowCounters.resume();
    await first; // the failure lets go of a lease: it must not be the recovery's
    await slowCounters.landed();
    const w2 = writerWith(c, 'w2');
    await w2.recover();
    await w2.apply([event()]);
    slowRecovery.resume();
    await recovered;
    lease.advance(LEASE_MS + 1);
    await w2.recover();
    expect(await orgMonth()).toMatchObject({ requests: 2, tokens: 20 });
    expect(await orgMinute()).toMatchObject({ requests: 2 });
    expect(await userMinute()).toMatchObject({ requests: 2 });
    expect(await c.batches.count({})).toBe(0);
  });

  it('drops its own markers at once when a recovery that saw the batch stuck has not taken it yet', async () => {
    const slowDelete = stalling(c.batches, 'deleteOne');
    const w1 = writerWith({ ...c, batches: slowDelete.collection });
    const first = w1.apply([event()]);
    await slowDelete.stalled; // counters and tombstone written, the batch not yet deleted, its lease runs out
    lease.advance(LEASE_MS + 1);
    const slowTakeover = stalling(c.batches, 'findOneAndUpdate');
    const recovered = writerWith({ ...c, batches: slowTakeover.collection }, 'w2').recover();
    await slowTakeover.stalled; // w2 found it stuck
    slowDelete.resume();
    await first;
    await w1.apply([event()]); // takes the first batch's markers along
    expect(Object.keys((await orgMonth())?.applied ?? {})).toHaveLength(1);
    slowTakeover.resume();
    expect(await recovered).toBe(0); // gone: nothing left to apply again
    expect(await orgMonth()).toMatchObject({ requests: 2 });
  });

  it("drops the markers of a batch a recovery took from a stalled writer with the next update, fencing off that writer's lease", async () => {
    const slowDelete = stalling(c.batches, 'deleteOne');
    const w1 = writerWith({ ...c, batches: slowDelete.collection });
    const first = w1.apply([event()]);
    await slowDelete.stalled;
    lease.advance(LEASE_MS + 1);
    const w2 = writerWith(c, 'w2');
    expect(await w2.recover()).toBe(1); // its updates land on w1's markers, it finishes the batch
    slowDelete.resume();
    await first;
    const recovered = Object.keys((await orgMonth())?.applied ?? {});
    await w1.apply([event()]);
    await w2.apply([event()]); // w1's lease is past: the recovered batch's markers go now
    expect(Object.keys((await orgMonth())?.applied ?? {})).not.toContain(recovered[0]);
    expect(await orgMonth()).toMatchObject({ requests: 3, fence: leaseOfFirstWriter });
  });

  it('goes on with the other stuck batches when it loses the lease of one to an instance whose clock is ahead', async () => {
    // w3's clock is two leases ahead of w1's and w2's. A batch it let go after a failure, once finished, fences the
    // organization's and the user's counters at its lease: no lease of w1 or w2 gets past that fence yet.
    const ahead = new ManualClock(new Date(Date.parse(LEASE_START) + 2 * LEASE_MS));
    await writerWith({ ...c, counters: failing(c.counters, 'updateOne', 1) }, 'w3', ahead).apply([event()]);
    const w3 = writerWith(c, 'w3', ahead);
    expect(await w3.recover()).toBe(1);
    ahead.advance(LEASE_MS + 1);
    await w3.sweepMarkers();
    expect(await orgMonth()).toMatchObject({ requests: 1, fence: Date.parse(LEASE_START) + 3 * LEASE_MS });
    // w1's next batch is fenced off (left to a recovery); its batch of another organization fails half-way.
    await writerWith(c).apply([event()]);
    await writerWith({ ...c, counters: failing(c.counters, 'updateOne', 1) }).apply([
      event({ orgSlug: 'globex' }),
    ]);
    lease.advance(LEASE_MS + 1);
    const w2 = writerWith(c, 'w2');
    expect(await w2.recover()).toBe(1); // globex's; acme's is fenced off for w2 too
    const globexMonth = () =>
      c.counters.findOne({ _id: counterId({ orgSlug: 'globex' }, 'month', new Date('2025-03-01Z')) });
    expect(await globexMonth()).toMatchObject({ requests: 1 });
    expect(await w2.recover()).toBe(0); // acme's holds w2's lease now: it is not tried again at once
    expect(await w3.recover()).toBe(1); // by w3's clock, w2's lease is past
    expect(await orgMonth()).toMatchObject({ requests: 2 });
    expect(await c.batches.count({})).toBe(0);
  });

  it('warns, naming the batch, when a counter is fenced past the lease it recovers with: another clock is ahead', async () => {
    // As above: w3's clock is two leases ahead; the counters it fenced refuse every lease of w1 and w2 for a while.
    const ahead = new ManualClock(new Date(Date.parse(LEASE_START) + 2 * LEASE_MS));
    await writerWith({ ...c, counters: failing(c.counters, 'updateOne', 1) }, 'w3', ahead).apply([event()]);
    const w3 = writerWith(c, 'w3', ahead);
    await w3.recover();
    ahead.advance(LEASE_MS + 1);
    await w3.sweepMarkers();
    await writerWith(c).apply([event()]); // fenced off: left to a recovery
    lease.advance(LEASE_MS + 1);
    const lines: Array<{ level: number; msg: string; batchId?: string; fencedUntil?: string }> = [];
    const w2 = new UsageWriter({
      collections: c,
      clock: new ManualClock(NOW),
      leaseClock: lease,
      leaseMs: LEASE_MS,
      logger: createLogger({
        name: 'llm-quota',
        destination: { write: (line: string) => lines.push(JSON.parse(line)) },
      }),
      instanceId: 'w2',
    });
    const [stuck] = await c.batches.find({});
    expect(await w2.recover()).toBe(0);
    // it holds w2's lease, no other instance's: not an info line leaving it to another, a warning (40 in pino)
    expect(lines.filter((line) => line.batchId === stuck!._id)).toEqual([
      expect.objectContaining({
        level: 40,
        msg: expect.stringContaining('clock is ahead'),
        fencedUntil: new Date(Date.parse(LEASE_START) + 3 * LEASE_MS).toISOString(),
      }),
    ]);
  });

  it('goes on with the other stuck batches when finishing one fails, and tries that one again once its lease is past', async () => {
    // Two batches whose writers failed on their first counter update: let go to the recovery at once.
    await writerWith({ ...c, counters: failing(c.counters, 'updateOne', 1) }).apply([event()]);
    await writerWith({ ...c, counters: failing(c.counters, 'updateOne', 1) }).apply([
      event({ userId: 'u2' }),
    ]);
    const w2 = writerWith({ ...c, counters: failing(c.counters, 'updateOne', 1) }, 'w2');
    expect(await w2.recover()).toBe(1); // the other batch fails on w2's first counter update
    expect(await c.batches.count({})).toBe(1);
    expect(await w2.recover()).toBe(0); // it holds w2's lease: a maintenance pass does not loop on it
    lease.advance(LEASE_MS + 1);
    expect(await w2.recover()).toBe(1);
    expect(await orgMonth()).toMatchObject({ requests: 2, tokens: 20 });
    expect(await orgMinute()).toMatchObject({ requests: 2 });
    expect(await userMinute()).toMatchObject({ requests: 1 });
    expect(await c.batches.count({})).toBe(0);
  });

  it('exports the batches stuck past a lease and what each recovery did with one, as maintenance passes go', async () => {
    const metrics = createQuotaMetrics();
    const exported = async () =>
      parseMetrics(await metrics.http.registry.metrics())
        .filter((s) => s.name === 'llm_quota_stuck_batches' || s.name === 'llm_quota_batch_recoveries_total')
        .map((s) => [s.name, s.labels.outcome ?? '', s.value]);
    const pass = (collections: QuotaCollections, id: string) =>
      new Maintenance({
        collections: c,
        writer: new UsageWriter({
          collections,
          clock: new ManualClock(NOW),
          leaseClock: lease,
          leaseMs: LEASE_MS,
          logger: silentLogger(),
          instanceId: id,
          onRecovery: (outcome) => metrics.batchRecovered(outcome),
        }),
        clock: new ManualClock(NOW),
        logger: silentLogger(),
        intervalMs: 60_000,
        eventIdRetentionMs: 192 * 3_600_000,
        minuteRetentionMs: 48 * 3_600_000,
        onStuckBatches: (count) => metrics.stuckBatches(count),
      }).runOnce();
    // A batch whose writer failed on a counter (its events acknowledged as counted), and one whose writer failed
    // while claiming (its events come again); the store keeps refusing the counters of the first.
    await writerWith({ ...c, counters: failing(c.counters, 'updateOne', 1) }).apply([event()]);
    await expect(
      writerWith({ ...c, ledger: failing(c.ledger, 'insertOne', 1) }).apply([event()]),
    ).rejects.toThrow();
    const refusing = Object.assign(Object.create(c.counters), {
      updateOne: () => Promise.reject(new Error('refused')),
    });
    await pass({ ...c, counters: refusing }, 'w2');
    expect(await exported()).toEqual([
      ['llm_quota_batch_recoveries_total', 'finished', 0],
      ['llm_quota_batch_recoveries_total', 'undone', 1],
      ['llm_quota_batch_recoveries_total', 'failed', 1],
      ['llm_quota_batch_recoveries_total', 'lost_lease', 0],
      ['llm_quota_stuck_batches', '', 0], // open for less than a lease yet
    ]);
    lease.advance(LEASE_MS + 1);
    await pass({ ...c, counters: refusing }, 'w2');
    expect(await exported()).toContainEqual(['llm_quota_batch_recoveries_total', 'failed', 2]);
    expect(await exported()).toContainEqual(['llm_quota_stuck_batches', '', 1]);
    lease.advance(LEASE_MS + 1);
    await pass(c, 'w3'); // the store takes the counters again
    expect(await exported()).toContainEqual(['llm_quota_batch_recoveries_total', 'finished', 1]);
    expect(await exported()).toContainEqual(['llm_quota_stuck_batches', '', 0]);
    expect(await orgMonth()).toMatchObject({ requests: 1 });
  });

  it('never counts a batch again when updates of a recovery that failed half-way land after the next recovery finished it', async () => {
    await writerWith({ ...c, counters: failing(c.counters, 'updateOne', 1) }).apply([event()]);
    // w2's recovery: its first counter update stalls, its second fails; it goes on, its other updates on their way.
    const slowCounters = stalling(c.counters, 'updateOne');
    const w2 = writerWith({ ...c, counters: failing(slowCounters.collection, 'updateOne', 2) }, 'w2');
    const recovered = w2.recover();
    await slowCounters.stalled;
    expect(await recovered).toBe(0);
    lease.advance(LEASE_MS + 1);
    const w3 = writerWith(c, 'w3');
    expect(await w3.recover()).toBe(1);
    lease.advance(5_001);
    await w3.apply([event()]); // w2's lease is past: the batch's markers go, fencing it off
    expect(Object.keys((await orgMonth())?.applied ?? {})).toHaveLength(1);
    slowCounters.resume();
    await slowCounters.landed();
    expect(await orgMonth()).toMatchObject({ requests: 2, tokens: 20 });
    expect(await orgMinute()).toMatchObject({ requests: 2 });
    expect(await userMinute()).toMatchObject({ requests: 2 });
  });

  it('tries the stuck batches in turn, the longest waiting first: batches failing again and again never hold one back', async () => {
    const stuck = (_id: string, orgSlug: string, leaseUntil: number) =>
      c.batches.insertOne({
        _id,
        state: 'applying',
        owner: 'w0',
        leaseUntil,
        countedAt: NOW,
        events: 1,
        increments: sumIncrements([event({ orgSlug })]),
      });
    // Two batches of an organization whose counters the store keeps refusing (let go at once by their writers), and
    // one of another organization whose writer died.
    await stuck('a-initech', 'initech', 0);
    await stuck('b-initech', 'initech', 0);
    await stuck('c-acme', 'acme', Date.parse(LEASE_START) - 1);
    const refusing = Object.assign(Object.create(c.counters), {
      updateOne: (filter: { _id: string }, ...rest: [never, never]) =>
        filter._id.includes('|initech')
          ? Promise.reject(new Error('refused'))
          : c.counters.updateOne(filter, ...rest),
    });
    const w2 = writerWith({ ...c, counters: refusing }, 'w2');
    expect(await w2.recover(2)).toBe(0); // a sweep's page holds only failing batches
    lease.advance(LEASE_MS + 1);
    expect(await w2.recover(2)).toBe(1);
    expect(await orgMonth()).toMatchObject({ requests: 1 });
    expect((await c.batches.find({})).map((b) => b._id).sort()).toEqual(['a-initech', 'b-initech']);
  });

  it('takes each stuck batch with a whole lease of its own, however long the ones before it took', async () => {
    await writerWith({ ...c, counters: failing(c.counters, 'updateOne', 1) }).apply([event()]);
    await writerWith({ ...c, counters: failing(c.counters, 'updateOne', 1) }).apply([
      event({ userId: 'u2' }),
    ]);
    const slow = stalling(c.counters, 'updateOne');
    const recovered = writerWith({ ...c, counters: slow.collection }, 'w2').recover();
    await slow.stalled;
    lease.advance(LEASE_MS - 1_000); // the first batch took most of a lease to finish
    slow.resume();
    expect(await recovered).toBe(2);
    expect(await orgMonth()).toMatchObject({ requests: 2, tokens: 20 });
    expect(await c.batches.count({})).toBe(0);
  });

  it('re-applies nothing after a crash between deleting a batch and the next update of its counters', async () => {
    const e = event();
    const stopped = stalling(c.counters, 'updateOne', 5); // the second batch's counter updates never come
    const w1 = writerWith({ ...c, counters: stopped.collection });
    await w1.apply([e]);
    void w1.apply([event()]);
    await stopped.stalled; // the process dies here: the first batch's markers stay on its counters
    lease.advance(LEASE_MS + 1);
    const w2 = writerWith(c, 'w2');
    expect(await w2.recover()).toBe(1); // the second batch, journaled as applying
    expect((await w2.apply([e])).get(e.id)).toBe('duplicate');
    expect(await w2.recover()).toBe(0);
    expect(await orgMonth()).toMatchObject({ requests: 2 });
  });

  it('reads claims and tombstones written before decision 0124 as before', async () => {
    const legacyClaim = (e: CountableEvent, batch: string) =>
      c.ledger.insertOne({
        _id: e.id,
        batch,
        orgSlug: e.orgSlug,
        userId: e.userId,
        apiKeyId: e.apiKeyId,
        model: e.model,
        provider: e.provider,
        occurredAt: e.occurredAt,
        countedAt: e.countedAt,
        receivedAt: e.receivedAt,
        prompt_tokens: e.prompt_tokens,
        completion_tokens: e.completion_tokens,
        total_tokens: e.total_tokens,
        cost_micros: e.cost_micros,
      } as never);
    const counted = event();
    const finished = '18f3c2a1b00-5b0c8f0e-2f7d-4c55-9d5e-0a3c1f2b7e11';
    await c.finishedBatches.insertOne({
      _id: finished,
      countedAt: NOW,
      events: 1,
      latestOccurredAt: counted.occurredAt,
    });
    await legacyClaim(counted, finished);
    expect((await writerWith(c).apply([counted])).get(counted.id)).toBe('duplicate');
    const undone = event();
    await c.batches.insertOne({
      _id: 'undone',
      state: 'aborted',
      owner: 'w0',
      leaseUntil: 0,
      countedAt: NOW,
      events: 1,
      increments: [],
    });
    await legacyClaim(undone, 'undone');
    expect((await writerWith(c).apply([undone])).get(undone.id)).toBe('counted');
    expect((await writerWith(c, 'w2').apply([undone])).get(undone.id)).toBe('duplicate');
    expect(await orgMonth()).toMatchObject({ requests: 1 });
  });
});
