import { mkdirSync, renameSync, rmdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { AppError } from '@platform/kernel';
import { tempDir } from '@platform/testkit';
import { createEmbeddedStore, DataFolderError, DuplicateKeyError } from '../src';

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
