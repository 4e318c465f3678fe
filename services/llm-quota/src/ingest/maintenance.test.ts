import { ManualClock, silentLogger } from '@platform/kernel';
import { createEmbeddedStore } from '@platform/store';
import { quotaCollections } from '../data/collections';
import { counterId } from '../domain/windows';
import { Maintenance } from './maintenance';
import { sumIncrements, UsageWriter } from './usage-writer';

const HOUR = 3_600_000;

describe('Maintenance', () => {
  it('recovers batches, then forgets event ids and minute counters past retention, keeping month counters and the ids of events dated ahead', async () => {
    const store = createEmbeddedStore();
    const c = quotaCollections(store);
    const clock = new ManualClock('2025-03-15T12:00:00Z');
    const recover = jest.fn().mockResolvedValueOnce(2).mockResolvedValue(0);
    const sweepMarkers = jest.fn().mockResolvedValue(0);
    const counter = (kind: 'minute' | 'month', at: string) => ({
      _id: counterId({ orgSlug: 'acme' }, kind, new Date(at)),
      orgSlug: 'acme',
      userId: null,
      window: kind,
      start: new Date(at),
      requests: 1,
      tokens: 1,
      prompt_tokens: 1,
      completion_tokens: 0,
      cost_micros: 0,
      lastRequestAt: new Date(at),
      refreshedAt: new Date(at),
    });
    await c.counters.insertOne(counter('minute', '2025-03-13T11:00:00Z')); // 49 h old
    await c.counters.insertOne(counter('minute', '2025-03-13T13:00:00Z')); // 47 h old
    await c.counters.insertOne(counter('month', '2025-01-01T00:00:00Z'));
    const ledger = (id: string, receivedAt: string, occurredAt = receivedAt) =>
      ({ _id: id, batch: 'b', receivedAt: new Date(receivedAt), occurredAt: new Date(occurredAt) }) as never;
    await c.ledger.insertOne(ledger('old', '2025-03-07T11:00:00Z')); // 8 days + 1 h
    await c.ledger.insertOne(ledger('recent', '2025-03-07T13:00:00Z'));
    // claims hold their date only when it is later than their arrival (decision 0124)
    await c.ledger.insertOne({ _id: 'old-claim', batch: 'b', receivedAt: new Date('2025-03-07T11:00:00Z') });
    await c.ledger.insertOne({
      _id: 'recent-claim',
      batch: 'b',
      receivedAt: new Date('2025-03-07T13:00:00Z'),
    });
    // received as long ago, dated two days ahead: it is not too old by its own date until March 16
    await c.ledger.insertOne(ledger('dated-ahead', '2025-03-07T11:00:00Z', '2025-03-09T11:00:00Z'));
    const batch = (id: string, countedAt: string, latestOccurredAt?: string) =>
      c.finishedBatches.insertOne({
        _id: id,
        countedAt: new Date(countedAt),
        events: 1,
        ...(latestOccurredAt ? { latestOccurredAt: new Date(latestOccurredAt) } : {}),
      });
    await batch('old-batch', '2025-03-07T10:00:00Z', '2025-03-07T09:59:00Z');
    await batch('old-batch-without-dates', '2025-03-07T10:00:00Z'); // written before batches kept them
    await batch('recent-batch', '2025-03-07T11:30:00Z', '2025-03-07T11:29:00Z');
    await batch('dated-ahead-batch', '2025-03-07T10:00:00Z', '2025-03-09T11:00:00Z');

    const maintenance = new Maintenance({
      collections: c,
      writer: { recover, stuckBatches: jest.fn().mockResolvedValue(0), sweepMarkers },
      clock,
      logger: silentLogger(),
      intervalMs: 60_000,
      eventIdRetentionMs: 8 * 24 * HOUR,
      minuteRetentionMs: 48 * HOUR,
    });
    await maintenance.runOnce();
    expect(recover).toHaveBeenCalledTimes(2); // again while there was a backlog
    expect(sweepMarkers).toHaveBeenCalled();
    expect((await c.counters.find({})).map((d) => d._id).sort()).toEqual([
      'minute|2025-03-13T13:00|org|acme',
      'month|2025-01|org|acme',
    ]);
    expect((await c.ledger.find({})).map((d) => d._id).sort()).toEqual([
      'dated-ahead',
      'recent',
      'recent-claim',
    ]);
    // batches are kept an hour longer than the claims pointing to them
    expect((await c.finishedBatches.find({})).map((d) => d._id).sort()).toEqual([
      'dated-ahead-batch',
      'recent-batch',
    ]);
    await maintenance.stop();
    await store.close();
  });

  it('goes on to forget old event ids when a stuck batch cannot be finished, without trying it again and again', async () => {
    const store = createEmbeddedStore();
    const c = quotaCollections(store);
    const at = new Date('2025-03-15T11:59:00Z');
    // A batch its writer let go, whose counters cannot be written (a store refusing these updates).
    await c.batches.insertOne({
      _id: 'stuck',
      state: 'applying',
      owner: 'w0',
      leaseUntil: 0,
      countedAt: at,
      events: 1,
      increments: sumIncrements([
        {
          id: 'e-1',
          orgSlug: 'acme',
          userId: null,
          apiKeyId: null,
          model: 'm',
          provider: 'p',
          occurredAt: at,
          countedAt: at,
          receivedAt: at,
          prompt_tokens: 1,
          completion_tokens: 1,
          total_tokens: 2,
          cost_micros: 0,
        },
      ]),
    });
    await c.ledger.insertOne({ _id: 'old', batch: 'b', receivedAt: new Date('2025-03-07T11:00:00Z') });
    const refused = jest.fn().mockRejectedValue(new Error('refused'));
    const writer = new UsageWriter({
      collections: { ...c, counters: Object.assign(Object.create(c.counters), { updateOne: refused }) },
      clock: new ManualClock('2025-03-15T12:00:00Z'),
      leaseClock: new ManualClock('2025-03-15T12:00:00Z'),
      leaseMs: 60_000,
      logger: silentLogger(),
    });
    const maintenance = new Maintenance({
      collections: c,
      writer,
      clock: new ManualClock('2025-03-15T12:00:00Z'),
      logger: silentLogger(),
      intervalMs: 60_000,
      eventIdRetentionMs: 8 * 24 * HOUR,
      minuteRetentionMs: 48 * HOUR,
    });
    await maintenance.runOnce();
    expect(await c.ledger.count({})).toBe(0);
    expect(refused).toHaveBeenCalledTimes(2); // once per counter of the batch, in one try
    expect(await c.batches.count({ state: 'applying' })).toBe(1); // left for a later pass
    await store.close();
  });
});
