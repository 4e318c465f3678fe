import { chmodSync, constants, existsSync } from 'node:fs';
import { appendFile, copyFile, open, rm, stat, truncate } from 'node:fs/promises';
import Datastore from '@seald-io/nedb';
import type { Doc } from './port';
import { storeUnavailable } from './unavailable';

// eslint-disable-next-line @typescript-eslint/no-require-imports
const nedbModel = require('@seald-io/nedb/lib/model') as { serialize(doc: unknown): string };

/** NeDB's persistence: the parts of it the store drives itself */
interface Persistence {
  persistNewStateAsync(docs: unknown[]): Promise<void>;
  persistCachedDatabaseAsync(): Promise<void>;
  corruptAlertThreshold: number;
}

/** an append to a file that is there: a removed file is not made again holding that append alone */
const APPEND_TO_EXISTING = constants.O_WRONLY | constants.O_APPEND;

/**
 * A collection's file held lines that cannot be read (a disk error, a hand edit): the collection was loaded without
 * them, and the file as it was is kept beside it.
 */
export class CorruptFileError extends Error {
  constructor(
    readonly file: string,
    readonly unreadable: number,
    readonly lines: number,
    readonly keptIn: string,
  ) {
    super(
      `${file}: ${unreadable} of its ${lines} lines cannot be read; the collection is loaded without them, and the file as it was is kept in ${keptIn}`,
    );
    this.name = 'CorruptFileError';
  }
}

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
  private readonly persistence: Persistence;

  constructor(
    private readonly name: string,
    /** the file; none for a memory-only collection */
    readonly filename: string | undefined,
    private readonly now: () => number,
    /** told of a file loaded without its unreadable lines (`CorruptFileError`) */
    private readonly onCorrupt: (err: CorruptFileError) => void,
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
    // A failed append marks the collection broken before NeDB runs its next queued operation (a read queued
    // behind the write would otherwise answer the write's change, which is in memory only; see `read`).
    this.persistence.persistNewStateAsync = async (docs) => {
      if (!filename || docs.length === 0) return;
      // Several documents go in one append (a batch, an updateMany): one cut short (a disk filled partway) left its
      // first lines whole, and the refused write was read back at the reload or the next start. It is cut off again.
      const before = docs.length > 1 ? (await stat(filename).catch(() => undefined))?.size : undefined;
      try {
        await this.append(docs.map((doc) => `${nedbModel.serialize(doc)}\n`).join(''));
      } catch (err) {
        this.broken = err;
        if (before !== undefined) await truncate(filename, before).catch(() => undefined);
        throw err;
      }
    };
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

  /** The file takes an append (of nothing), or is written again from memory when it was removed (under the write lock). */
  async probe(): Promise<void> {
    if (this.filename && !this.broken) await this.append('');
  }

  /**
   * Loads the file. One with unreadable lines is loaded without them (every line is a whole document, so the others
   * stand), and kept as it was in `<name>.db.corrupt-<time>` first, since the load rewrites it: before, NeDB dropped
   * such lines without a word when they were at most 10 % of the file, and refused the whole collection otherwise,
   * at every start.
   */
  private async load(): Promise<void> {
    try {
      await this.ds.loadDatabaseAsync();
    } catch (err) {
      const { corruptItems, dataLength } = err as { corruptItems?: number; dataLength?: number };
      if (!this.filename || corruptItems === undefined) throw err;
      const keptIn = `${this.filename}.corrupt-${new Date(this.now()).toISOString().replace(/[:.]/g, '-')}`;
      await copyFile(this.filename, keptIn, constants.COPYFILE_EXCL).catch(async (failed) => {
        await rm(keptIn, { force: true }).catch(() => undefined);
        throw failed;
      });
      this.persistence.corruptAlertThreshold = 1;
      try {
        await this.ds.loadDatabaseAsync();
      } finally {
        this.persistence.corruptAlertThreshold = 0;
      }
      this.onCorrupt(new CorruptFileError(this.filename, corruptItems, dataLength ?? 0, keptIn));
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

/**
 * Cuts a collection's file after its last whole line. Every line NeDB writes ends with a newline, so a last line
 * without one is an append a crash cut short (a document written in several system calls, a power cut): a write
 * never acknowledged. NeDB counts it as corrupt and, in a file of fewer than ten lines, refused to load the
 * collection at all, at every start.
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
