import { chmodSync, constants, existsSync } from 'node:fs';
import { appendFile, copyFile, open, rename, rm, stat, statfs, truncate } from 'node:fs/promises';
import path from 'node:path';
import Datastore from '@seald-io/nedb';
import type { Doc } from './port';
import { storeUnavailable } from './unavailable';

// eslint-disable-next-line @typescript-eslint/no-require-imports
const nedbModel = require('@seald-io/nedb/lib/model') as {
  serialize(doc: unknown): string;
  deserialize(line: string): unknown;
};

/** NeDB's indexes of a datastore, by field (`_id` too) */
type Indexes = Record<string, { fieldName: string; unique: boolean; sparse: boolean }>;

/** What NeDB's load makes of a file: the documents, and the indexes it records, by field */
interface Loaded {
  data: unknown[];
  indexes: Record<string, unknown>;
}

/** NeDB's persistence: the parts of it the store drives itself */
interface Persistence {
  persistNewStateAsync(docs: unknown[]): Promise<void>;
  persistCachedDatabaseAsync(): Promise<void>;
  treatRawStreamAsync(file: AsyncIterable<string>): Promise<Loaded>;
  corruptAlertThreshold: number;
}

/** an append to a file that is there: a removed file is not made again holding that append alone */
const APPEND_TO_EXISTING = constants.O_WRONLY | constants.O_APPEND;

/**
 * A collection's file held lines that cannot be read (a disk error, a hand edit): the collection was loaded without
 * them, and the file as it was is kept beside it; or, on a disk without room for that copy, left as it is (not
 * rewritten) until the copy can be made.
 */
export class CorruptFileError extends Error {
  constructor(
    readonly file: string,
    readonly unreadable: number,
    readonly lines: number,
    readonly keptIn: string,
    /** false: no room for the copy yet, the file itself keeps them */
    readonly copied: boolean,
  ) {
    super(
      `${file}: ${unreadable} of its ${lines} lines cannot be read; the collection is loaded without them, and ${
        copied
          ? `the file as it was is kept in ${keptIn}`
          : `the file is kept as it is, not rewritten nor compacted, until its disk has room for a copy of it (${keptIn}), made at the next compaction`
      }`,
    );
    this.name = 'CorruptFileError';
  }
}

/**
 * A collection's file could not be rewritten as it was loaded or compacted, for want of room on its disk (a rewrite
 * needs room for a whole copy): the collection is served from the file as it is, kept intact, and new writes are
 * appended to it.
 */
export class NoRoomToRewriteError extends Error {
  constructor(
    readonly file: string,
    readonly code: string,
    /** the room a rewrite needs, about the file's size (bytes) */
    readonly size: number,
  ) {
    super(
      `${file}: no room on its disk to rewrite it, at a load or a compaction (${code}; a rewrite needs room for a copy, about ${size} bytes); the collection is served from the file as it is, kept intact, and new writes are appended to it while the disk takes them (a write it refuses fails as Unavailable, and is not kept). Free some space: the file is compacted once it can be`,
    );
    this.name = 'NoRoomToRewriteError';
  }
}

/** A write refused for want of room on the disk (or of the user's quota). */
const noRoom = (err: unknown) => {
  const { code } = err as NodeJS.ErrnoException;
  return code === 'ENOSPC' || code === 'EDQUOT';
};

/**
 * A collection's append-only file and the NeDB datastore it loads into: the load at start, the state of a collection
 * whose file failed a write or a load (`broken`), its reload, and the file's rewrite (compaction). The caller holds
 * the collection's write lock around `recover` and `compact`.
 */
