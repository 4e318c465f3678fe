import { randomUUID } from 'node:crypto';
import { accessSync, constants, existsSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import type Datastore from '@seald-io/nedb';
import { checkBucketName, fileBlobs, memoryBlobs } from './blobs';
import { CollectionFile, isFileSystemError } from './collection-file';
import { lockFolder } from './folder-lock';
import { Mutex } from './mutex';
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
import { storeUnavailable } from './unavailable';

// NeDB's document model; `modify` applies update operators exactly as NeDB's own update does.
// eslint-disable-next-line @typescript-eslint/no-require-imports
const nedbModel = require('@seald-io/nedb/lib/model') as {
  modify<T>(doc: T, update: object): T;
  deepCopy<T>(doc: T): T;
  match(doc: unknown, query: object): boolean;
};

/** The parts of NeDB's datastore its own update goes through, which `updateEach` goes through too */
interface NedbInternals<T> {
  executor: { pushAsync<R>(task: () => Promise<R>): Promise<R> };
  _getCandidatesAsync(query: Filter): Promise<T[]>;
  _updateIndexes(modifications: Array<{ oldDoc: T; newDoc: T }>): void;
  persistence: { persistNewStateAsync(docs: T[]): Promise<void> };
}

export interface EmbeddedStoreOptions {
  /** folder holding one append-only file per collection; omit for a memory-only store (tests) */
  dataDir?: string;
  /** how often the append-only files are rewritten without superseded lines (ms); 0 disables */
  compactionIntervalMs?: number;
  /**
   * How often documents past a TTL index's `expireAfterSeconds` are removed (ms); MongoDB's TTL monitor runs
   * every 60 s, and as there an expired document may be read until the next sweep. The store applies TTL
   * indexes itself: NeDB's own only drops an expired document when a query happens to read it (one that nothing
   * reads again, a visitor's conversation say, would stay in memory and in the file), and forgets them at the
   * next start.
   */
  ttlSweepIntervalMs?: number;
  /**
   * the time TTL indexes are applied at, and the wait after a failed reload is counted by (ms since the epoch); tests
   * with a manual clock pass theirs
   */
  now?: () => number;
  /**
   * Told of a failure of the store's own background work (a compaction, an index build) that no
   * caller awaits; such a failure never becomes an unhandled rejection. Default: ignored (the next
   * write or ping reports the folder's state to its caller). Told too of a collection file loaded without its
   * unreadable lines (`CorruptFileError`), or without the rewrite a load makes, for want of room on the disk
   * (`NoRoomToRewriteError`: served from the file as it is), a process warning on stderr by default.
   */
  onBackgroundError?: (err: unknown, collection: string) => void;
}

/**
 * The embedded engine: NeDB, an append-only file per collection with MongoDB's query language,
 * all documents in memory. A write is acknowledged after its line is appended to the file (so it
 * survives kill -9), and every collection's writes are serialised, which makes upserts atomic.
 * One process owns a data folder (`lockFolder`: another process's open is refused); several instances in one process
 * share the same Store.
 */
export function createEmbeddedStore(options: EmbeddedStoreOptions = {}): Store {
  if (options.dataDir) ensureWritableFolder(options.dataDir);
  const unlock = options.dataDir ? lockFolder(options.dataDir) : undefined;
  const collections = new Map<string, EmbeddedCollection<Doc>>();
  const buckets = new Map<string, BlobBucket>();
  let closed = false;
  return {
    engine: 'embedded',
    collection<T extends Doc>(name: string, indexes: IndexSpec[] = []): Collection<T> {
      if (!/^[A-Za-z0-9_.-]+$/.test(name)) throw new Error(`Invalid collection name: ${name}`);
      let existing = collections.get(name);
      if (!existing) {
        existing = new EmbeddedCollection<Doc>(name, options);
        collections.set(name, existing);
      }
      existing.ensureIndexes(indexes);
      return existing as unknown as Collection<T>;
    },
    blobs(bucket: string): BlobBucket {
      checkBucketName(bucket);
      let blobs = buckets.get(bucket);
      if (!blobs) {
        // files beside the collections' files (out of this process's memory), or in memory without a data folder
        blobs = options.dataDir ? fileBlobs(path.join(options.dataDir, `${bucket}.blobs`)) : memoryBlobs();
        buckets.set(bucket, blobs);
      }
      return blobs;
    },
    async ping() {
      if (closed) throw new Error('store is closed');
      // a real check: every collection's file takes an (empty) append, and a broken one is recovered
      await Promise.all([...collections.values()].map((c) => c.ping()));
    },
    async close() {
      closed = true;
      await Promise.all([...collections.values()].map((c) => c.close()));
      unlock?.();
    },
  };
}

/** A data folder the store is refused: which folder, and why. */
export class DataFolderError extends Error {
  constructor(
    readonly folder: string,
    readonly reason: string,
  ) {
    super(`cannot use ${folder} as a data folder: ${reason}`);
    this.name = 'DataFolderError';
  }
}

/**
 * Creates the data folder (owner-only) and checks it takes writes, at start rather than at the first
 * write. Node's recursive mkdir answers ENOENT when a parent refuses (a read-only file system): the
 * error names the nearest existing folder and why it refuses instead.
 */
function ensureWritableFolder(folder: string): void {
  try {
    mkdirSync(folder, { recursive: true, mode: 0o700 });
    accessSync(folder, constants.W_OK);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    let existing = folder;
    while (!existsSync(existing) && path.dirname(existing) !== existing) existing = path.dirname(existing);
    try {
      accessSync(existing, constants.W_OK);
    } catch (refused) {
      const why =
        (refused as NodeJS.ErrnoException).code === 'EROFS' ? 'a read-only file system' : 'not writable';
      throw new DataFolderError(folder, `${existing} is ${why}`);
    }
    throw new DataFolderError(
      folder,
      code === 'ENOTDIR' ? 'a part of its path is a file' : String(code ?? err),
    );
  }
}

/** documents a TTL sweep removes in one write */
const SWEEP_BATCH = 1_000;

class EmbeddedCollection<T extends Doc> implements Collection<T> {
  private readonly file: CollectionFile<T>;
  private readonly ds: Datastore<T>;
  private readonly writes = new Mutex();
  private readonly indexKeys = new Set<string>();
  private compaction: NodeJS.Timeout | undefined;
  /** TTL indexes: field -> expireAfterSeconds, and the timer that applies them */
  private readonly ttl = new Map<string, number>();
  private sweeper: NodeJS.Timeout | undefined;
  private sweeping = false;
  private closing = false;
  private readonly sweepIntervalMs: number;
  private readonly now: () => number;
  private readonly onBackgroundError: (err: unknown) => void;

  constructor(
    readonly name: string,
    options: EmbeddedStoreOptions,
  ) {
    this.onBackgroundError = (err) => options.onBackgroundError?.(err, name);
    this.sweepIntervalMs = options.ttlSweepIntervalMs ?? 60_000;
    this.now = options.now ?? Date.now;
    const filename = options.dataDir ? path.join(options.dataDir, `${name}.db`) : undefined;
    // a file loaded without its unreadable lines, or without its rewrite on a full disk, is said, loudly: on stderr
    // when nothing else is told
    this.file = new CollectionFile<T>(name, filename, this.now, (warning) =>
      options.onBackgroundError ? options.onBackgroundError(warning, name) : process.emitWarning(warning),
    );
    this.ds = this.file.ds;
    const interval = options.compactionIntervalMs ?? 10 * 60_000;
    // Our own timer rather than NeDB's autocompaction, whose failures (the folder removed or
    // unwritable) are unhandled rejections that end the process.
    if (filename && interval > 0) {
      this.compaction = setInterval(() => void this.compact(), interval);
      this.compaction.unref();
    }
  }

  /** Rewrites the file without superseded lines, under the write lock; a failure is reported, never thrown. */
  private compact(): Promise<void> {
    return this.writes.run(() => this.file.compact()).catch(this.onBackgroundError);
  }

  ensureIndexes(indexes: IndexSpec[]): void {
    for (const index of indexes) {
      const fields = Object.keys(index.fields);
      const key = `${fields.sort().join(',')}|${index.unique ? 'u' : ''}${index.sparse ? 's' : ''}`;
      if (this.indexKeys.has(key)) continue;
      this.indexKeys.add(key);
      if (index.expireAfterSeconds !== undefined) {
        // the first field as declared (`fields` was sorted in place for the key)
        this.ttl.set(Object.keys(index.fields)[0]!, index.expireAfterSeconds);
        if (!this.sweeper && this.sweepIntervalMs > 0) {
          this.sweeper = setInterval(() => void this.sweep(), this.sweepIntervalMs);
          this.sweeper.unref();
        }
      }
      void this.writes
        .run(async () => {
          await this.file.loaded;
          await this.ds.ensureIndexAsync({
            fieldName: fields.length === 1 ? fields[0]! : fields,
            unique: index.unique ?? false,
            sparse: index.sparse ?? false,
          });
        })
        .catch(this.onBackgroundError);
    }
  }

  /**
   * Removes the documents whose TTL field is older than its index allows, SWEEP_BATCH at a time with the write lock
   * let go between batches (a backlog, say after an upgrade, never holds the collection for long); a failure is
   * reported, never thrown.
   */
  private async sweep(): Promise<void> {
    if (this.sweeping) return;
    this.sweeping = true;
    try {
      // a sweep in progress stops between batches when the collection closes
      for (let more = true; more && !this.closing; ) {
        more = await this.write(async () => {
          const now = this.now();
          let full = false;
          for (const [field, seconds] of this.ttl) {
            const expired = { [field]: { $lt: new Date(now - seconds * 1000) } };
            const ids = (await this.ds.findAsync(expired, { _id: 1 }).limit(SWEEP_BATCH)).map((d) => d._id);
            if (ids.length > 0) await this.ds.removeAsync({ _id: { $in: ids } }, { multi: true });
            full ||= ids.length === SWEEP_BATCH;
          }
          return full;
        });
      }
    } catch (err) {
      this.onBackgroundError(err);
    } finally {
      this.sweeping = false;
    }
  }

  async close(): Promise<void> {
    clearInterval(this.compaction);
    clearInterval(this.sweeper);
    this.closing = true;
    // every write queued before the close ends first (a failed load has nothing left to close), and a file removed
    // meanwhile is written again, so that the next start has it
    await this.writes
      .run(async () => {
        await this.file.loaded;
        await this.file.probe();
      })
      .catch(() => undefined);
  }

  private write<R>(task: () => Promise<R>): Promise<R> {
    const failed = this.file.failedRecoveries;
    return this.writes.run(async () => {
      await this.file.loaded;
      // before the reload a refused write needs: a write refused at once needs none
      this.file.admitWrite();
      await this.file.recover(failed);
      try {
        return await task();
      } catch (err) {
        if (isFileSystemError(err)) {
          this.file.broken = err;
          throw storeUnavailable(this.name, err);
        }
        throw this.translate(err);
      }
    });
  }

  /** Before a read: a collection whose last write failed is reloaded first (or the read fails too). */
  private async readable(): Promise<void> {
    const failed = this.file.failedRecoveries;
    await this.file.loaded;
    if (this.file.broken) await this.writes.run(() => this.file.recover(failed));
  }

  /** The file takes an append (of nothing; a removed one is written again), and a broken collection comes back. */
  async ping(): Promise<void> {
    try {
      await this.readable();
      await this.writes.run(() => this.file.probe());
    } catch (err) {
      const cause = (err as { cause?: unknown }).cause ?? err;
      throw new Error(
        cause instanceof Error && cause.message.startsWith(this.name)
          ? cause.message
          : `${this.name}: ${(cause as { code?: string }).code ?? String(cause)}`,
      );
    }
  }

  private translate(err: unknown): unknown {
    const e = err as { errorType?: string; key?: unknown };
    // the key of an index on an object field is an object, which may hold a field `toString` that String() cannot call
    if (e?.errorType === 'uniqueViolated')
      return new DuplicateKeyError(
        this.name,
        typeof e.key === 'object' && e.key !== null ? JSON.stringify(e.key) : String(e.key),
      );
    return err;
  }

  insertOne(doc: T): Promise<T> {
    return this.write(async () => {
      refuseProtoFields(doc);
      return this.ds.insertAsync(doc);
    });
  }

  insertMany(docs: T[]): Promise<T[]> {
    if (docs.length === 0) return Promise.resolve([]);
    // NeDB inserts an array all or nothing, in one append to the file: one line, which a crash leaves whole or not at
    // all (`record` in collection-file.ts).
    return this.write(async () => {
      refuseProtoFields(docs);
      return this.ds.insertAsync(docs) as unknown as Promise<T[]>;
    });
  }

  /**
   * A read, never answering a write that failed: NeDB queues a read behind the writes before it, and a write
   * whose append failed has changed NeDB's memory already. Such a read is made again once the collection is
   * reloaded from its file (or fails as Unavailable while it cannot be).
   */
  private async read<R>(op: () => Promise<R>): Promise<R> {
    for (let attempt = 0; ; attempt++) {
      await this.readable();
      const result = await op();
      if (!this.file.broken) return result;
      if (attempt === 2) throw storeUnavailable(this.name, this.file.broken);
    }
  }

  async findOne(filter: Filter): Promise<T | null> {
    const query = toNedbQuery(filter);
    return this.read(async () => (await this.ds.findOneAsync(query)) ?? null);
  }

  async find(filter: Filter, options: FindOptions = {}): Promise<T[]> {
    const query = toNedbQuery(filter);
    return this.read(async () => {
      let cursor = this.ds.findAsync(query);
      if (options.sort) cursor = cursor.sort(options.sort);
      if (options.skip) cursor = cursor.skip(options.skip);
      if (options.limit) cursor = cursor.limit(options.limit);
      return cursor;
    });
  }

  async count(filter: Filter): Promise<number> {
    const query = toNedbQuery(filter);
    return this.read(() => this.ds.countAsync(query));
  }

  updateOne(filter: Filter, update: Update, options: UpdateOptions = {}): Promise<UpdateResult> {
    return this.write(async () => {
      const { doc, upsertedId } = await this.updateUnlocked(filter, update, options.upsert ?? false);
      if (upsertedId) return { matched: 0, modified: 0, upsertedId };
      return doc ? { matched: 1, modified: 1 } : { matched: 0, modified: 0 };
    });
  }

  findOneAndUpdate(filter: Filter, update: Update, options: UpdateOptions = {}): Promise<T | null> {
    return this.write(async () => (await this.updateUnlocked(filter, update, options.upsert ?? false)).doc);
  }

  updateMany(filter: Filter, update: Update): Promise<UpdateResult> {
    return this.write(async () => {
      const { $setOnInsert: _ignored, ...operators } = update;
      refuseProtoFields(operators);
      if (Object.keys(operators).length === 0) {
        const n = await this.ds.countAsync(toNedbQuery(filter));
        return { matched: n, modified: 0 };
      }
      const query = toNedbQuery(filter);
      if (namesInherited(operators)) {
        const modified = await this.updateEach(query, (doc) => modifiedOwnPaths(doc, operators));
        return { matched: modified, modified };
      }
      if (settingDotted(operators))
        for (const doc of await this.ds.findAsync(query)) refuseFieldsInValues(doc, operators);
      const { numAffected } = await this.ds.updateAsync(query, operators, { multi: true });
      return { matched: numAffected, modified: numAffected };
    });
  }

  /**
   * Replaces each document matching `query` by `change(doc)` in one write, as NeDB's own update of several documents
   * does with one change for all. An update of each in turn was a write each: one refused (a unique index, a field it
   * cannot make), or a crash, between them kept the documents before it, and reads saw them changed halfway.
   */
  private updateEach(query: Filter, change: (doc: T) => T): Promise<number> {
    const ds = this.ds as unknown as NedbInternals<T>;
    return ds.executor.pushAsync(async () => {
      const modifications = (await ds._getCandidatesAsync(query))
        .filter((doc) => nedbModel.match(doc, query))
        .map((oldDoc) => ({ oldDoc, newDoc: change(oldDoc) }));
      // all of memory or none (NeDB undoes a refused one), then the file in one append
      ds._updateIndexes(modifications);
      await ds.persistence.persistNewStateAsync(modifications.map(({ newDoc }) => newDoc));
      return modifications.length;
    });
  }

  deleteOne(filter: Filter): Promise<number> {
    return this.write(() => this.ds.removeAsync(toNedbQuery(filter), { multi: false }));
  }

  deleteMany(filter: Filter): Promise<number> {
    return this.write(() => this.ds.removeAsync(toNedbQuery(filter), { multi: true }));
  }

  /** Runs under the write lock: update the first match, or insert the upserted document in one append. */
  private async updateUnlocked(
    filter: Filter,
    update: Update,
    upsert: boolean,
  ): Promise<{ doc: T | null; upsertedId?: string }> {
    const { $setOnInsert, ...operators } = update;
    refuseProtoFields(operators);
    const query = toNedbQuery(filter);
    const current = await this.ds.findOneAsync(query);
    if (current) {
      if (Object.keys(operators).length === 0) return { doc: current };
      // a path through an inherited name is applied here and written whole (see `modifiedOwnPaths`)
      const inherited = namesInherited(operators);
      if (!inherited) refuseFieldsInValues(current, operators);
      const change = inherited ? modifiedOwnPaths(current, operators) : operators;
      const { affectedDocuments } = await this.ds.updateAsync({ _id: current._id } as never, change, {
        multi: false,
        returnUpdatedDocs: true,
      });
      return { doc: (affectedDocuments as T | null) ?? null };
    }
    if (!upsert) return { doc: null };
    let fresh = { ...equalityFields(filter), ...($setOnInsert ?? {}) } as Record<string, unknown>;
    refuseProtoFields(fresh);
    fresh = expandDotted(fresh);
    if (typeof fresh._id !== 'string') fresh._id = randomUUID();
    const built = Object.keys(operators).length ? modifiedOwnPaths(fresh, operators) : fresh;
    const inserted = await this.ds.insertAsync(built as T);
    return { doc: inserted, upsertedId: inserted._id };
  }
}

/** Names a document's objects, arrays and dates answer without holding them: `constructor`, `toString`, `length`… */
const isInheritedName = (name: string): boolean =>
  name in Object.prototype || name in Array.prototype || name in Date.prototype;

type Operators = Record<string, Record<string, unknown>>;

/** Whether an update's paths name, at any depth, a member that documents inherit. */
function namesInherited(operators: object): boolean {
  for (const fields of Object.values(operators as Operators)) {
    for (const path of Object.keys(fields)) if (path.split('.').some(isInheritedName)) return true;
  }
  return false;
}

/** Operators that remove: a path through a field the document does not hold has nothing for them to do. */
const REMOVING = new Set(['$unset', '$pull', '$pop']);

/**
 * `doc` after `operators`, as MongoDB applies them. NeDB walks a dotted path with `obj[part]`, so a part the
 * document does not hold but inherits (a role named `constructor`, a user id `toString`) reaches the built-in:
 * `$set: {'quotas.constructor.rpm': 3}` stored nothing and set `Object.rpm` in the process. Each such part is
 * made an own field first, as NeDB does for a missing one, and removals through it are dropped.
 */
function modifiedOwnPaths<D extends object>(doc: D, operators: object): D {
  const copy = nedbModel.deepCopy(doc) as Record<string, unknown>;
  const kept: Operators = {};
  for (const [op, fields] of Object.entries(operators as Operators)) {
    kept[op] = {};
    for (const [path, value] of Object.entries(fields)) {
      if (ownPath(copy, path.split('.'), op)) kept[op][path] = value;
    }
  }
  return nedbModel.modify(copy, kept) as D;
}

/** Makes each inherited part of `parts` an own field of `node`; false when `op` has nothing to remove there. */
function ownPath(node: unknown, parts: string[], op: string): boolean {
  for (const [i, part] of parts.entries()) {
    refuseProto(part);
    if (node === undefined) return true; // NeDB makes the missing step (a removal skips it)
    if (typeof node !== 'object' || node === null) {
      // MongoDB refuses a field inside a value (`name.length` of a string); NeDB ignored it and answered success
      if (REMOVING.has(op)) return false;
      throw new Error(`Cannot create the field ${part} in a value that is not an object`);
    }
    const holder = node as Record<string, unknown>;
    // an array holds elements by index: `tags.length` would truncate it, `tags.map` reach Array.prototype
    if (Array.isArray(holder) && !/^\d+$/.test(part)) {
      if (REMOVING.has(op)) return false;
      throw new Error(`Cannot create the field ${part} in an array`);
    }
    const inherited = !Object.hasOwn(holder, part) && part in holder;
    if (inherited && REMOVING.has(op)) return false;
    const last = i === parts.length - 1;
    // a missing or inherited step becomes an own object, as NeDB makes a missing one (removals excepted)
    if (!last && (inherited || holder[part] === undefined) && !REMOVING.has(op)) holder[part] = {};
    // of the last step, only $min and $max read the value first (NeDB's others assign or look for an own field)
    if (last && inherited && (op === '$min' || op === '$max')) holder[part] = undefined;
    node = holder[part];
  }
  return true;
}

/** Whether an update sets (rather than removes) a dotted path: one that may go through a value. */
function settingDotted(operators: object): boolean {
  for (const [op, fields] of Object.entries(operators as Operators)) {
    if (REMOVING.has(op)) continue;
    for (const path in fields) if (path.indexOf('.') !== -1) return true;
  }
  return false;
}

/**
 * Refuses, as MongoDB does, an update that would make a field inside a value that is not an object (`n.deeper` of a
 * number or a string, `tags.first` of an array, anything of null or a date): NeDB skipped such a path (or failed on
 * null with a TypeError) and answered success, an acknowledged update that stored nothing. Removals through a value
 * have nothing to do, as on MongoDB.
 */
function refuseFieldsInValues(doc: object, operators: object): void {
  for (const [op, fields] of Object.entries(operators as Operators)) {
    if (REMOVING.has(op)) continue;
    for (const path in fields) {
      if (path.indexOf('.') === -1) continue;
      const parts = path.split('.');
      let node: unknown = doc;
      for (let i = 0; i < parts.length - 1; i++) {
        node = (node as Record<string, unknown>)[parts[i]!];
        if (node === undefined) break; // a missing step is made
        const next = parts[i + 1]!;
        const holds =
          typeof node === 'object' &&
          node !== null &&
          !(node instanceof Date) &&
          (!Array.isArray(node) || /^\d+$/.test(next));
        if (!holds)
          throw new Error(
            `Cannot create the field ${next} in ${parts.slice(0, i + 1).join('.')}: not an object`,
          );
      }
    }
  }
}

/**
 * NeDB copies documents with plain assignment, so a field `__proto__` cannot be held: a path through it set the
 * field on Object.prototype, in every object of the process. MongoDB would store it; here it is refused.
 */
function refuseProto(part: string): void {
  if (part === '__proto__') throw new Error('Field names cannot be __proto__ in the embedded store');
}

/**
 * Refuses a value holding, at any depth, an own field `__proto__` (JSON.parse makes one): NeDB's copy assigned it,
 * which gave the stored object that value as its prototype (its fields matched by queries, read back in this
 * process, and gone from the file), as `refuseProto` says.
 */
function refuseProtoFields(value: unknown): void {
  if (typeof value !== 'object' || value === null) return;
  if (Array.isArray(value)) {
    for (const item of value) if (typeof item === 'object' && item !== null) refuseProtoFields(item);
    return;
  }
  if (value instanceof Date || ArrayBuffer.isView(value)) return;
  if (Object.hasOwn(value, '__proto__')) refuseProto('__proto__');
  // `for…in` rather than Object.values: no array made per object (about 0.15 µs for a usage event's document)
  for (const key in value) {
    const inner = (value as Record<string, unknown>)[key];
    if (typeof inner === 'object' && inner !== null) refuseProtoFields(inner);
  }
}

/** Whether a filter names, in any of its paths, a member that documents inherit (`q.toString`, `a.constructor`). */
function queryNamesInherited(filter: unknown): boolean {
  if (Array.isArray(filter)) return filter.some(queryNamesInherited);
  if (typeof filter !== 'object' || filter === null || filter instanceof Date) return false;
  for (const [key, value] of Object.entries(filter)) {
    if (!key.startsWith('$') && pathReachesInherited(key)) return true;
    if (queryNamesInherited(value)) return true;
  }
  return false;
}

/**
 * A document is a plain object: its own top-level field names only Object's members (`{at: …}`, `{length: …}` keep
 * NeDB's indexed path); a deeper step may be an array or a date.
 */
const pathReachesInherited = (path: string): boolean =>
  path.indexOf('.') === -1
    ? path in Object.prototype // most filters name plain fields: no array to split them into
    : path.split('.').some((part, i) => (i === 0 ? part in Object.prototype : isInheritedName(part)));

/** `value` with every object holding only its own fields (no prototype): what a query should see of a document. */
function ownView(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(ownView);
  if (typeof value !== 'object' || value === null || value instanceof Date) return value;
  const view = Object.create(null) as Record<string, unknown>;
  for (const [k, v] of Object.entries(value)) view[k] = ownView(v);
  return view;
}

const RANGE_OPERATORS = ['$lt', '$lte', '$gt', '$gte'];

/**
 * Brings NeDB's query semantics to MongoDB's, recursively through `$or`/`$and`: `$eq` becomes plain
 * equality (NeDB has none), `$ne` and `$nin` on an array mean no element equals, `$exists` holds for an empty
 * array field, range operators never
 * match a missing or null field (NeDB orders null and undefined before everything, so
 * `{at: {$lte: date}}` would match documents without `at`), and null matches a missing field too
 * (`{revokedAt: null}`, `$eq`, `$in`), so `$ne: null` and `$nin: [null]` match only a present value
 * (NeDB's null equals only null: `{revokedAt: null}` missed documents without the field).
 */
export function toNedbQuery(filter: Filter): Filter {
  refuseUndefined(filter);
  const query = translateQuery(filter);
  if (!queryNamesInherited(filter)) return query;
  // NeDB reads a dotted path with `obj[part]`: `{'q.toString': {$exists: true}}` found every document with a `q`.
  // Such a query is matched against the documents' own fields only, as MongoDB matches it.
  return {
    $where(this: unknown) {
      return nedbModel.match(ownView(this), query);
    },
  } as Filter;
}

/** MongoDB's `{[key]: null}`: the field is null or missing. */
const nullOrMissing = (key: string): Filter => ({ $or: [{ [key]: null }, { [key]: { $exists: false } }] });

function translateQuery(filter: Filter): Filter {
  const out: Filter = {};
  // conditions every match must meet as well (NeDB's `$and`)
  const notEqual: Filter[] = [];
  for (const [key, value] of Object.entries(filter)) {
    if ((key === '$or' || key === '$and') && Array.isArray(value)) {
      out[key] = value.map((f) => translateQuery(f as Filter));
    } else if (isOperatorObject(value)) {
      let ops: Record<string, unknown> = { ...value };
      if ('$eq' in ops) {
        const { $eq, ...rest } = ops;
        if (Object.keys(rest).length === 0) {
          if ($eq === null) notEqual.push(nullOrMissing(key));
          else out[key] = $eq;
          continue;
        }
        ops = { ...rest, $in: [$eq] };
      }
      if ('$ne' in ops) {
        // MongoDB's `$ne` on an array field means "no element equals"; NeDB's means "some element differs".
        const { $ne, ...rest } = ops;
        notEqual.push({ $not: $ne === null ? nullOrMissing(key) : { [key]: $ne } });
        ops = rest;
      }
      if (Array.isArray(ops.$in) && ops.$in.includes(null)) {
        const { $in, ...rest } = ops;
        const others = ($in as unknown[]).filter((v) => v !== null);
        notEqual.push({ $or: [...(nullOrMissing(key).$or as Filter[]), { [key]: { $in: others } }] });
        ops = rest;
      }
      if (Array.isArray(ops.$nin)) {
        // MongoDB's `$nin` on an array means "no element is listed"; NeDB's "some element is not" (none of `[]`)
        const { $nin, ...rest } = ops;
        if (($nin as unknown[]).includes(null)) notEqual.push({ $not: nullOrMissing(key) });
        const others = ($nin as unknown[]).filter((v) => v !== null);
        if (others.length) notEqual.push({ $not: { [key]: { $in: others } } });
        ops = rest;
      }
      if ('$exists' in ops && (ops.$exists || ops.$exists === '') && key.indexOf('.') === -1) {
        // NeDB looks for an element of an array field, so an empty array did not exist for it; MongoDB's does. (Not
        // on a dotted path: NeDB reads `items.k` of `[{k: 1}, {}]` as `[1, undefined]`, where an element is right.)
        const { $exists: _exists, ...rest } = ops;
        notEqual.push({ $not: { [key]: { $exists: false } } });
        ops = rest;
      }
      if (RANGE_OPERATORS.some((op) => op in ops && ops[op] !== null && ops[op] !== undefined)) {
        ops = { $exists: true, ...ops };
        notEqual.push({ $not: { [key]: null } });
      }
      if (Object.keys(ops).length) out[key] = ops;
    } else if (value === null && !key.startsWith('$')) {
      notEqual.push(nullOrMissing(key));
    } else {
      out[key] = value;
    }
  }
  if (notEqual.length) out.$and = [...((out.$and as Filter[] | undefined) ?? []), ...notEqual];
  return out;
}

const isOperatorObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' &&
  v !== null &&
  !Array.isArray(v) &&
  !(v instanceof Date) &&
  Object.keys(v).some((k) => k.startsWith('$'));

/** The fields an upsert copies from its filter, as MongoDB does: plain equalities and `$eq`. */
function equalityFields(filter: Filter): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(filter)) {
    if (key.startsWith('$')) continue;
    if (isOperatorObject(value)) {
      if ('$eq' in value) out[key] = value.$eq;
    } else {
      out[key] = value;
    }
  }
  return out;
}

function expandDotted(flat: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(flat)) {
    const parts = key.split('.');
    let node = out;
    for (const part of parts) refuseProto(part);
    for (const part of parts.slice(0, -1)) {
      // an own object only: `constructor` of a fresh object is Object, not a field to go through
      node[part] = (
        Object.hasOwn(node, part) && typeof node[part] === 'object' && node[part] !== null ? node[part] : {}
      ) as object;
      node = node[part] as Record<string, unknown>;
    }
    node[parts[parts.length - 1]!] = value;
  }
  return out;
}
