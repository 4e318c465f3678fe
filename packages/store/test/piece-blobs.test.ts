import { randomBytes } from 'node:crypto';
import { createEmbeddedStore, type Store } from '../src';
import { CUT_WRITE_AGE_MS, pieceBlobs } from '../src/blobs';

/**
 * Blobs in pieces (how the MongoDB engine keeps them; here over the embedded engine): what a write cut short
 * leaves behind is removed, not kept forever.
 */
describe('blobs in pieces: writes cut short', () => {
  /** the same store, but the process "stops" when a write reaches its head */
  const stoppingBeforeHeads = (inner: Store): Pick<Store, 'collection'> => ({
    collection: (name, indexes) =>
      new Proxy(inner.collection(name, indexes), {
        get: (target, prop, receiver) =>
          prop === 'updateOne'
            ? () => Promise.reject(new Error('the process stopped'))
            : Reflect.get(target, prop, receiver),
      }),
  });

  it('removes the pieces of writes cut before their heads once they are old, and keeps the rest', async () => {
    const inner = createEmbeddedStore();
    const docs = inner.collection<{ _id: string; blob?: string; writingSince?: Date }>('models.blobs');
    const kept = randomBytes(900_000);
    await pieceBlobs(inner, 'models').put('replaced', kept);

    const cut = pieceBlobs(stoppingBeforeHeads(inner), 'models');
    await expect(cut.put('first', randomBytes(1_000_000))).rejects.toThrow('the process stopped');
    await expect(cut.put('replaced', randomBytes(800_000))).rejects.toThrow('the process stopped');
    const old = new Date(Date.now() - CUT_WRITE_AGE_MS - 60_000);
    await docs.updateMany({ writingSince: { $gte: new Date(0) } }, { $set: { writingSince: old } });
    // a write cut a moment ago may be another instance's, still going: it stays
    await expect(cut.put('recent', randomBytes(500_000))).rejects.toThrow('the process stopped');
    const recentDocs = await docs.count({ blob: 'recent' });
    expect(recentDocs).toBeGreaterThan(1);

    const restarted = pieceBlobs(inner, 'models');
    expect((await restarted.list()).map((b) => b.id)).toEqual(['replaced']);
    expect(await docs.count({ blob: 'first' })).toBe(0);
    // the head and its own pieces (900,000 bytes: 3 pieces), nothing of the cut version
    expect(await docs.count({ blob: 'replaced' })).toBe(4);
    expect((await restarted.get('replaced'))!.equals(kept)).toBe(true);
    expect(await docs.count({ blob: 'recent' })).toBe(recentDocs);
    // a write that completes leaves no mark behind
    await restarted.put('complete', randomBytes(10));
    expect(await docs.count({ writingSince: { $gte: new Date(0) } })).toBe(1);
    await inner.close();
  });
});