export class CollectionFile<T extends Doc> {
  readonly ds: Datastore<T>;
  /** settles once the file is loaded (or left broken by the file system); rejects when the file cannot be used */
  readonly loaded: Promise<void>;
  /**
   * Set when a write reached memory but not the file (disk full, unwritable, removed): NeDB changes its
   * memory before it appends. Until the collection is reloaded from its file, nothing is served from it,
   * so no unacknowledged write is ever read and nothing read is lost at the next start.
   */
  broken: unknown = null;
  /**
   * Reloads of the broken collection that failed so far. An operation that waited for the write lock while one failed
   * is answered by that failure: a reload reads and rewrites the whole file, and a crowd arriving while the disk is
   * full made one each, in turn (twenty requests on a 10 MB collection held it, and the process, for seconds).
   */
  failedRecoveries = 0;
  /**
   * A reload that failed although the file took an append (a full disk) is not tried again before `reloadAt` (ms, by
   * `now`): it reads and rewrites the whole file, 0.6 s of work for 10 MB, which operations arriving one after another
   * repeated without a pause. The wait doubles from 1 s to 30 s and starts again once a reload succeeds.
   */
  private reloadAt = 0;
  private reloadWait = 0;
  /**
   * A write arriving before `fullUntil` (ms, by `now`), after the disk refused one for want of room (`full`), is refused
   * at once, memory untouched: a refused write's change is in NeDB's memory already, and each cost a reload of the
   * whole file, so that writes on a full disk held the collection, its reads included (ten on a 7 MB collection: 6.5 s).
   * The wait doubles from 1 s to 30 s and starts again once an append succeeds.
   */
  private fullUntil = 0;
  private fullWait = 0;
  private full: unknown = null;
  /** set while the file loads: its rewrite then may fail for want of room, the file as it is serves */
  private loading = false;
  /**
   * Set once a load or a compaction without its rewrite is told (`NoRoomToRewriteError`), until a rewrite succeeds: on
   * a full disk, each write the disk refuses is followed by a reload, and a compaction comes every 10 minutes, each
   * of which would tell it again.
   */
  private toldNoRoom = false;
  /**
   * The copy of a file with unreadable lines that its disk had no room for: until it is made, the file is the only
   * place those lines are, and it is not rewritten (which would drop them).
   */
  private uncopied: string | undefined;
  private readonly persistence: Persistence;

  constructor(
    private readonly name: string,
    /** the file; none for a memory-only collection */
    readonly filename: string | undefined,
    private readonly now: () => number,
    /**
     * told of a file loaded without its unreadable lines (`CorruptFileError`), or loaded without its rewrite for want
     * of room (`NoRoomToRewriteError`)
     */
    private readonly warn: (err: CorruptFileError | NoRoomToRewriteError) => void,
  ) {
    // Owner-only files and folders: collections hold secrets (signing keys, hashes, sessions).
    this.ds = new Datastore<T>({
      filename,
      inMemoryOnly: !filename,
      modes: { fileMode: 0o600, dirMode: 0o700 },
    });
    if (filename && existsSync(filename)) chmodSync(filename, 0o600);
    this.persistence = (this.ds as unknown as { persistence: Persistence }).persistence;
    // every unreadable line is told of (NeDB's default drops up to 10 % of the lines without a word): see `load`
    this.persistence.corruptAlertThreshold = 0;
    this.persistence.persistCachedDatabaseAsync = () => this.rewrite();
    // A failed append marks the collection broken before NeDB runs its next queued operation (a read queued
    // behind the write would otherwise answer the write's change, which is in memory only; see `read`).
    this.persistence.persistNewStateAsync = async (docs) => {
      if (!filename || docs.length === 0) return;
      try {
        // a write the disk refused partway left a torn line, cut at the next operation's reload; an append before it
        // (an index declared meanwhile) would end that line, and the reload then found one unreadable line of both
        if (this.broken) await dropTornTail(filename);
        await this.append(record(docs));
        this.fullWait = 0;
      } catch (err) {
        this.broken = err;
        if (noRoom(err)) {
          this.full = err;
          this.fullWait = Math.min(this.fullWait * 2 || 1_000, 30_000);
          this.fullUntil = this.now() + this.fullWait;
        }
        throw err;
      }
    };
    this.persistence.treatRawStreamAsync = (file) =>
      readRecords(file, this.persistence.corruptAlertThreshold);
    // A load the file system fails (a start on a full disk: NeDB's load rewrites the whole file) leaves the collection
    // broken, as a failed write does: each operation is Unavailable until the file loads, then it serves without a restart.
    this.loaded = (filename ? dropTornTail(filename) : Promise.resolve())
      .then(() => this.load())
      .catch(async (err) => {
        if (!isFileSystemError(err)) throw err;
        this.broken = err;
        await this.dropFailedRewrite();
      });
    // awaited by every operation, which reports a failed load to its caller; never unhandled
    this.loaded.catch(() => undefined);
  }

  /**
   * Appends `text` to the file (under the write lock). A file removed while the collection runs is written again whole
   * from memory, this change included: an append made it anew holding the later writes alone, and a restart lost the
   * rest.
   */
  private async append(text: string): Promise<void> {
    try {
      await appendFile(this.filename!, text, { flag: APPEND_TO_EXISTING });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
      await this.persistence.persistCachedDatabaseAsync();
    }
  }

