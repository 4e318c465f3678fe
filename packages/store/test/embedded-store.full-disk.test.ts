import {
  existsSync,
  readdirSync,
  readFileSync,
  rmSync,
  type StatsFs,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import fsPromises, { type FileHandle, open } from 'node:fs/promises';
import path from 'node:path';
import { tempDir, waitFor } from '@platform/testkit';
import Datastore from '@seald-io/nedb';
import { CorruptFileError, createEmbeddedStore, DuplicateKeyError, NoRoomToRewriteError } from '../src';

type Item = { _id: string; n: number };

/**
 * A data folder as an earlier run left it: `docs.db` with three documents written, one updated and one deleted, and a
 * unique index on `n`.
 */
async function folderWrittenBefore(prefix: string) {
  const data = tempDir(prefix);
  const store = createEmbeddedStore({ dataDir: data.dir });
  const docs = store.collection<Item>('docs', [{ fields: { n: 1 }, unique: true }]);
  for (const [_id, n] of [
    ['a', 1],
    ['b', 2],
    ['c', 3],
  ] as const)
    await docs.insertOne({ _id, n });
  await docs.updateOne({ _id: 'a' }, { $set: { n: 10 } });
  await docs.deleteOne({ _id: 'c' });
  await store.close();
  return { ...data, file: path.join(data.dir, 'docs.db') };
}

/**
 * Keeps the disk under `file` full for its rewrites: each copy, written through `<file>~`, goes to /dev/full (ENOSPC
 * as on a full disk), also after the store removes the partial copy a failed one left. Returns the end of it.
 */
function fullForRewrites(file: string): () => void {
  const copy = `${file}~`;
  symlinkSync('/dev/full', copy);
  const realRm = fsPromises.rm;
  const removals = jest.spyOn(fsPromises, 'rm').mockImplementation(async (target, options) => {
    await realRm(target, options);
    if (target === copy) symlinkSync('/dev/full', copy);
  });
  return () => {
    removals.mockRestore();
    rmSync(copy, { force: true });
  };
}

/** A disk error as Node reports it. */
const noSpace = (syscall: string) =>
  Object.assign(new Error(`ENOSPC: no space left on device, ${syscall}`), {
    code: 'ENOSPC',
    errno: -28,
    syscall,
  });

describe('embedded store started on a disk without room to rewrite a collection file', () => {
  it('serves the file as it is, keeps it intact, says so, and keeps the writes the disk takes', async () => {
    const data = await folderWrittenBefore('store-full-start-');
    const before = readFileSync(data.file, 'utf8');
    const roomAgain = fullForRewrites(data.file);
    const rm = jest.mocked(fsPromises.rm);
    const warnings: { err: unknown; collection: string }[] = [];
    const store = createEmbeddedStore({
      dataDir: data.dir,
      onBackgroundError: (err, collection) => warnings.push({ err, collection }),
    });
    try {
      const docs = store.collection<Item>('docs', [{ fields: { n: 1 }, unique: true }]);
      // before, every operation failed as Unavailable (and a ping too) until the disk had room for a whole copy
      expect(await docs.find({}, { sort: { n: 1 } })).toEqual([
        { _id: 'b', n: 2 },
        { _id: 'a', n: 10 },
      ]);
      await store.ping();
      expect(readFileSync(data.file, 'utf8')).toBe(before);
      // the partial copy, which would hold the disk's last bytes, is removed
      expect(rm).toHaveBeenCalledWith(`${data.file}~`, { force: true });
      expect(warnings).toHaveLength(1);
      expect(warnings[0]!.collection).toBe('docs');
      expect(warnings[0]!.err).toBeInstanceOf(NoRoomToRewriteError);
      expect(String(warnings[0]!.err)).toContain(
        `${data.file}: no room on its disk to rewrite it, at a load or a compaction (ENOSPC; a rewrite needs room for a copy, about ${before.length} bytes); the collection is served from the file as it is`,
      );

      await expect(docs.insertOne({ _id: 'twin', n: 2 })).rejects.toBeInstanceOf(DuplicateKeyError);
      await docs.insertOne({ _id: 'd', n: 4 });
      await docs.updateOne({ _id: 'b' }, { $inc: { n: 10 } });
    } finally {
      await store.close();
      roomAgain();
    }
    const reopened = createEmbeddedStore({ dataDir: data.dir });
    try {
      expect(await reopened.collection<Item>('docs').find({}, { sort: { n: 1 } })).toEqual([
        { _id: 'd', n: 4 },
        { _id: 'a', n: 10 },
        { _id: 'b', n: 12 },
      ]);
    } finally {
      await reopened.close();
      data.remove();
    }
  });

  it('fails a write the disk refuses partway as Unavailable, keeps none of it, and serves the rest', async () => {
    const data = await folderWrittenBefore('store-full-write-');
    const roomAgain = fullForRewrites(data.file);
    const told: unknown[] = [];
    const clock = { ms: 0 };
    const store = createEmbeddedStore({
      dataDir: data.dir,
      now: () => clock.ms,
      onBackgroundError: (err) => told.push(err),
    });
    const realAppend = fsPromises.appendFile;
    // the disk takes the first half of the line, then has no room left
    const full = jest.spyOn(fsPromises, 'appendFile').mockImplementation(async (file, text, options) => {
      if (String(text).length === 0) return realAppend(file, text, options);
      await realAppend(file, String(text).slice(0, String(text).length / 2), options);
      throw noSpace('write');
    });
    try {
      const docs = store.collection<Item>('docs');
      await expect(docs.insertOne({ _id: 'refused', n: 5 })).rejects.toMatchObject({
        kind: 'unavailable',
        error: 'StoreUnavailable',
      });
      full.mockRestore();
      expect(await docs.find({}, { sort: { n: 1 } })).toEqual([
        { _id: 'b', n: 2 },
        { _id: 'a', n: 10 },
      ]);
      clock.ms += 1_000; // a write right after a refused one is refused at once (see below)
      await docs.insertOne({ _id: 'taken', n: 6 });
      // told at the start; the reload after the refused write, on the same full disk, does not tell it again
      expect(told).toEqual([expect.any(NoRoomToRewriteError)]);
    } finally {
      full.mockRestore();
      await store.close();
      roomAgain();
    }
    const warnings: unknown[] = [];
    const reopened = createEmbeddedStore({
      dataDir: data.dir,
      onBackgroundError: (err) => warnings.push(err),
    });
    try {
      // no line of the refused write is left to be read back, whole or cut
      expect(await reopened.collection<Item>('docs').find({}, { sort: { n: 1 } })).toEqual([
        { _id: 'b', n: 2 },
        { _id: 'taken', n: 6 },
        { _id: 'a', n: 10 },
      ]);
      expect(warnings).toEqual([]); // nor an unreadable line
      expect(readdirSync(data.dir).sort()).toEqual(['docs.db', 'store.lock']);
    } finally {
      await reopened.close();
      data.remove();
    }
  });
});

describe('embedded store whose disk refuses to flush a rewritten file (ENOSPC from fsync: space allocated late)', () => {
  it('serves the file it loaded, intact, as when the copy cannot be written', async () => {
    const data = await folderWrittenBefore('store-full-flush-');
    const before = readFileSync(data.file, 'utf8');
    const probe = await open(data.file, 'r');
    const handles = Object.getPrototypeOf(probe) as FileHandle;
    await probe.close();
    const refused = jest.spyOn(handles, 'sync').mockRejectedValue(noSpace('fsync'));
    const warnings: unknown[] = [];
    const store = createEmbeddedStore({ dataDir: data.dir, onBackgroundError: (err) => warnings.push(err) });
    try {
      const docs = store.collection<Item>('docs');
      // before, NeDB's rewrite turned the refused flush into a TypeError: every operation failed until a restart
      expect(await docs.find({}, { sort: { n: 1 } })).toEqual([
        { _id: 'b', n: 2 },
        { _id: 'a', n: 10 },
      ]);
      expect(warnings).toEqual([expect.any(NoRoomToRewriteError)]);
      expect(readFileSync(data.file, 'utf8')).toBe(before);
      expect(existsSync(`${data.file}~`)).toBe(false);
    } finally {
      refused.mockRestore();
      await store.close();
      data.remove();
    }
  });
});

describe('embedded store started on a full disk with a collection file holding unreadable lines', () => {
  it('serves the readable documents, and leaves the file as it is until a copy of it can be kept', async () => {
    const data = tempDir('store-full-corrupt-');
    const file = path.join(data.dir, 'docs.db');
    const original = '{"_id":"a","n":1}\n\u0000\u0000{"_id":"b"\n{"_id":"c","n":3}\n';
    writeFileSync(file, original, { mode: 0o600 });
    const roomAgain = fullForRewrites(file);
    // no room for the copy of the file as it was either
    const noCopy = jest.spyOn(fsPromises, 'copyFile').mockRejectedValue(noSpace('copyfile'));
    const warnings: unknown[] = [];
    const store = createEmbeddedStore({
      dataDir: data.dir,
      compactionIntervalMs: 50,
      onBackgroundError: (err) => warnings.push(err),
    });
    const kept = () => readdirSync(data.dir).filter((name) => name.startsWith('docs.db.corrupt-'));
    try {
      const docs = store.collection<Item>('docs');
      // before, every operation failed as Unavailable until the disk had room for the copy
      expect(await docs.find({}, { sort: { n: 1 } })).toEqual([
        { _id: 'a', n: 1 },
        { _id: 'c', n: 3 },
      ]);
      expect(warnings[0]).toBeInstanceOf(CorruptFileError);
      expect(String(warnings[0])).toContain(
        `${file}: 1 of its 3 lines cannot be read; the collection is loaded without them, and the file is kept as it is, not rewritten nor compacted, until its disk has room for a copy of it (${file}.corrupt-`,
      );
      // the compactions meanwhile fail (told), and leave the file as it is: the only place of its unreadable line
      await waitFor(() => warnings.length >= 3, { timeoutMs: 10_000, what: 'compactions on the full disk' });
      expect(warnings[1]).toMatchObject({ code: 'ENOSPC' });
      expect(readFileSync(file, 'utf8')).toBe(original);
      expect(kept()).toEqual([]);

      noCopy.mockRestore();
      roomAgain();
      await waitFor(() => kept().length === 1 && readFileSync(file, 'utf8') !== original, {
        timeoutMs: 10_000,
        what: 'a compaction once the disk has room',
      });
      expect(readFileSync(path.join(data.dir, kept()[0]!), 'utf8')).toBe(original);
      expect(await docs.find({}, { sort: { n: 1 } })).toEqual([
        { _id: 'a', n: 1 },
        { _id: 'c', n: 3 },
      ]);
    } finally {
      noCopy.mockRestore();
      roomAgain();
      await store.close();
      data.remove();
    }
  });
});

/** The disk under the data folder, as `statfs` tells it, with room for `bytes` more. */
function roomOf(bytes: number) {
  return jest.spyOn(fsPromises, 'statfs').mockResolvedValue({ bavail: bytes / 4096, bsize: 4096 } as StatsFs);
}

describe('embedded store compacting a collection on a disk without room for its copy', () => {
  it('writes none of the copy, and tells it once until a compaction succeeds again', async () => {
    const data = await folderWrittenBefore('store-full-compaction-');
    const warnings: unknown[] = [];
    const store = createEmbeddedStore({
      dataDir: data.dir,
      compactionIntervalMs: 50,
      onBackgroundError: (err) => warnings.push(err),
    });
    const opened = jest.spyOn(fsPromises, 'open');
    let full = roomOf(0);
    try {
      const docs = store.collection<Item>('docs');
      await docs.updateOne({ _id: 'b' }, { $set: { n: 20 } });
      await waitFor(() => full.mock.calls.length >= 3, { timeoutMs: 10_000, what: 'three compactions' });
      // before, each copy was written until it held every free byte of the disk, and the other collections' appends,
      // which had room, were refused meanwhile
      expect(opened.mock.calls.map(([file]) => file)).not.toContain(`${data.file}~`);
      // before, each compaction (every 10 minutes) told its ENOSPC again
      expect(warnings).toEqual([expect.any(NoRoomToRewriteError)]);
      expect(String(warnings[0])).toContain(
        `${data.file}: no room on its disk to rewrite it, at a load or a compaction (ENOSPC;`,
      );

      full.mockRestore();
      const superseded = readFileSync(data.file, 'utf8');
      await waitFor(() => readFileSync(data.file, 'utf8') !== superseded, {
        timeoutMs: 10_000,
        what: 'a compaction once the disk has room',
      });
      full = roomOf(0);
      await waitFor(() => full.mock.calls.length >= 1, {
        timeoutMs: 10_000,
        what: 'a compaction on a full disk',
      });
      await waitFor(() => warnings.length === 2, { timeoutMs: 10_000, what: 'the full disk told again' });
      expect(warnings[1]).toBeInstanceOf(NoRoomToRewriteError);
      expect(await docs.find({}, { sort: { n: 1 } })).toEqual([
        { _id: 'a', n: 10 },
        { _id: 'b', n: 20 },
      ]);
    } finally {
      full.mockRestore();
      opened.mockRestore();
      await store.close();
      data.remove();
    }
  });
});

describe('embedded store started with a collection file holding unreadable lines, on a disk without room for its copy', () => {
  it('writes none of the copy, and leaves the file as it is', async () => {
    const data = tempDir('store-full-corrupt-copy-');
    const file = path.join(data.dir, 'docs.db');
    const original = '{"_id":"a","n":1}\n\u0000\u0000{"_id":"b"\n{"_id":"c","n":3}\n';
    writeFileSync(file, original, { mode: 0o600 });
    const full = roomOf(0);
    const copies = jest.spyOn(fsPromises, 'copyFile');
    const warnings: unknown[] = [];
    const store = createEmbeddedStore({ dataDir: data.dir, onBackgroundError: (err) => warnings.push(err) });
    try {
      expect(await store.collection<Item>('docs').count({})).toBe(2);
      expect(warnings).toEqual([expect.objectContaining({ name: 'CorruptFileError', copied: false })]);
      // before, the copy was written until it held every free byte of the disk
      expect(copies).not.toHaveBeenCalled();
      expect(readFileSync(file, 'utf8')).toBe(original);
    } finally {
      full.mockRestore();
      copies.mockRestore();
      await store.close();
      data.remove();
    }
  });
});

describe('embedded store whose disk refuses the appends', () => {
  it('refuses the writes that follow at once for a while, and serves the reads after a single reload', async () => {
    const data = await folderWrittenBefore('store-full-appends-');
    const clock = { ms: 0 };
    const store = createEmbeddedStore({
      dataDir: data.dir,
      now: () => clock.ms,
      onBackgroundError: () => {},
    });
    const docs = store.collection<Item>('docs');
    expect(await docs.count({})).toBe(2);
    const realAppend = fsPromises.appendFile;
    // an empty append (a ping's) still goes through, as on a full disk
    const refused = jest.spyOn(fsPromises, 'appendFile').mockImplementation(async (file, text, options) => {
      if (String(text).length === 0) return realAppend(file, text, options);
      throw noSpace('write');
    });
    const reloads = jest.spyOn(Datastore.prototype, 'loadDatabaseAsync');
    try {
      const results = await Promise.allSettled(
        Array.from({ length: 20 }, (_, i) =>
          i % 2 === 0 ? docs.insertOne({ _id: `w${i}`, n: 100 + i }) : docs.count({}),
        ),
      );
      expect(results.filter((_, i) => i % 2 === 0)).toEqual(
        Array.from({ length: 10 }, () => ({
          status: 'rejected',
          reason: expect.objectContaining({ kind: 'unavailable', error: 'StoreUnavailable' }),
        })),
      );
      expect(results.filter((_, i) => i % 2 === 1)).toEqual(
        Array.from({ length: 10 }, () => ({ status: 'fulfilled', value: 2 })),
      );
      // before, each refused write was followed by a reload of the whole file, reads waiting behind each
      expect(reloads).toHaveBeenCalledTimes(1);

      refused.mockRestore();
      await expect(docs.insertOne({ _id: 'soon', n: 5 })).rejects.toMatchObject({ kind: 'unavailable' });
      clock.ms += 1_000;
      await docs.insertOne({ _id: 'later', n: 6 });
    } finally {
      refused.mockRestore();
      reloads.mockRestore();
      await store.close();
    }
    const reopened = createEmbeddedStore({ dataDir: data.dir });
    try {
      expect(await reopened.collection<Item>('docs').find({}, { sort: { n: 1 } })).toEqual([
        { _id: 'b', n: 2 },
        { _id: 'later', n: 6 },
        { _id: 'a', n: 10 },
      ]);
    } finally {
      await reopened.close();
      data.remove();
    }
  });
});
