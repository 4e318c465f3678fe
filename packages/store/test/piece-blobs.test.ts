import { randomBytes } from 'node:crypto';
import { createEmbeddedStore, type Store } from '../src';
import { CUT_WRITE_AGE_MS, pieceBlobs } from '../src/blobs';

/**
 * Blobs in pieces (how the MongoDB engine keeps them; here over the embedded engine): what a write cut short
 * leaves behind is removed, not kept forever.
 */
describe('blobs in pieces: writes cut short', () => {
  type Method = 'updateOne' | 'deleteMany';
  /** the same store, but one method of its collections never answers (the process "stops" there) or fails */
  const cutAt = (inner: Store, method: Method, how: 'stops' | 'fails'): Pick<Store, 'collection'> => ({
    collection: (name, indexes) =>
      new Proxy(inner.collection(name, indexes), {
        get: (target, prop, receiver) =>
          prop === method
            ? () =>
                how === 'stops' ? new Promise(() => undefined) : Promise.reject(new Error('the write failed'))
            : Reflect.get(target, prop, receiver),
      }),
  });
  const settle = () => new Promise((resolve) => setTimeout(resolve, 50));

  it('removes what writes cut short left once their marks are old, and keeps the rest', async () => {
    const inner = createEmbeddedStore();
    const docs = inner.collection<{ _id: string; blob?: string; version?: string; writingSince?: Date }>(
      'models.blobs',
    );
    const kept = randomBytes(900_000);
    await pieceBlobs(inner, 'models').put('replaced', kept);
    const newer = randomBytes(500_000);
    await pieceBlobs(inner, 'models').put('switched', randomBytes(800_000));

    // stopped before its head: a first write, and a replacement
    void pieceBlobs(cutAt(inner, 'updateOne', 'stops'), 'models').put('first', randomBytes(1_000_000));
    void pieceBlobs(cutAt(inner, 'updateOne', 'stops'), 'models').put('replaced', randomBytes(800_000));
    // stopped after its head, before the version it replaced was removed
    void pieceBlobs(cutAt(inner, 'deleteMany', 'stops'), 'models').put('switched', newer);
    await settle();
    const old = new Date(Date.now() - CUT_WRITE_AGE_MS - 60_000);
    await docs.updateMany({ writingSince: { $gte: new Date(0) } }, { $set: { writingSince: old } });
    // a write stopped a moment ago may be another instance's, still going: it stays
    void pieceBlobs(cutAt(inner, 'updateOne', 'stops'), 'models').put('recent', randomBytes(500_000));
    await settle();
    const recentDocs = await docs.count({ blob: 'recent' });
    expect(recentDocs).toBe(3); // its mark and two pieces

    const restarted = pieceBlobs(inner, 'models');
    expect((await restarted.list()).map((b) => b.id).sort()).toEqual(['replaced', 'switched']);
    expect(await docs.count({ blob: 'first' })).toBe(0);
    // each head and its own pieces (900,000 bytes: 3 pieces; 500,000: 2), nothing of the other versions
    expect(await docs.count({ blob: 'replaced' })).toBe(4);
    expect(await docs.count({ blob: 'switched' })).toBe(3);
    expect((await restarted.get('replaced'))!.equals(kept)).toBe(true);
    expect((await restarted.get('switched'))!.equals(newer)).toBe(true);
    expect(await docs.count({ blob: 'recent' })).toBe(recentDocs);
    // a write that completes leaves no mark behind
    await restarted.put('complete', randomBytes(10));
    expect(await docs.count({ writingSince: { $gte: new Date(0) } })).toBe(1);
    await inner.close();
  });

  it('a write that fails removes its own pieces and mark, and leaves the blob as it was', async () => {
    const inner = createEmbeddedStore();
    const docs = inner.collection<{ _id: string; blob?: string }>('models.blobs');
    const bytes = randomBytes(900_000);
    await pieceBlobs(inner, 'models').put('a', bytes);
    await expect(
      pieceBlobs(cutAt(inner, 'updateOne', 'fails'), 'models').put('a', randomBytes(800_000)),
    ).rejects.toThrow('the write failed');
    expect(await docs.count({ blob: 'a' })).toBe(4);
    expect((await pieceBlobs(inner, 'models').get('a'))!.equals(bytes)).toBe(true);
    await inner.close();
  });

  it('a delete leaves the mark of a write in progress to that write', async () => {
    const inner = createEmbeddedStore();
    const docs = inner.collection<{ _id: string; blob?: string; writingSince?: Date }>('models.blobs');
    void pieceBlobs(cutAt(inner, 'updateOne', 'stops'), 'models').put('b', randomBytes(500_000));
    await settle();
    await pieceBlobs(inner, 'models').delete('b');
    expect(await docs.count({ blob: 'b' })).toBe(1);
    expect(await docs.count({ blob: 'b', writingSince: { $gte: new Date(0) } })).toBe(1);
    await inner.close();
  });
});
