import {
  type Collection as MongoCollection,
  type Document as MongoDocument,
  MongoNetworkError,
  MongoNotConnectedError,
  MongoServerClosedError,
  MongoServerError,
  MongoServerSelectionError,
  MongoTopologyClosedError,
} from 'mongodb';
import mongoose from 'mongoose';
import { pieceBlobs } from './blobs';
import type { MongoStoreOptions } from './mongo';
import { storeUnavailable } from './unavailable';

/** How documents look to the driver: string ids, anything else. */
export type Raw = { _id: string } & MongoDocument;

import {
  type BlobBucket,
  type Collection,
  type Doc,
  DuplicateKeyError,
  type Filter,
  type FindOptions,
  type IndexSpec,
  refuseUndefined,
  type Store,
  type Update,
  type UpdateOptions,
  type UpdateResult,
} from './port';

/**
 * The MongoDB engine: a mongoose connection, its native collections, the port's operators as they are. Loaded by
 * `createMongoStore` (./mongo.ts) only when a service is configured for MongoDB.
 */
export async function openMongoStore(options: MongoStoreOptions): Promise<Store> {
  const connection = mongoose.createConnection(options.url, {
    dbName: options.dbName,
    // a timeout in the URL (`?serverSelectionTimeoutMS=`) is the operator's: an option here would override it
    ...(/[?&]serverSelectionTimeoutMS=/i.test(options.url)
      ? {}
      : { serverSelectionTimeoutMS: options.serverSelectionTimeoutMs ?? 10_000 }),
  });
  try {
    await connection.asPromise();
  } catch (err) {
    // the driver would go on monitoring the server, and mongoose would keep the connection in its list: a caller
    // that tries again opens a new one
    await connection.destroy().catch(() => undefined);
    throw err;
  }
  const db = connection.db;
  if (!db) throw new Error('MongoDB connection has no database');
  const handles = new Map<string, Collection<Doc>>();
  const buckets = new Map<string, BlobBucket>();
  const collection = <T extends Doc>(name: string, indexes: IndexSpec[] = []): Collection<T> => {
    let handle = handles.get(name);
    if (!handle) {
      handle = mongoCollection<Doc>(name, db.collection<Raw>(name), indexes);
      handles.set(name, handle);
    }
    return handle as unknown as Collection<T>;
  };
  return {
    engine: 'mongodb',
    collection,
    blobs: (bucket: string): BlobBucket => {
      let blobs = buckets.get(bucket);
      if (!blobs) {
        blobs = pieceBlobs({ collection }, bucket);
        buckets.set(bucket, blobs);
      }
      return blobs;
    },
    async ping() {
      await db.command({ ping: 1 });
    },
    async close() {
      await connection.close();
    },
  };
}

/**
 * Server codes of a node that cannot serve now: not, or no longer, the primary, or shutting down (the "not primary"
 * and "node is recovering" errors of MongoDB's server discovery specification, which a replica set's election
 * answers), and a mongos that cannot reach its shard (host unreachable or not found, network timeout, socket error).
 */
const NODE_AWAY_CODES = new Set([6, 7, 89, 91, 189, 9001, 10058, 10107, 11600, 11602, 13435, 13436]);

/** The database cannot be reached right now (no server, a network failure, an election): 503, not 500. */
export function isServerAway(err: unknown): boolean {
  return (
    err instanceof MongoNetworkError ||
    err instanceof MongoServerSelectionError ||
    err instanceof MongoNotConnectedError ||
    err instanceof MongoTopologyClosedError ||
    err instanceof MongoServerClosedError ||
    (err instanceof MongoServerError && NODE_AWAY_CODES.has(Number(err.code)))
  );
}

/** system errors of a connection or a name lookup that did not get through (DNS away at start, say) */
const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
]);

/**
 * Opening the store failed because the database did not answer, as opposed to a URL, an option or credentials it
 * cannot use (those do not mend with time). mongoose reports server selection as its own error class.
 */
export function isUnreachable(err: unknown): boolean {
  const { name, code } = (err ?? {}) as { name?: unknown; code?: unknown };
  return isServerAway(err) || name === 'MongooseServerSelectionError' || NETWORK_CODES.has(String(code));
}

/**
 * The port's collection over a native one. Its indexes are built before its first operation; when that fails (the
 * server away), the next operation tries again. Failures of a server that cannot be reached are `StoreUnavailable`.
 */