  /**
   * Writes the file anew from memory (NeDB's rewrite: at each load, at a compaction, of a removed file), in place of
   * NeDB's own, which turned a flush the disk refused (ENOSPC from fsync, on a file system that allocates late) into a
   * TypeError: a start then failed every operation on the collection until the next start. At a load or a compaction,
   * a rewrite the disk has no room for is skipped: the file as it is holds what memory does (the rewrite only drops
   * superseded and unreadable lines), and before, a start on a nearly full disk served nothing although every byte was
   * readable.
   */
  private async rewrite(): Promise<void> {
    if (!this.filename) return;
    if (this.uncopied) {
      if (this.loading) return;
      // a file removed meanwhile has nothing left to keep
      await keepCopy(this.filename, this.uncopied).catch((err) => {
        if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
      });
      this.uncopied = undefined;
    }
    const { serialize } = nedbModel;
    const lines = this.ds.getAllData().map((doc) => serialize(doc));
    const indexes = (this.ds as unknown as { indexes: Indexes }).indexes;
    for (const [field, { fieldName, unique, sparse }] of Object.entries(indexes)) {
      if (field !== '_id') lines.push(serialize({ $$indexCreated: { fieldName, unique, sparse } }));
    }
    try {
      await writeWhole(this.filename, lines);
      this.toldNoRoom = false;
    } catch (err) {
      // a file removed meanwhile is written again from memory, its only copy: that failure is the caller's
      if (!noRoom(err) || !existsSync(this.filename)) throw err;
      await this.dropFailedRewrite();
      if (this.toldNoRoom) return;
      this.toldNoRoom = true;
      const size = (await stat(this.filename).catch(() => undefined))?.size ?? 0;
      this.warn(new NoRoomToRewriteError(this.filename, (err as NodeJS.ErrnoException).code!, size));
    }
  }

  /** Before a write (under the write lock): Unavailable at once while the disk refused the last one (`fullUntil`). */
  admitWrite(): void {
    if (this.now() < this.fullUntil) throw storeUnavailable(this.name, this.full);
  }

  /** The file takes an append (of nothing), or is written again from memory when it was removed (under the write lock). */
  async probe(): Promise<void> {
    if (this.filename && !this.broken) await this.append('');
  }

  /**
   * Loads the file. One with unreadable lines is loaded without them (every line is a whole document, so the others
   * stand), and kept as it was in `<name>.db.corrupt-<time>` first, since the load rewrites it: before, NeDB dropped
   * such lines without a word when they were at most 10 % of the file, and refused the whole collection otherwise,
   * at every start. On a disk without room for that copy, the file is not rewritten until it has (`uncopied`): before,
   * the collection failed every operation meanwhile.
   */
  private async load(): Promise<void> {
    this.loading = true;
    try {
      await this.loadWithoutUnreadableLines();
    } finally {
      this.loading = false;
    }
  }

  private async loadWithoutUnreadableLines(): Promise<void> {
    this.uncopied = undefined;
    try {
      await this.ds.loadDatabaseAsync();
    } catch (err) {
      const { corruptItems, dataLength } = err as { corruptItems?: number; dataLength?: number };
      if (!this.filename || corruptItems === undefined) throw err;
      const keptIn = `${this.filename}.corrupt-${new Date(this.now()).toISOString().replace(/[:.]/g, '-')}`;
      const copied = await keepCopy(this.filename, keptIn).then(
        () => true,
        (failed) => {
          if (!noRoom(failed)) throw failed;
          return false;
        },
      );
      if (!copied) this.uncopied = keptIn;
      this.persistence.corruptAlertThreshold = 1;
      try {
        await this.ds.loadDatabaseAsync();
      } finally {
        this.persistence.corruptAlertThreshold = 0;
      }
      this.warn(new CorruptFileError(this.filename, corruptItems, dataLength ?? 0, keptIn, copied));
    }
  }

  /** Rewrites the file without superseded lines (under the write lock). */
  async compact(): Promise<void> {
    await this.loaded;
    if (this.broken) return;
    await this.ds.compactDatafileAsync().catch(async (err) => {
      await this.dropFailedRewrite();
      throw err;
    });
  }

  /**
   * Removes the copy a failed rewrite (a load, a compaction) left: on a full disk it is a partial copy that holds
   * every byte the disk had free, so that appends to every collection failed, where they had room before. Only
   * beside the file itself: without it, NeDB loads the copy (a rewrite cut between its write and its rename).
   */
  private async dropFailedRewrite(): Promise<void> {
    if (!this.filename || !existsSync(this.filename)) return;
    await rm(`${this.filename}~`, { force: true }).catch(() => undefined);
  }

