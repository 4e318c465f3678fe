import { type Logger, ManualClock } from '@platform/kernel';
import type { Collection, MongoClient } from 'mongodb';
import {
  admission,
  admitInMongo,
  createRateLimits,
  MemorySlidingLog,
  type RateLogDoc,
  RECONNECT_MS,
} from './rate-limits';

const rule = { points: 60, durationSeconds: 60 };
const start = Date.parse('2026-11-28T10:00:00Z');

describe('the in-memory sliding log', () => {
  it('forgets the consumers idle for a whole window (swept once per window)', () => {
    const clock = new ManualClock(start);
    const log = new MemorySlidingLog(rule, clock);
    for (const consumer of ['a', 'b']) log.consume(consumer);
    clock.advance(30_000);
    log.consume('b');
    clock.advance(30_000);
    // a's newest request is 60 s old now: nothing of it is in force
    log.consume('c');
    expect(log.size).toBe(2);
    clock.advance(60_000);
    log.consume('c');
    expect(log.size).toBe(1);
  });

  it('follows at most maxConsumers, the least recently seen leaving first', () => {
    const clock = new ManualClock(start);
    const log = new MemorySlidingLog({ points: 2, durationSeconds: 60 }, clock, 3);
    for (const consumer of ['a', 'a', 'b', 'c']) log.consume(consumer);
    expect(log.consume('a')).toEqual({ allowed: false, retryAfterSeconds: 60 });
    clock.advance(1_000);
    log.consume('b');
    log.consume('d');
    expect(log.size).toBe(3);
    // c was the least recently seen: it went; a, refused since, kept its log
    expect(log.consume('a')).toEqual({ allowed: false, retryAfterSeconds: 59 });
  });
});