export function mongoCollection<T extends Doc>(
  name: string,
  native: MongoCollection<Raw>,
  indexes: readonly IndexSpec[],
): Collection<T> {
  let built: Promise<void> | undefined;
  const indexesBuilt = () =>
    (built ??= Promise.all(
      indexes.map((ix) =>
        native.createIndex(ix.fields, {
          unique: ix.unique ?? false,
          sparse: ix.sparse ?? false,
          ...(ix.expireAfterSeconds !== undefined ? { expireAfterSeconds: ix.expireAfterSeconds } : {}),
        }),
      ),
    ).then(
      () => undefined,
      (err) => {
        built = undefined;
        throw err;
      },
    ));
  void indexesBuilt().catch(() => undefined);
  return new MongoCollectionAdapter<T>(name, native, indexesBuilt);
}

class MongoCollectionAdapter<T extends Doc> implements Collection<T> {
  constructor(
    readonly name: string,
    private readonly native: MongoCollection<Raw>,
    private readonly indexesBuilt: () => Promise<void>,
  ) {}

  private async run<R>(task: () => Promise<R>): Promise<R> {
    try {
      await this.indexesBuilt();
    } catch (err) {
      // an index that cannot be built over the data (duplicates under a unique index) is not a duplicate insert
      throw isServerAway(err) ? storeUnavailable(this.name, err) : err;
    }
    try {
      return await task();
    } catch (err) {
      if ((err as { code?: number }).code === 11000) {
        throw new DuplicateKeyError(this.name, (err as Error).message);
      }
      if (isServerAway(err)) throw storeUnavailable(this.name, err);
      throw err;
    }
  }

  insertOne(doc: T): Promise<T> {
    return this.run(async () => {
      await this.native.insertOne({ ...doc } as Raw);
      return doc;
    });
  }

  insertMany(docs: T[]): Promise<T[]> {
    if (docs.length === 0) return Promise.resolve([]);
    return this.run(async () => {
      await this.native.insertMany(
        docs.map((doc) => ({ ...doc }) as Raw),
        { ordered: true },
      );
      return docs;
    });
  }

  findOne(filter: Filter): Promise<T | null> {
    refuseUndefined(filter);
    return this.run(async () => (await this.native.findOne(filter)) as unknown as T | null);
  }

  find(filter: Filter, options: FindOptions = {}): Promise<T[]> {
    refuseUndefined(filter);
    return this.run(async () => {
      let cursor = this.native.find(filter);
      if (options.sort) cursor = cursor.sort(options.sort);
      if (options.skip) cursor = cursor.skip(options.skip);
      if (options.limit) cursor = cursor.limit(options.limit);
      return (await cursor.toArray()) as unknown as T[];
    });
  }

  count(filter: Filter): Promise<number> {
    refuseUndefined(filter);
    return this.run(() => this.native.countDocuments(filter));
  }

  updateOne(filter: Filter, update: Update, options: UpdateOptions = {}): Promise<UpdateResult> {
    refuseUndefined(filter);
    return this.run(async () => {
      const r = await this.native.updateOne(filter, update as MongoDocument, {
        upsert: options.upsert ?? false,
      });
      return {
        matched: r.matchedCount,
        modified: r.modifiedCount,
        ...(r.upsertedId !== null && r.upsertedId !== undefined ? { upsertedId: String(r.upsertedId) } : {}),
      };
    });
  }

  updateMany(filter: Filter, update: Update): Promise<UpdateResult> {
    refuseUndefined(filter);
    return this.run(async () => {
      const r = await this.native.updateMany(filter, update as MongoDocument);
      return { matched: r.matchedCount, modified: r.modifiedCount };
    });
  }

  findOneAndUpdate(filter: Filter, update: Update, options: UpdateOptions = {}): Promise<T | null> {
    refuseUndefined(filter);
    return this.run(
      async () =>
        (await this.native.findOneAndUpdate(filter, update as MongoDocument, {
          upsert: options.upsert ?? false,
          returnDocument: 'after',
        })) as unknown as T | null,
    );
  }

  deleteOne(filter: Filter): Promise<number> {
    refuseUndefined(filter);
    return this.run(async () => (await this.native.deleteOne(filter)).deletedCount);
  }

  deleteMany(filter: Filter): Promise<number> {
    refuseUndefined(filter);
    return this.run(async () => (await this.native.deleteMany(filter)).deletedCount);
  }
}
