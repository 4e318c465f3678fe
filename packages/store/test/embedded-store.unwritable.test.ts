import { existsSync, mkdirSync, renameSync, rmdirSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { AppError } from '@platform/kernel';
import { tempDir, waitFor } from '@platform/testkit';
import Datastore from '@seald-io/nedb';
import { createEmbeddedStore, DataFolderError, DuplicateKeyError, NoRoomToRewriteError } from '../src';

/** The disk under a collection fails (here: its file turned into a folder, which even root cannot append to). */
function breakFile(dir: string, name: string) {
  const file = path.join(dir, `${name}.db`);
  renameSync(file, `${file}.away`);
  mkdirSync(file);
  return () => {
    rmdirSync(file);
    renameSync(`${file}.away`, file);
  };
}

describe('embedded store when its file cannot be written', () => {
  it('fails writes and reads as Unavailable, never serves the failed write, and recovers by itself', async () => {
    const data = tempDir('store-unwritable-');
    const store = createEmbeddedStore({ dataDir: data.dir });
    const docs = store.collection<{ _id: string; n: number }>('docs');
    try {
      await docs.insertOne({ _id: 'kept', n: 1 });
      const repair = breakFile(data.dir, 'docs');

      const failed = await docs.insertOne({ _id: 'lost', n: 2 }).catch((e: unknown) => e);
      expect(failed).toBeInstanceOf(AppError);
      expect(failed).toMatchObject({ kind: 'unavailable', error: 'StoreUnavailable' });
      await expect(docs.findOne({ _id: 'kept' })).rejects.toMatchObject({ kind: 'unavailable' });
      await expect(store.ping()).rejects.toThrow(/docs/);

      repair();
      await store.ping();
      // the write that was refused is nowhere; the acknowledged one is there; new writes land
      expect(await docs.findOne({ _id: 'lost' })).toBeNull();
      expect(await docs.findOne({ _id: 'kept' })).toMatchObject({ n: 1 });
      await docs.updateOne({ _id: 'kept' }, { $inc: { n: 1 } });
    } finally {
      await store.close();
    }
    const reopened = createEmbeddedStore({ dataDir: data.dir });
    try {
      expect(await reopened.collection<{ _id: string; n: number }>('docs').find({})).toEqual([
        { _id: 'kept', n: 2 },
      ]);
    } finally {
      await reopened.close();
      data.remove();
    }
  });
});

describe('embedded store opened while a file cannot be read (a restart on a full or broken disk)', () => {
  it('fails as Unavailable and serves the file, with its unique indexes, once it can be loaded', async () => {
    const data = tempDir('store-unloadable-');
    let store = createEmbeddedStore({ dataDir: data.dir });
    await store.collection<{ _id: string; n: number }>('docs').insertOne({ _id: 'kept', n: 1 });
    await store.close();
    const repair = breakFile(data.dir, 'docs');
    store = createEmbeddedStore({ dataDir: data.dir });
    try {
      const docs = store.collection<{ _id: string; n: number }>('docs', [{ fields: { n: 1 }, unique: true }]);
      await expect(docs.find({})).rejects.toMatchObject({ kind: 'unavailable', error: 'StoreUnavailable' });
      await expect(docs.insertOne({ _id: 'refused', n: 2 })).rejects.toMatchObject({ kind: 'unavailable' });
      await expect(store.ping()).rejects.toThrow(/docs/);

      repair();
      await store.ping();
      expect(await docs.find({})).toEqual([{ _id: 'kept', n: 1 }]);
      await expect(docs.insertOne({ _id: 'twin', n: 1 })).rejects.toBeInstanceOf(DuplicateKeyError);
      await docs.insertOne({ _id: 'new', n: 3 });
    } finally {
      await store.close();
    }
    const reopened = createEmbeddedStore({ dataDir: data.dir });
    try {
      const docs = reopened.collection<{ _id: string; n: number }>('docs');
      expect(await docs.find({}, { sort: { n: 1 } })).toEqual([
        { _id: 'kept', n: 1 },
        { _id: 'new', n: 3 },
      ]);
    } finally {
      await reopened.close();
      data.remove();
    }
  });
});

describe('embedded store whose file takes an append but cannot be rewritten (a reload on a full disk)', () => {
  it('reloads it once for all the operations that arrive meanwhile, not once each', async () => {
    const data = tempDir('store-unrewritable-');
    let store = createEmbeddedStore({ dataDir: data.dir });
    await store.collection<{ _id: string }>('docs').insertOne({ _id: 'kept' });
    await store.close();
    // a load rewrites the whole file through `docs.db~`: a folder there fails it as a full disk does
    const partial = path.join(data.dir, 'docs.db~');
    mkdirSync(partial);
    const loads = jest.spyOn(Datastore.prototype, 'loadDatabaseAsync');
    const clock = { ms: 0 };
    store = createEmbeddedStore({ dataDir: data.dir, now: () => clock.ms });
    try {
      const docs = store.collection<{ _id: string }>('docs');
      const answers = await Promise.all(
        Array.from({ length: 20 }, (_, i) =>
          (i % 2 ? docs.find({}) : docs.insertOne({ _id: `new-${i}` })).catch((e: unknown) => e),
        ),
      );
      for (const answer of answers) expect(answer).toMatchObject({ kind: 'unavailable' });
      // the load at the start, and one reload for the twenty operations
      expect(loads).toHaveBeenCalledTimes(2);

      rmdirSync(partial);
      clock.ms += 1_000; // the wait after a failed reload
      expect(await docs.find({})).toEqual([{ _id: 'kept' }]);
    } finally {
      loads.mockRestore();
      await store.close();
      data.remove();
    }
  });
  it('tries a reload that failed again after a second, then after twice as long, not at each operation', async () => {
    const data = tempDir('store-unrewritable-wait-');
    const clock = { ms: 0 };
    const store = createEmbeddedStore({ dataDir: data.dir, now: () => clock.ms });
    const loads = jest.spyOn(Datastore.prototype, 'loadDatabaseAsync');
    try {
      const docs = store.collection<{ _id: string }>('docs');
      await docs.insertOne({ _id: 'kept' });
      const repair = breakFile(data.dir, 'docs');
      await expect(docs.insertOne({ _id: 'lost' })).rejects.toMatchObject({ kind: 'unavailable' });
      repair();
      const partial = path.join(data.dir, 'docs.db~');
      mkdirSync(partial);
      const reloadsAfter = async (ms: number) => {
        clock.ms += ms;
        const before = loads.mock.calls.length;
        await expect(docs.find({})).rejects.toMatchObject({ kind: 'unavailable' });
        return loads.mock.calls.length - before;
      };
      expect(await reloadsAfter(0)).toBe(1);
      expect(await reloadsAfter(999)).toBe(0);
      expect(await reloadsAfter(1)).toBe(1);
      expect(await reloadsAfter(1_999)).toBe(0);
      expect(await reloadsAfter(1)).toBe(1);

      rmdirSync(partial);
      clock.ms += 4_000;
      expect(await docs.find({})).toEqual([{ _id: 'kept' }]);
    } finally {
      loads.mockRestore();
      await store.close();
      data.remove();
    }
  });
});

describe('embedded store whose rewrite of a file fails for want of space', () => {
  it('leaves no partial copy behind, which would fill the disk that appends still had room on', async () => {
    const data = tempDir('store-rewrite-full-');
    const warnings: unknown[] = [];
    const store = createEmbeddedStore({ dataDir: data.dir, onBackgroundError: (err) => warnings.push(err) });
    try {
      const docs = store.collection<{ _id: string }>('docs');
      await docs.insertOne({ _id: 'kept' });
      const repair = breakFile(data.dir, 'docs');
      await expect(docs.insertOne({ _id: 'lost' })).rejects.toMatchObject({ kind: 'unavailable' });
      repair();
      // the reload rewrites the file through `docs.db~`; writes to /dev/full fail with ENOSPC as on a full disk
      const partial = path.join(data.dir, 'docs.db~');
      symlinkSync('/dev/full', partial);
      // the file as it is serves (embedded-store.full-disk.test.ts), without its rewrite
      expect(await docs.find({})).toEqual([{ _id: 'kept' }]);
      expect(warnings).toEqual([expect.any(NoRoomToRewriteError)]);
      expect(existsSync(partial)).toBe(false);
    } finally {
      await store.close();
      data.remove();
    }
  });

  it('when the rewrite is a compaction too', async () => {
    const data = tempDir('store-compaction-full-');
    const partial = path.join(data.dir, 'docs.db~');
    // what is left of the copy when the failure is told (the next compaction makes its own)
    const failures: { err: unknown; partialLeft: boolean }[] = [];
    const store = createEmbeddedStore({
      dataDir: data.dir,
      compactionIntervalMs: 20,
      onBackgroundError: (err) => failures.push({ err, partialLeft: existsSync(partial) }),
    });
    try {
      const docs = store.collection<{ _id: string }>('docs');
      await docs.insertOne({ _id: 'kept' });
      symlinkSync('/dev/full', partial);
      await waitFor(() => failures.length > 0, { what: 'a failed compaction' });
      expect(failures[0]).toMatchObject({ err: { code: 'ENOSPC' }, partialLeft: false });
    } finally {
      await store.close();
      data.remove();
    }
  });
});

describe('embedded store reads made while a write fails', () => {
  it('never answer the failed write, which NeDB had put in memory before its append failed', async () => {
    const data = tempDir('store-unwritable-read-');
    const store = createEmbeddedStore({ dataDir: data.dir });
    const docs = store.collection<{ _id: string; n: number }>('docs');
    try {
      await docs.insertOne({ _id: 'kept', n: 1 });
      const repair = breakFile(data.dir, 'docs');
      // each read is made while the write before it is in flight
      const inserted = docs.insertOne({ _id: 'lost', n: 2 }).catch((e: unknown) => e);
      const readInserted = docs.findOne({ _id: 'lost' }).catch((e: unknown) => e);
      const updated = docs.updateOne({ _id: 'kept' }, { $inc: { n: 5 } }).catch((e: unknown) => e);
      const readUpdated = docs.find({ _id: 'kept' }).catch((e: unknown) => e);
      const counted = docs.count({ n: { $gt: 1 } }).catch((e: unknown) => e);
      expect(await inserted).toMatchObject({ kind: 'unavailable' });
      expect(await updated).toMatchObject({ kind: 'unavailable' });
      for (const read of [await readInserted, await readUpdated, await counted]) {
        expect(read).toMatchObject({ kind: 'unavailable' });
      }
      repair();
      expect(await docs.findOne({ _id: 'lost' })).toBeNull();
      expect(await docs.find({})).toEqual([{ _id: 'kept', n: 1 }]);
    } finally {
      await store.close();
      data.remove();
    }
  });
});

describe('embedded store on a folder it cannot use', () => {
  it('refuses at once, naming the folder and why', () => {
    const data = tempDir('store-folder-refused-');
    try {
      const file = path.join(data.dir, 'a-file');
      writeFileSync(file, 'x');
      expect(() => createEmbeddedStore({ dataDir: path.join(file, 'auth') })).toThrow(DataFolderError);
      expect(() => createEmbeddedStore({ dataDir: path.join(file, 'auth') })).toThrow(
        `cannot use ${path.join(file, 'auth')} as a data folder: a part of its path is a file`,
      );
    } finally {
      data.remove();
    }
  });
});
