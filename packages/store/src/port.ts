/**
 * The persistence port: a small subset of MongoDB's document model that both engines implement
 * faithfully (embedded NeDB and MongoDB through mongoose). Services depend on this, never on an engine.
 */

/** Every stored document has a string `_id` chosen by the caller (ids are made in the domain). */
export interface Doc {
  _id: string;
}

/**
 * Query filter. Supported: field equality (dotted paths allowed), and the operators
 * `$eq $ne $in $nin $lt $lte $gt $gte $exists` on fields, plus top-level `$or` / `$and`.
 */
export type Filter = Record<string, unknown>;

/** Update operators supported by both engines. */
export interface Update {
  $set?: Record<string, unknown>;
  $unset?: Record<string, true | 1 | ''>;
  $inc?: Record<string, number>;
  $max?: Record<string, unknown>;
  $min?: Record<string, unknown>;
  $push?: Record<string, unknown>;
  $pull?: Record<string, unknown>;
  $addToSet?: Record<string, unknown>;
  /** applied only when an upsert inserts */
  $setOnInsert?: Record<string, unknown>;
}

export interface FindOptions {
  sort?: Record<string, 1 | -1>;
  limit?: number;
  skip?: number;
}

export interface UpdateOptions {
  upsert?: boolean;
}

export interface UpdateResult {
  matched: number;
  modified: number;
  /** the new document's id when an upsert inserted one */
  upsertedId?: string;
}

export interface IndexSpec {
  fields: Record<string, 1 | -1>;
  unique?: boolean;
  /**
   * documents whose first indexed field (a Date) is older than this are removed, by a sweep that runs every
   * minute (MongoDB's TTL monitor; the embedded store's own, see EmbeddedStoreOptions.ttlSweepIntervalMs)
   */
  expireAfterSeconds?: number;
  /**
   * documents holding none of the indexed fields stay out of the index (a null value is in it, on both engines):
   * for a field most documents lack, which on the embedded engine would otherwise all sit under one key, making
   * every update of them slower
   */
  sparse?: boolean;
}

export interface Collection<T extends Doc> {
  readonly name: string;
  /** inserts; a unique-index violation throws DuplicateKeyError */
  insertOne(doc: T): Promise<T>;
  /**
   * Inserts several documents in one write (one append or one round trip). A unique-index violation
   * throws DuplicateKeyError, after which any subset of the documents may be stored (embedded: none;
   * MongoDB: those before the offending one). A crash before it answers (kill -9, a power cut, a lost
   * primary) leaves, likewise, all or none of them on the embedded engine, and on MongoDB any first part of
   * them (an ordered insertMany, no transaction). Optional so that other implementations of the port stay
   * valid; both engines here have it.
   */
  insertMany?(docs: T[]): Promise<T[]>;
  findOne(filter: Filter): Promise<T | null>;
  find(filter: Filter, options?: FindOptions): Promise<T[]>;
  count(filter: Filter): Promise<number>;
  updateOne(filter: Filter, update: Update, options?: UpdateOptions): Promise<UpdateResult>;
  /**
   * Embedded: one write, all of the matching documents or none, also across a crash, and no read sees it halfway.
   * MongoDB: each document is updated on its own; an error or a crash partway leaves some of them updated, and a
   * read meanwhile may see some updated (deleteMany alike).
   */
  updateMany(filter: Filter, update: Update): Promise<UpdateResult>;
  /** atomically updates one document and returns it as it is after the update (null when none matched) */
  findOneAndUpdate(filter: Filter, update: Update, options?: UpdateOptions): Promise<T | null>;
  deleteOne(filter: Filter): Promise<number>;
  /** as `updateMany`: all or none on the embedded engine, document by document on MongoDB */
  deleteMany(filter: Filter): Promise<number>;
}

/**
 * Named byte strings too large to keep as documents (a trained model's stored form, say). The embedded engine
 * keeps them as files beside its collections, out of its memory; MongoDB in pieces of a collection.
 */
export interface BlobBucket {
  /** stores `bytes` as `id`, replacing any blob of that id; once it resolves, as durable as the engine's writes */
  put(id: string, bytes: Uint8Array): Promise<void>;
  /** the blob, or null when there is none */
  get(id: string): Promise<Buffer | null>;
  /** removes the blob; nothing happens when there is none */
  delete(id: string): Promise<void>;
  /** every blob of the bucket, with when it was last written (to find blobs nothing names any more) */
  list(): Promise<Array<{ id: string; writtenAt: Date }>>;
}

export interface Store {
  readonly engine: 'embedded' | 'mongodb';
  /** a handle on a collection, creating its indexes once (idempotent) */
  collection<T extends Doc>(name: string, indexes?: IndexSpec[]): Collection<T>;
  /** a handle on a bucket of blobs (a name of letters, digits, `_ -`); blob ids are letters, digits and `_ : -` */
  blobs(bucket: string): BlobBucket;
  /** throws when the engine cannot serve */
  ping(): Promise<void>;
  close(): Promise<void>;
}

/** A unique index refused a write. */
export class DuplicateKeyError extends Error {
  constructor(
    readonly collection: string,
    detail: string,
  ) {
    super(`Duplicate key in ${collection}: ${detail}`);
    this.name = 'DuplicateKeyError';
  }
}

/**
 * Refuses a filter holding `undefined` anywhere (`{orgId: undefined}`, `{$in: [undefined]}`): the embedded engine
 * matches nothing there, while MongoDB's driver sends it as `null`, which matches every document without the field
 * (another organization's, say). The engines must not disagree on what a filter selects; such a filter is a bug of its
 * caller, so it is a plain Error naming the path.
 */
export function refuseUndefined(filter: Filter): void {
  const walk = (value: unknown, path: string): void => {
    if (value === undefined) throw new Error(`undefined in a store filter at ${path || '(filter)'}`);
    if (Array.isArray(value)) {
      for (let i = 0; i < value.length; i++) walk(value[i], `${path}.${i}`);
    } else if (
      value !== null &&
      typeof value === 'object' &&
      Object.getPrototypeOf(value) === Object.prototype
    )
      for (const [key, inner] of Object.entries(value)) walk(inner, path ? `${path}.${key}` : key);
  };
  walk(filter, '');
}
