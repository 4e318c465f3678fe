import { readFileSync, rmSync, statSync } from 'node:fs';
import path from 'node:path';
import { tempDir, waitFor } from '@platform/testkit';
import { createEmbeddedStore } from '../src';

describe('embedded store whose data folder is removed under it', () => {
  it('reports its failed background work and fails its callers as Unavailable, never an unhandled rejection', async () => {
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);
    process.on('unhandledRejection', onUnhandled);
    const data = tempDir('store-folder-removed-');
    const background: Array<{ err: unknown; collection: string }> = [];
    const store = createEmbeddedStore({
      dataDir: data.dir,
      compactionIntervalMs: 5,
      onBackgroundError: (err, collection) => background.push({ err, collection }),
    });
    try {
      const outbox = store.collection<{ _id: string; n: number }>('outbox', [{ fields: { n: 1 } }]);
      await outbox.insertOne({ _id: 'a', n: 1 });
      rmSync(data.dir, { recursive: true, force: true });

      // the periodic compaction fails and says so
      await waitFor(() => background.length > 0, { what: 'a failed compaction to be reported' });
      expect(background[0]).toMatchObject({ collection: 'outbox', err: { code: 'ENOENT' } });
      // a write fails as Unavailable, and so does every later read or write while the folder is gone
      await expect(outbox.insertOne({ _id: 'b', n: 2 })).rejects.toMatchObject({ kind: 'unavailable' });
      await expect(outbox.find({})).rejects.toMatchObject({ kind: 'unavailable' });
      await expect(outbox.deleteMany({})).rejects.toMatchObject({ kind: 'unavailable' });
      await expect(store.ping()).rejects.toThrow(/outbox/);
      await new Promise((resolve) => setImmediate(resolve));
      expect(unhandled).toEqual([]);
    } finally {
      await store.close();
      process.off('unhandledRejection', onUnhandled);
      data.remove();
    }
  });
});

describe('embedded store whose collection file is removed under it', () => {
  it('makes the file again owner-only (it holds secrets), as NeDB makes it', async () => {
    const data = tempDir('store-file-removed-');
    const store = createEmbeddedStore({ dataDir: data.dir });
    try {
      const keys = store.collection<{ _id: string }>('keys');
      await keys.insertOne({ _id: 'a' });
      const file = path.join(data.dir, 'keys.db');
      rmSync(file);
      await store.ping();
      expect(statSync(file).mode & 0o777).toBe(0o600);
    } finally {
      await store.close();
      data.remove();
    }
  });
});

describe('embedded store whose collection file is removed while it runs', () => {
  const ids = async (dir: string) => {
    const store = createEmbeddedStore({ dataDir: dir });
    try {
      return (await store.collection<{ _id: string }>('docs').find({})).map((d) => d._id).sort();
    } finally {
      await store.close();
    }
  };

  it('writes it again whole at the next write, so that the next start has every acknowledged document', async () => {
    const data = tempDir('store-file-removed-write-');
    const store = createEmbeddedStore({ dataDir: data.dir, compactionIntervalMs: 0 });
    try {
      const docs = store.collection<{ _id: string }>('docs');
      await docs.insertOne({ _id: 'a' });
      await docs.insertOne({ _id: 'b' });
      rmSync(path.join(data.dir, 'docs.db'));
      // before, this append made the file anew holding 'c' alone, and a restart lost 'a' and 'b'
      await docs.insertOne({ _id: 'c' });
      await store.close();
      expect(await ids(data.dir)).toEqual(['a', 'b', 'c']);
    } finally {
      await store.close();
      data.remove();
    }
  });

  it('writes it again at the next ping or close when nothing is written', async () => {
    const data = tempDir('store-file-removed-idle-');
    try {
      const file = path.join(data.dir, 'docs.db');
      let store = createEmbeddedStore({ dataDir: data.dir, compactionIntervalMs: 0 });
      await store.collection<{ _id: string }>('docs').insertOne({ _id: 'a' });
      rmSync(file);
      // before, the ping's append made it anew, empty
      await store.ping();
      expect(readFileSync(file, 'utf8')).toContain('"_id":"a"');
      await store.close();

      store = createEmbeddedStore({ dataDir: data.dir, compactionIntervalMs: 0 });
      await store.collection<{ _id: string }>('docs').find({});
      rmSync(path.join(data.dir, 'docs.db'));
      await store.close();
      expect(await ids(data.dir)).toEqual(['a']);
    } finally {
      data.remove();
    }
  });
});
