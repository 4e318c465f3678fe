import { Unavailable } from '@platform/kernel';
import { MongoClient, MongoNetworkError, MongoServerError, MongoTopologyClosedError } from 'mongodb';
import mongoose from 'mongoose';
import { createMongoStore, DatabaseUnreachableError } from '../src';
import { isServerAway, mongoCollection, type Raw } from '../src/mongo-store';

/**
 * What the MongoDB engine answers while its server is away. No MongoDB server can run here: a client whose
 * server never answers (a closed loopback port) stands for one that went away.
 */
describe('the MongoDB engine while the database is away', () => {
  let client: MongoClient;
  beforeAll(() => {
    client = new MongoClient('mongodb://127.0.0.1:9/?serverSelectionTimeoutMS=100');
  });
  afterAll(() => client.close());

  it('operations fail as StoreUnavailable (503, try again), and the indexes are tried again by the next one', async () => {
    const native = client.db('platform_test').collection<Raw>('things');
    const createIndex = jest.spyOn(native, 'createIndex');
    const things = mongoCollection<{ _id: string; n: number }>('things', native, [{ fields: { n: 1 } }]);

    const failure = await things.insertOne({ _id: 'a', n: 1 }).catch((err: unknown) => err);
    expect(failure).toBeInstanceOf(Unavailable);
    expect(failure).toMatchObject({ error: 'StoreUnavailable', retryAfter: 1 });
    expect(String((failure as Error).cause)).toMatch(/things: MongoServerSelectionError/);
    await expect(things.findOne({ _id: 'a' })).rejects.toBeInstanceOf(Unavailable);
    // the first operation waits for the build started with the collection; its failure is not kept, so the
    // next operation builds again (a collection first used during an outage works once the server is back)
    expect(createIndex).toHaveBeenCalledTimes(2);
  });

  it('an index that cannot be built over the data is that error, not a duplicate insert', async () => {
    const native = client.db('platform_test').collection<Raw>('dups');
    const building = new MongoServerError({
      code: 11000,
      errmsg: 'E11000 duplicate key error building an index',
    });
    jest.spyOn(native, 'createIndex').mockRejectedValue(building);
    const dups = mongoCollection<{ _id: string; n: number }>('dups', native, [
      { fields: { n: 1 }, unique: true },
    ]);
    await expect(dups.findOne({ _id: 'a' })).rejects.toBe(building);
  });

  it('tells a server away from an error of the request', () => {
    expect(isServerAway(new MongoNetworkError('connection reset'))).toBe(true);
    expect(isServerAway(new MongoTopologyClosedError())).toBe(true);
    expect(isServerAway(new MongoServerError({ code: 10107, errmsg: 'not primary' }))).toBe(true);
    expect(isServerAway(new MongoServerError({ code: 91, errmsg: 'shutdown in progress' }))).toBe(true);
    expect(isServerAway(new MongoServerError({ code: 2, errmsg: 'bad value' }))).toBe(false);
    expect(isServerAway(new Error('anything else'))).toBe(false);
  });

  it('opening tells a database that does not answer from a URL it cannot use, and keeps no connection of a failure', async () => {
    const before = mongoose.connections.length;
    for (let attempt = 0; attempt < 3; attempt++)
      await expect(
        createMongoStore({ url: 'mongodb://127.0.0.1:9/none?serverSelectionTimeoutMS=100' }),
      ).rejects.toBeInstanceOf(DatabaseUnreachableError);
    expect(mongoose.connections.length).toBe(before);
    const unusable = await createMongoStore({ url: 'mongodb://127.0.0.1:9/none?authMechanism=BOGUS' }).catch(
      (err: unknown) => err,
    );
    expect(unusable).toBeInstanceOf(Error);
    expect(unusable).not.toBeInstanceOf(DatabaseUnreachableError);
    expect(String(unusable)).toMatch(/authMechanism/);
  });
});