  /**
   * Under the write lock: reload a broken collection from its file; Unavailable while that fails. `failed` is the count
   * of failed reloads when the caller arrived: one that failed since answers it without another.
   */
  async recover(failed: number): Promise<void> {
    if (!this.broken) return;
    if (this.failedRecoveries !== failed) throw storeUnavailable(this.name, this.broken);
    let reloading = false;
    try {
      // NeDB's loader hangs on some read errors: only reload a file that takes an append again (one removed meanwhile
      // is written again from memory, the refused write included, rather than reloaded empty)
      if (this.filename) {
        await this.append('');
        await dropTornTail(this.filename);
      }
      if (this.now() < this.reloadAt) throw this.broken;
      reloading = true;
      await this.load();
      this.broken = null;
      this.reloadWait = 0;
    } catch (err) {
      this.broken = err;
      this.failedRecoveries++;
      if (reloading) {
        this.reloadWait = Math.min(this.reloadWait * 2 || 1_000, 30_000);
        this.reloadAt = this.now() + this.reloadWait;
        await this.dropFailedRewrite();
      }
      throw storeUnavailable(this.name, err);
    }
  }
}

/** Copies `file` as it is to `copy` (a new file), if it fits; a partial copy a full disk left is removed. */
async function keepCopy(file: string, copy: string): Promise<void> {
  await refuseWithoutRoom(copy, (await stat(file)).size);
  await copyFile(file, copy, constants.COPYFILE_EXCL).catch(async (failed) => {
    await rm(copy, { force: true }).catch(() => undefined);
    throw failed;
  });
}

/**
 * Writes `lines` as the whole of `filename`: into `<filename>~`, flushed to the disk, then renamed over it, so that a
 * crash or a full disk at any moment leaves the file as it was or as it is now, never part of either (NeDB's
 * crash-safe write; a `~` left by a crash is written over by the next rewrite).
 */
async function writeWhole(filename: string, lines: string[]): Promise<void> {
  const temp = `${filename}~`;
  let size = 0;
  for (const line of lines) size += Buffer.byteLength(line) + 1;
  await refuseWithoutRoom(temp, size);
  const handle = await open(temp, 'w', 0o600);
  try {
    // each goes on from where the one before ended, written whole
    for (const chunk of inChunks(lines)) await handle.writeFile(chunk);
    await handle.sync();
  } finally {
    await handle.close();
  }
  await rename(temp, filename);
  // the rename itself reaches the disk; some file systems cannot flush a folder, and the file is whole either way
  const folder = await open(path.dirname(filename), 'r').catch(() => undefined);
  await folder
    ?.sync()
    .catch(() => undefined)
    .finally(() => folder.close());
}

/**
 * Fails as a full disk does (ENOSPC), before writing anything, when the disk of `copy` has less room than its `size`:
 * a copy that cannot fit was written until it held every free byte of the disk, and the other collections' appends,
 * which had room, were refused until it was removed (a compaction every 10 minutes on a nearly full disk). The room
 * of an unprivileged user is counted: the blocks kept for root are left to the appends too.
 */
async function refuseWithoutRoom(copy: string, size: number): Promise<void> {
  const disk = await statfs(path.dirname(copy)).catch(() => undefined);
  if (!disk) return; // a file system that cannot tell: the write finds out
  const room = disk.bavail * disk.bsize;
  if (size <= room) return;
  throw Object.assign(
    new Error(`ENOSPC: no space left on device, a copy of ${size} bytes with ${room} free, write '${copy}'`),
    { code: 'ENOSPC', errno: -28, syscall: 'write', path: copy },
  );
}

/** `lines`, each ended by a newline, a megabyte or so at a time: a large collection is not one string. */
function* inChunks(lines: string[]): Generator<string> {
  let chunk = '';
  for (const line of lines) {
    chunk += `${line}\n`;
    if (chunk.length >= 1 << 20) {
      yield chunk;
      chunk = '';
    }
  }
  if (chunk) yield chunk;
}

/** Begins the line of a write of several documents (`record`) */
const BATCH = '$$batch:';

/**
 * The line one write appends: its document, or, for a write of several (an insertMany, an updateMany, a deleteMany),
 * one record `$$batch:[…]` holding them all. Written one line each, a batch that a crash (kill -9, a power cut) cut
 * partway left its first lines whole, and the next load applied half of a write never acknowledged; a record cut
 * anywhere is a torn last line, which the load drops whole (`dropTornTail`). The record is not JSON so that an
 * earlier version, which would pass over a JSON line it does not know without a word, counts it unreadable and keeps
 * a copy of the file (`CorruptFileError`) when it is started on this one's files.
 */