describe('the MongoDB sliding log', () => {
  it('admits with one update: fewer than points entries, or the oldest out of the window; pushes now, keeps the last points', () => {
    const now = start + 90_000;
    expect(admission('route:user-1', rule, now)).toEqual({
      filter: {
        _id: 'route:user-1',
        $or: [{ 'ts.59': { $exists: false } }, { 'ts.0': { $lte: now - 60_000 } }],
      },
      update: {
        $push: { ts: { $each: [now], $slice: -60 } },
        $set: { expireAt: new Date(now + 60_000) },
      },
    });
  });

  const duplicateKey = Object.assign(new Error('E11000 duplicate key error'), { code: 11000 });
  const collection = (found: Array<Partial<RateLogDoc> | null>) => {
    const updateOne = jest.fn().mockRejectedValue(duplicateKey);
    const findOne = jest.fn();
    for (const doc of found) findOne.mockResolvedValueOnce(doc);
    return { updateOne, findOne } as unknown as Collection<RateLogDoc> & {
      updateOne: jest.Mock;
      findOne: jest.Mock;
    };
  };

  it('refuses when the update matched nothing and the log is full, until its oldest leaves the window', async () => {
    const now = start + 90_000;
    const full = Array.from({ length: 60 }, (_, i) => start + 45_500 + i);
    const logs = collection([{ _id: 'k', ts: full }]);
    expect(await admitInMongo(logs, 'k', rule, now)).toEqual({ allowed: false, retryAfterSeconds: 16 });
    expect(logs.updateOne).toHaveBeenCalledWith(
      admission('k', rule, now).filter,
      admission('k', rule, now).update,
      { upsert: true },
    );
  });

  it('tries once more when a concurrent first request made the document (duplicate key, log not full)', async () => {
    const logs = collection([{ _id: 'k', ts: [start] }]);
    logs.updateOne.mockRejectedValueOnce(duplicateKey).mockResolvedValueOnce({ matchedCount: 1 });
    expect(await admitInMongo(logs, 'k', rule, start + 1)).toEqual({ allowed: true });
    expect(logs.updateOne).toHaveBeenCalledTimes(2);
  });

  const limitsOn = (client: { connect: jest.Mock; updateOne: jest.Mock }, clock: ManualClock) => {
    const mongo = {
      connect: client.connect,
      db: () => ({
        collection: () => ({ updateOne: client.updateOne, createIndex: () => Promise.resolve() }),
      }),
    } as unknown as MongoClient;
    const logger = { error: jest.fn(), warn: jest.fn(), info: jest.fn() };
    const limits = createRateLimits({ mongo, dbName: 'edge', logger: logger as unknown as Logger, clock });
    return { limits, logger };
  };
  const settle = () => new Promise((resolve) => setImmediate(resolve));

  it('counts in memory while MongoDB fails (logged once), and refuses there too past the limit', async () => {
    const client = {
      connect: jest.fn().mockResolvedValue(undefined),
      updateOne: jest.fn().mockRejectedValue(new Error('connection refused')),
    };
    const { limits, logger } = limitsOn(client, new ManualClock(start));
    const decisions = [];
    for (let i = 0; i < 61; i++) {
      decisions.push(await limits.consume('route', rule, 'user-1'));
      await settle();
    }
    expect(client.updateOne).toHaveBeenCalled();
    expect(decisions.filter((d) => d.allowed)).toHaveLength(60);
    expect(decisions[60]).toEqual({ allowed: false, retryAfterSeconds: 60 });
    expect(logger.error).toHaveBeenCalledTimes(1);
  });

  it('leaves MongoDB alone for RECONNECT_MS after a failed operation: requests do not each wait out its timeout', async () => {
    const clock = new ManualClock(start);
    const client = {
      connect: jest.fn().mockResolvedValue(undefined),
      updateOne: jest
        .fn()
        .mockRejectedValueOnce(new Error('server selection timed out'))
        .mockResolvedValue({ matchedCount: 1 }),
    };
    const { limits } = limitsOn(client, clock);
    await limits.consume('route', rule, 'user-1');
    await settle();
    expect(await limits.consume('route', rule, 'user-1')).toEqual({ allowed: true });
    expect(client.updateOne).toHaveBeenCalledTimes(1);
    await limits.consume('route', rule, 'user-1');
    expect(client.updateOne).toHaveBeenCalledTimes(1);
    clock.advance(RECONNECT_MS);
    await limits.consume('route', rule, 'user-1');
    expect(client.updateOne).toHaveBeenCalledTimes(2);
  });

  it('connects again, every RECONNECT_MS, a client whose connection failed (the driver leaves it closed)', async () => {
    const clock = new ManualClock(start);
    const closed = Object.assign(new Error('Topology is closed'), { name: 'MongoTopologyClosedError' });
    const client = {
      connect: jest.fn().mockRejectedValueOnce(new Error('ECONNREFUSED')).mockResolvedValue(undefined),
      updateOne: jest.fn().mockRejectedValueOnce(closed).mockResolvedValue({ matchedCount: 1 }),
    };
    const { limits } = limitsOn(client, clock);
    // not connected: memory answers at once, the connection is made meanwhile
    expect(await limits.consume('route', rule, 'user-1')).toEqual({ allowed: true });
    await settle();
    expect(await limits.consume('route', rule, 'user-1')).toEqual({ allowed: true });
    expect(client.connect).toHaveBeenCalledTimes(1);
    clock.advance(RECONNECT_MS);
    await limits.consume('route', rule, 'user-1');
    await settle();
    expect(client.connect).toHaveBeenCalledTimes(2);
    // connected: MongoDB counts; a client found closed is connected again
    await limits.consume('route', rule, 'user-1');
    expect(client.updateOne).toHaveBeenCalledTimes(1);
    await limits.consume('route', rule, 'user-1');
    await settle();
    expect(client.connect).toHaveBeenCalledTimes(3);
    await limits.consume('route', rule, 'user-1');
    expect(client.updateOne).toHaveBeenCalledTimes(2);
  });
});