function record(docs: unknown[]): string {
  const lines = docs.map((doc) => nedbModel.serialize(doc));
  if (lines.length === 1) return `${lines[0]}\n`;
  // one join makes the record: a large batch is not copied once more to wrap it
  lines[0] = `${BATCH}[${lines[0]}`;
  lines[lines.length - 1] += ']\n';
  return lines.join(',');
}

/**
 * NeDB's load of a file, reading batch records (`record`) too: each line is applied in order, a record's documents
 * all at once. Lines end at a newline only: NeDB's reader also ended them at U+2028, U+2029 and U+0085, which JSON
 * leaves unescaped, so that a document holding one of them was unreadable at the next start (and dropped by the
 * load's rewrite). As NeDB's, it fails with the count of unreadable lines when they are more than `threshold` of
 * them.
 */
async function readRecords(file: AsyncIterable<string>, threshold: number): Promise<Loaded> {
  const byId = new Map<string, unknown>();
  const indexes: Record<string, unknown> = {};
  const apply = (entry: Record<string, unknown>) => {
    if (entry._id) {
      if (entry.$$deleted === true) byId.delete(entry._id as string);
      else byId.set(entry._id as string, entry);
    } else {
      const created = entry.$$indexCreated as { fieldName?: unknown } | undefined;
      if (created && created.fieldName != null) indexes[created.fieldName as string] = created;
      else if (typeof entry.$$indexRemoved === 'string') delete indexes[entry.$$indexRemoved];
    }
  };
  let lines = 0;
  let unreadable = 0;
  const read = (line: string) => {
    // a blank line of a file with CRLF line ends (written by hand, or on another system), which NeDB passed over
    if (line === '' || line === '\r') return;
    lines++;
    try {
      const entries = line.startsWith(BATCH) ? documentsOf(line) : [nedbModel.deserialize(line)];
      for (const entry of entries as Array<Record<string, unknown>>) apply(entry);
    } catch {
      unreadable++;
    }
  };
  // a line's pieces until its newline comes: a batch's record may span many of the stream's chunks
  let pieces: string[] = [];
  for await (const chunk of file) {
    let start = 0;
    for (let end = chunk.indexOf('\n'); end !== -1; end = chunk.indexOf('\n', start)) {
      pieces.push(chunk.slice(start, end));
      const line = pieces.join('');
      pieces = []; // the chunks a large record came in can go while it is read
      read(line);
      start = end + 1;
    }
    if (start < chunk.length) pieces.push(chunk.slice(start));
  }
  read(pieces.join(''));
  if (lines > 0 && unreadable / lines > threshold) {
    throw Object.assign(new Error(`${unreadable} of the ${lines} lines of the data file cannot be read`), {
      corruptItems: unreadable,
      dataLength: lines,
    });
  }
  return { data: [...byId.values()], indexes };
}

/**
 * The entries of a batch's record (`record`), all objects: one that is not (a hand edit, a disk error) makes the whole
 * record unreadable, so that a batch is applied whole or not at all (the entries before such a one were applied).
 */
function documentsOf(line: string): unknown[] {
  const entries = nedbModel.deserialize(line.slice(BATCH.length));
  if (!Array.isArray(entries) || !entries.every((entry) => typeof entry === 'object' && entry !== null))
    throw new Error('not a batch of documents');
  return entries;
}

/**
 * Cuts a collection's file after its last whole line. Every line NeDB writes ends with a newline, so a last line
 * without one is an append a crash cut short (a document or a batch's record written in several system calls, a power
 * cut): a write never acknowledged. NeDB counts it as corrupt and, in a file of fewer than ten lines, refused to load
 * the collection at all, at every start.
 */
async function dropTornTail(filename: string): Promise<void> {
  let handle: Awaited<ReturnType<typeof open>>;
  try {
    handle = await open(filename, 'r');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return; // NeDB makes it (or renames its compaction's)
    throw err;
  }
  let keep = 0;
  let size = 0;
  try {
    size = (await handle.stat()).size;
    const chunk = Buffer.alloc(64 * 1024);
    for (let end = size; end > 0; ) {
      const start = Math.max(0, end - chunk.length);
      const { bytesRead } = await handle.read(chunk, 0, end - start, start);
      const newline = chunk.subarray(0, bytesRead).lastIndexOf(0x0a);
      if (newline !== -1) {
        keep = start + newline + 1;
        break;
      }
      end = start;
    }
  } finally {
    await handle.close();
  }
  if (keep < size) await truncate(filename, keep);
}

/** An error from the file system (it names its system call), as opposed to one about the data. */
export const isFileSystemError = (err: unknown): boolean =>
  typeof (err as { syscall?: unknown } | null)?.syscall === 'string';
