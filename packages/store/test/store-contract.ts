import { randomBytes, randomUUID } from 'node:crypto';
import { type Collection, DuplicateKeyError, deleteAsRead, type Store, updateWithRevision } from '../src';

interface Item {
  _id: string;
  group: string;
  n: number;
  tags?: string[];
  nested?: { a?: number; b?: string };
  at?: Date;
}

/**
 * The behaviour every store engine must show. Run against the embedded engine always, and against
 * MongoDB whenever MONGO_URL is set, so services can rely on the port rather than on an engine.
 */
export function storeContract(engine: string, open: () => Promise<Store>, cleanup?: () => Promise<void>) {
  describe(`store contract: ${engine}`, () => {
    let store: Store;
    let items: Collection<Item>;
    const col = () =>
      store.collection<Item>(`items_${suffix}`, [{ fields: { group: 1, n: 1 }, unique: true }]);
    let suffix = '';

    beforeEach(async () => {
      suffix = randomUUID().slice(0, 8);
      store = await open();
      items = col();
    });
    afterEach(async () => {
      await store.close();
      await cleanup?.();
    });

    it('inserts and finds documents by equality, dotted paths and operators', async () => {
      await items.insertOne({ _id: 'a', group: 'g1', n: 1, nested: { a: 5 }, tags: ['x'] });
      await items.insertOne({ _id: 'b', group: 'g1', n: 2, nested: { a: 7 } });
      await items.insertOne({ _id: 'c', group: 'g2', n: 3 });
      expect((await items.findOne({ _id: 'a' }))?.n).toBe(1);
      expect((await items.findOne({ 'nested.a': 7 }))?._id).toBe('b');
      expect((await items.find({ n: { $gte: 2 } }, { sort: { n: 1 } })).map((d) => d._id)).toEqual([
        'b',
        'c',
      ]);
      expect((await items.find({ group: { $in: ['g2'] } })).map((d) => d._id)).toEqual(['c']);
      expect((await items.find({ n: { $eq: 2 } })).map((d) => d._id)).toEqual(['b']);
      expect((await items.find({ n: { $ne: 2 } }, { sort: { n: -1 } })).map((d) => d._id)).toEqual([
        'c',
        'a',
      ]);
      expect((await items.find({ $or: [{ n: 1 }, { group: 'g2' }] }, { sort: { n: 1 } })).length).toBe(2);
      expect((await items.find({ tags: { $exists: true } })).map((d) => d._id)).toEqual(['a']);
      expect(await items.count({ group: 'g1' })).toBe(2);
      expect(await items.findOne({ _id: 'missing' })).toBeNull();
    });

    it('never matches a missing or null field with a range operator', async () => {
      await items.insertOne({ _id: 'dated', group: 'g', n: 1, at: new Date('2026-01-01T00:00:00Z') });
      await items.insertOne({ _id: 'undated', group: 'g', n: 2 });
      await items.insertOne({ _id: 'null', group: 'g', n: 3, at: null as unknown as Date });
      const before = await items.find({ at: { $lte: new Date('2027-01-01T00:00:00Z') } });
      expect(before.map((d) => d._id)).toEqual(['dated']);
      expect(await items.count({ at: { $lt: new Date('2020-01-01T00:00:00Z') } })).toBe(0);
    });

    it('matches null as MongoDB does: a null or missing field, and $ne null only a present value', async () => {
      await items.insertOne({ _id: 'dated', group: 'g', n: 1, at: new Date('2026-01-01T00:00:00Z') });
      await items.insertOne({ _id: 'undated', group: 'g', n: 2 });
      await items.insertOne({ _id: 'null', group: 'g', n: 3, at: null as unknown as Date });
      await items.insertOne({ _id: 'nested', group: 'g', n: 4, nested: { a: 1 } });
      const ids = async (filter: Record<string, unknown>) =>
        (await items.find(filter, { sort: { n: 1 } })).map((d) => d._id);
      expect(await ids({ at: null })).toEqual(['undated', 'null', 'nested']);
      expect(await ids({ at: { $eq: null } })).toEqual(['undated', 'null', 'nested']);
      expect(await ids({ at: { $ne: null } })).toEqual(['dated']);
      expect(await ids({ at: { $in: [null] } })).toEqual(['undated', 'null', 'nested']);
      expect(await ids({ at: { $nin: [null] } })).toEqual(['dated']);
      expect(await ids({ 'nested.a': null })).toEqual(['dated', 'undated', 'null']);
      expect(await ids({ 'nested.a': { $ne: null } })).toEqual(['nested']);
      expect(await ids({ group: 'g', at: null, n: { $gte: 3 } })).toEqual(['null', 'nested']);
      expect(await ids({ $or: [{ at: null }, { n: 1 }] })).toEqual(['dated', 'undated', 'null', 'nested']);
      expect(await items.count({ at: { $ne: null, $lte: new Date('2027-01-01T00:00:00Z') } })).toBe(1);
    });

    it('matches $ne on an array field only when no element equals the value', async () => {
      await items.insertOne({ _id: 'with', group: 'g', n: 1, tags: ['x', 'y'] });
      await items.insertOne({ _id: 'without', group: 'g', n: 2, tags: ['y'] });
      await items.insertOne({ _id: 'none', group: 'g', n: 3 });
      const ids = (await items.find({ tags: { $ne: 'x' } }, { sort: { n: 1 } })).map((d) => d._id);
      expect(ids).toEqual(['without', 'none']);
      expect((await items.find({ n: { $ne: 2, $gte: 2 } })).map((d) => d._id)).toEqual(['none']);
    });

    it('matches $nin on an array field only when no element is listed, and $exists on an empty array', async () => {
      await items.insertOne({ _id: 'with', group: 'g', n: 1, tags: ['x', 'y'] });
      await items.insertOne({ _id: 'without', group: 'g', n: 2, tags: ['y'] });
      await items.insertOne({ _id: 'empty', group: 'g', n: 3, tags: [] });
      await items.insertOne({ _id: 'none', group: 'g', n: 4 });
      const ids = async (filter: Record<string, unknown>) =>
        (await items.find(filter, { sort: { n: 1 } })).map((d) => d._id);
      expect(await ids({ tags: { $nin: ['x'] } })).toEqual(['without', 'empty', 'none']);
      expect(await ids({ tags: { $nin: ['x', null] } })).toEqual(['without', 'empty']);
      expect(await ids({ tags: { $exists: true } })).toEqual(['with', 'without', 'empty']);
      expect(await ids({ tags: { $exists: false } })).toEqual(['none']);
      expect(await ids({ $or: [{ tags: { $nin: ['y'] } }, { n: 1 }] })).toEqual(['with', 'empty', 'none']);
    });

    it('sorts, skips and limits', async () => {
      for (let n = 0; n < 10; n++) await items.insertOne({ _id: `d${n}`, group: 'g', n });
      const page = await items.find({}, { sort: { n: -1 }, skip: 2, limit: 3 });
      expect(page.map((d) => d.n)).toEqual([7, 6, 5]);
    });

    it('refuses a duplicate _id or unique index value with DuplicateKeyError, keeping the first', async () => {
      await items.insertOne({ _id: 'a', group: 'g', n: 1 });
      await expect(items.insertOne({ _id: 'a', group: 'other', n: 9 })).rejects.toBeInstanceOf(
        DuplicateKeyError,
      );
      await expect(items.insertOne({ _id: 'b', group: 'g', n: 1 })).rejects.toBeInstanceOf(DuplicateKeyError);
      expect(await items.find({})).toHaveLength(1);
      expect((await items.findOne({ _id: 'a' }))?.group).toBe('g');
    });

    it('keeps documents without the field out of a sparse index, and finds them as before', async () => {
      const tagged = store.collection<Item & { tag?: string }>(`tagged_${suffix}`, [
        { fields: { tag: 1 }, unique: true, sparse: true },
      ]);
      // unique among the documents holding it: any number lack it
      for (let n = 0; n < 3; n++) await tagged.insertOne({ _id: `none${n}`, group: 'g', n });
      await tagged.insertOne({ _id: 't', group: 'g', n: 3, tag: 'x' });
      await expect(tagged.insertOne({ _id: 'u', group: 'h', n: 4, tag: 'x' })).rejects.toBeInstanceOf(
        DuplicateKeyError,
      );
      expect((await tagged.find({ tag: 'x' })).map((d) => d._id)).toEqual(['t']);
      const untagged = await tagged.updateMany({ group: 'g', tag: { $exists: false } }, { $inc: { n: 10 } });
      expect(untagged.matched).toBe(3);
      await tagged.updateOne({ _id: 'none0' }, { $set: { tag: 'y' } });
      await tagged.updateOne({ _id: 't' }, { $unset: { tag: '' } });
      expect((await tagged.find({ tag: 'y' })).map((d) => d._id)).toEqual(['none0']);
      expect(await tagged.find({ tag: 'x' })).toEqual([]);
      expect(await tagged.count({ group: 'g' })).toBe(4);
    });

    it('inserts many in one call, refusing a duplicate with DuplicateKeyError', async () => {
      const many = Array.from({ length: 5 }, (_, n) => ({ _id: `m${n}`, group: 'many', n }));
      expect(await items.insertMany!(many)).toHaveLength(5);
      expect(await items.count({ group: 'many' })).toBe(5);
      expect(await items.insertMany!([])).toEqual([]);
      await expect(
        items.insertMany!([
          { _id: 'fresh', group: 'many', n: 10 },
          { _id: 'm2', group: 'many', n: 11 },
        ]),
      ).rejects.toBeInstanceOf(DuplicateKeyError);
      expect((await items.findOne({ _id: 'm2' }))?.n).toBe(2);
    });

    it('updates with $set, $inc, $unset, $push, $pull, $addToSet, $max and $min', async () => {
      await items.insertOne({ _id: 'a', group: 'g', n: 1, tags: ['x'], nested: { a: 1, b: 'keep' } });
      const r = await items.updateOne({ _id: 'a' }, { $set: { 'nested.a': 2 }, $inc: { n: 5 } });
      expect(r).toMatchObject({ matched: 1 });
      await items.updateOne({ _id: 'a' }, { $push: { tags: 'y' }, $unset: { 'nested.b': true } });
      await items.updateOne({ _id: 'a' }, { $addToSet: { tags: 'x' } });
      await items.updateOne({ _id: 'a' }, { $pull: { tags: 'x' } });
      await items.updateOne({ _id: 'a' }, { $max: { n: 3 } });
      await items.updateOne({ _id: 'a' }, { $min: { 'nested.a': 0 } });
      const doc = await items.findOne({ _id: 'a' });
      expect(doc).toMatchObject({ n: 6, tags: ['y'], nested: { a: 0 } });
      expect(doc?.nested?.b).toBeUndefined();
      expect(await items.updateOne({ _id: 'none' }, { $set: { n: 1 } })).toMatchObject({ matched: 0 });
    });

    it('refuses a filter holding undefined, on which the engines would disagree (nothing, or every document without it)', async () => {
      await items.insertOne({ _id: 'a', group: 'g1', n: 1 });
      await items.insertOne({ _id: 'b', group: 'g2', n: 2 });
      for (const filter of [
        { group: undefined },
        { group: { $in: ['g1', undefined] } },
        { $or: [{ n: undefined }] },
      ]) {
        await expect(items.find(filter)).rejects.toThrow(/^undefined in a store filter at /);
        await expect(items.deleteMany(filter)).rejects.toThrow(/undefined in a store filter/);
        await expect(items.updateOne(filter, { $set: { n: 9 } })).rejects.toThrow(
          /undefined in a store filter/,
        );
      }
      expect((await items.find({})).map((d) => [d._id, d.n]).sort()).toEqual([
        ['a', 1],
        ['b', 2],
      ]);
    });

    it('refuses to make a field inside a value that is not an object, keeping the document as it was', async () => {
      // NeDB skipped such a path and answered success: an acknowledged update that stored nothing
      await items.insertOne({ _id: 'a', group: 'g', n: 1, tags: ['x'], nested: { a: 1, b: 'text' } });
      await expect(items.updateOne({ _id: 'a' }, { $set: { 'n.deeper': 2 } })).rejects.toThrow();
      await expect(items.findOneAndUpdate({ _id: 'a' }, { $inc: { 'nested.b.count': 1 } })).rejects.toThrow();
      await expect(items.updateOne({ _id: 'a' }, { $set: { 'tags.first': 'y' } })).rejects.toThrow();
      await expect(items.updateMany({ group: 'g' }, { $set: { 'n.deeper': 2 } })).rejects.toThrow();
      expect(await items.findOne({ _id: 'a' })).toEqual({
        _id: 'a',
        group: 'g',
        n: 1,
        tags: ['x'],
        nested: { a: 1, b: 'text' },
      });
      // an index into an array, a missing step and a removal through a value are no such fields
      await items.updateOne(
        { _id: 'a' },
        { $set: { 'tags.0': 'y', 'fresh.deeper': 1 }, $unset: { 'n.deeper': '' } },
      );
      expect(await items.findOne({ _id: 'a' })).toMatchObject({ tags: ['y'], fresh: { deeper: 1 }, n: 1 });
    });

    it('writes fields named like members every object inherits (constructor, toString) as any other', async () => {
      // e.g. a quota override for the role `constructor` or the user id `toString`
      const docs = store.collection<{ _id: string; [field: string]: unknown }>(`inherited_${suffix}`, []);
      const touched = () => [
        Object,
        Object.prototype.toString,
        Object.prototype.hasOwnProperty,
        Object.prototype.valueOf,
      ];
      const before = touched().map((f) => Object.keys(f).length);
      await docs.insertOne({ _id: 'a', quotas: { toString: { rpm: 1 } } });
      await docs.updateOne(
        { _id: 'a' },
        {
          $set: { 'quotas.constructor.rpm': 3, 'quotas.toString.tpm': 2 },
          $inc: { 'counts.hasOwnProperty': 2 },
          $max: { 'peaks.valueOf': 5 },
          $unset: { 'quotas.valueOf.rpm': '' },
        },
      );
      await docs.updateOne({ _id: 'b' }, { $set: { 'quotas.constructor.rpm': 4 } }, { upsert: true });
      await docs.updateMany({}, { $inc: { 'counts.toString': 1 } });
      expect(await docs.findOne({ _id: 'a' })).toEqual({
        _id: 'a',
        quotas: { toString: { rpm: 1, tpm: 2 }, constructor: { rpm: 3 } },
        counts: { hasOwnProperty: 2, toString: 1 },
        peaks: { valueOf: 5 },
      });
      expect(await docs.findOne({ _id: 'b' })).toEqual({
        _id: 'b',
        quotas: { constructor: { rpm: 4 } },
        counts: { toString: 1 },
      });
      await docs.updateOne({ _id: 'b' }, { $unset: { 'quotas.constructor': '' } });
      expect(await docs.findOne({ _id: 'b' })).toEqual({ _id: 'b', quotas: {}, counts: { toString: 1 } });
      // and nothing landed on the built-ins those names would have reached
      expect(touched().map((f) => Object.keys(f).length)).toEqual(before);
    });

    it('finds by paths through inherited names only the documents holding those fields', async () => {
      const docs = store.collection<{ _id: string; [field: string]: unknown }>(`inherited_q_${suffix}`, []);
      await docs.insertOne({ _id: 'own', quotas: { toString: { rpm: 1 } } });
      await docs.insertOne({ _id: 'none', quotas: { rpm: 2 } });
      const ids = async (filter: Record<string, unknown>) =>
        (await docs.find(filter, { sort: { _id: 1 } })).map((d) => d._id);
      expect(await ids({ 'quotas.toString': { $exists: true } })).toEqual(['own']);
      expect(await ids({ constructor: { $exists: true } })).toEqual([]);
      expect(await ids({ 'quotas.constructor': { $exists: false } })).toEqual(['none', 'own']);
      expect(await ids({ 'quotas.constructor': { $ne: 5 } })).toEqual(['none', 'own']);
      expect(await ids({ $or: [{ 'quotas.valueOf': { $exists: true } }, { _id: 'own' }] })).toEqual(['own']);
      expect(await docs.count({ 'quotas.toString.rpm': 1 })).toBe(1);
      // the same through updates and deletes, which match as finds do
      expect(
        await docs.updateOne({ 'quotas.hasOwnProperty': { $exists: true } }, { $set: { x: 1 } }),
      ).toEqual({
        matched: 0,
        modified: 0,
      });
      expect(await docs.deleteMany({ 'quotas.constructor': { $exists: true } })).toBe(0);
    });

    it('upserts: inserts from the filter and $setOnInsert once, then only updates', async () => {
      const first = await items.findOneAndUpdate(
        { _id: 'k', group: 'g' },
        { $inc: { n: 1 }, $setOnInsert: { tags: ['new'] } },
        { upsert: true },
      );
      expect(first).toMatchObject({ _id: 'k', group: 'g', n: 1, tags: ['new'] });
      const second = await items.findOneAndUpdate(
        { _id: 'k', group: 'g' },
        { $inc: { n: 1 }, $setOnInsert: { tags: ['again'] } },
        { upsert: true },
      );
      expect(second).toMatchObject({ n: 2, tags: ['new'] });
      const r = await items.updateOne({ _id: 'z', group: 'g2' }, { $set: { n: 7 } }, { upsert: true });
      expect(r.upsertedId).toBe('z');
    });

    // llm-quota's fenced counters and batch markers rely on this: a late writer's upsert must not write a copy
    it('refuses with DuplicateKeyError, changing nothing, an upsert whose conditions miss an existing _id', async () => {
      await items.insertOne({ _id: 'fenced', group: 'g', n: 5 });
      await expect(
        items.updateOne(
          { _id: 'fenced', $or: [{ n: { $exists: false } }, { n: { $lt: 5 } }] },
          { $inc: { n: 1 }, $set: { group: 'late' } },
          { upsert: true },
        ),
      ).rejects.toBeInstanceOf(DuplicateKeyError);
      expect(await items.findOne({ _id: 'fenced' })).toMatchObject({ group: 'g', n: 5 });
    });

    it('applies concurrent increments exactly once each', async () => {
      await Promise.all(
        Array.from({ length: 50 }, () =>
          items.updateOne({ _id: 'counter', group: 'c' }, { $inc: { n: 1 } }, { upsert: true }),
        ),
      );
      expect((await items.findOne({ _id: 'counter' }))?.n).toBe(50);
    });

    it('compare-and-set lets exactly one of many racers win', async () => {
      await items.insertOne({ _id: 'lock', group: 'l', n: 0 });
      const results = await Promise.all(
        Array.from({ length: 10 }, () => items.findOneAndUpdate({ _id: 'lock', n: 0 }, { $set: { n: 1 } })),
      );
      expect(results.filter(Boolean)).toHaveLength(1);
    });

    it('read-modify-writes with a revision: none of many concurrent changes is lost', async () => {
      await items.insertOne({ _id: 'rmw', group: 'r', n: 0, tags: [] });
      // each change rewrites the whole array from what it read: unguarded, the last writer would win
      const results = await Promise.all(
        Array.from({ length: 30 }, (_, i) =>
          updateWithRevision(items, { _id: 'rmw' }, (current) => ({
            $set: { tags: [...(current.tags ?? []), `t${i}`] },
            $inc: { n: 1 },
          })),
        ),
      );
      const stored = await items.findOne({ _id: 'rmw' });
      expect(stored?.tags).toHaveLength(30);
      expect(stored?.n).toBe(30);
      expect(new Set(results.map((r) => r?.after.tags?.length)).size).toBe(30);
      expect(results[0]?.before.tags).toEqual(expect.any(Array));
    });

    it('read-modify-writes with a revision: nothing matched, nothing to write, a document replaced meanwhile', async () => {
      expect(await updateWithRevision(items, { _id: 'none' }, () => ({ $set: { n: 1 } }))).toBeNull();
      await items.insertOne({ _id: 'same', group: 's', n: 1 });
      const unchanged = await updateWithRevision(items, { _id: 'same' }, () => null);
      expect(unchanged?.after).toEqual(unchanged?.before);
      // deleted and inserted again between the read and the write: the change is computed again from the new one
      let calls = 0;
      const replaced = await updateWithRevision(items, { _id: 'same' }, async (current) => {
        if (calls++ === 0) {
          await items.deleteOne({ _id: 'same' });
          await items.insertOne({ _id: 'same', group: 's', n: 10 });
        }
        return { $set: { n: current.n + 1 } };
      });
      expect(calls).toBe(2);
      expect(replaced?.after.n).toBe(11);
      // deleted between the read and the write: nothing is written, nothing is made again
      const gone = await updateWithRevision(items, { _id: 'same' }, async () => {
        await items.deleteOne({ _id: 'same' });
        return { $set: { n: 0 } };
      });
      expect(gone).toBeNull();
      expect(await items.findOne({ _id: 'same' })).toBeNull();
    });

    it('read-modify-writes with a revision: 409 ConcurrentUpdate when other writers keep winning', async () => {
      await items.insertOne({ _id: 'busy', group: 'b', n: 0 });
      const losing = updateWithRevision(
        items,
        { _id: 'busy' },
        async () => {
          await updateWithRevision(items, { _id: 'busy' }, () => ({ $inc: { n: 1 } }));
          return { $set: { n: -1 } };
        },
        { attempts: 3 },
      );
      await expect(losing).rejects.toMatchObject({ kind: 'conflict', error: 'ConcurrentUpdate' });
      expect((await items.findOne({ _id: 'busy' }))?.n).toBe(3);
    });

    it('deletes as read: only the version read, a version written meanwhile checked again, none when gone', async () => {
      await items.insertOne({ _id: 'del', group: 'd', n: 1 });
      const read = (await items.findOne({ _id: 'del' }))!;
      await updateWithRevision(items, { _id: 'del' }, () => ({ $set: { n: 2 } }));
      // the version read is gone: the one written meanwhile is checked, then deleted (and answered)
      const checked: number[] = [];
      const deleted = await deleteAsRead(items, { _id: 'del' }, read, async (doc) => {
        checked.push(doc.n);
      });
      expect(checked).toEqual([2]);
      expect(deleted?.n).toBe(2);
      expect(await items.findOne({ _id: 'del' })).toBeNull();
      expect(await deleteAsRead(items, { _id: 'del' }, read)).toBeNull();
      // a check that refuses the version written meanwhile leaves it stored
      await items.insertOne({ _id: 'kept', group: 'k', n: 1 });
      const first = (await items.findOne({ _id: 'kept' }))!;
      await updateWithRevision(items, { _id: 'kept' }, () => ({ $set: { n: 3 } }));
      const refused = deleteAsRead(items, { _id: 'kept' }, first, async (doc) => {
        if (doc.n === 3) throw new Error('in use');
      });
      await expect(refused).rejects.toThrow('in use');
      expect((await items.findOne({ _id: 'kept' }))?.n).toBe(3);
    });

    it('deletes as read: 409 ConcurrentUpdate when other writers keep winning', async () => {
      await items.insertOne({ _id: 'busy-del', group: 'bd', n: 0 });
      const read = (await items.findOne({ _id: 'busy-del' }))!;
      const bump = () => updateWithRevision(items, { _id: 'busy-del' }, () => ({ $inc: { n: 1 } }));
      await bump();
      const losing = deleteAsRead(items, { _id: 'busy-del' }, read, async () => void (await bump()), {
        attempts: 3,
      });
      await expect(losing).rejects.toMatchObject({ kind: 'conflict', error: 'ConcurrentUpdate' });
      expect((await items.findOne({ _id: 'busy-del' }))?.n).toBe(4);
    });

    it('updates and deletes many, and deletes one', async () => {
      for (let n = 0; n < 5; n++) await items.insertOne({ _id: `m${n}`, group: n < 3 ? 'a' : 'b', n });
      expect((await items.updateMany({ group: 'a' }, { $set: { tags: ['t'] } })).matched).toBe(3);
      expect(await items.count({ tags: 't' })).toBe(3);
      expect(await items.deleteOne({ group: 'b' })).toBe(1);
      expect(await items.deleteMany({ group: 'a' })).toBe(3);
      expect(await items.count({})).toBe(1);
    });

    it('round-trips dates as dates', async () => {
      const at = new Date('2026-01-02T03:04:05.678Z');
      await items.insertOne({ _id: 'd', group: 'g', n: 1, at });
      const doc = await items.findOne({ at: { $lt: new Date('2027-01-01T00:00:00Z') } });
      expect(doc?.at).toBeInstanceOf(Date);
      expect(doc?.at?.toISOString()).toBe(at.toISOString());
    });

    it('returns copies: mutating a result never changes what is stored', async () => {
      await items.insertOne({ _id: 'a', group: 'g', n: 1, tags: ['x'] });
      const doc = await items.findOne({ _id: 'a' });
      doc!.tags!.push('mutated');
      expect((await items.findOne({ _id: 'a' }))?.tags).toEqual(['x']);
    });

    it('answers ping while open', async () => {
      await expect(store.ping()).resolves.toBeUndefined();
    });

    it('stores, replaces and deletes blobs, whole', async () => {
      const blobs = store.blobs(`bucket_${suffix}`);
      const large = randomBytes(1_200_000); // more than one piece where an engine stores pieces
      expect(await blobs.get('model:en:1')).toBeNull();
      await blobs.put('model:en:1', large);
      await blobs.put('empty', new Uint8Array(0));
      expect((await blobs.get('model:en:1'))!.equals(large)).toBe(true);
      expect((await blobs.get('empty'))!.length).toBe(0);
      // a view into a larger buffer stores only its own bytes
      await blobs.put('model:en:1', large.subarray(10, 20));
      expect((await blobs.get('model:en:1'))!.equals(large.subarray(10, 20))).toBe(true);
      await blobs.delete('model:en:1');
      await blobs.delete('never-stored');
      expect(await blobs.get('model:en:1')).toBeNull();
      expect((await blobs.get('empty'))!.length).toBe(0);
      // another bucket holds its own blobs
      expect(await store.blobs(`other_${suffix}`).get('empty')).toBeNull();
    });

    it('keeps a blob whole when writes of it race: a reader gets one of them', async () => {
      const blobs = store.blobs(`bucket_${suffix}`);
      const versions = [randomBytes(900_000), randomBytes(500_000), randomBytes(700_000)];
      await Promise.all(versions.map((bytes) => blobs.put('raced', bytes)));
      const stored = (await blobs.get('raced'))!;
      expect(versions.some((bytes) => bytes.equals(stored))).toBe(true);
    });

    it('lists the blobs of a bucket with when each was written', async () => {
      const blobs = store.blobs(`listed_${suffix}`);
      expect(await blobs.list()).toEqual([]);
      const before = Date.now() - 1000;
      await blobs.put('a:1', randomBytes(1_000_000));
      await blobs.put('b', new Uint8Array(3));
      await blobs.put('a:1', new Uint8Array(5)); // replaced: still one blob
      const listed = (await blobs.list()).sort((x, y) => x.id.localeCompare(y.id));
      expect(listed.map((b) => b.id)).toEqual(['a:1', 'b']);
      for (const blob of listed) {
        expect(blob.writtenAt.getTime()).toBeGreaterThanOrEqual(before);
        expect(blob.writtenAt.getTime()).toBeLessThanOrEqual(Date.now() + 1000);
      }
      await blobs.delete('a:1');
      expect((await blobs.list()).map((b) => b.id)).toEqual(['b']);
      expect(await store.blobs(`unused_${suffix}`).list()).toEqual([]);
    });

    it('refuses blob ids that could name another place', async () => {
      const blobs = store.blobs(`bucket_${suffix}`);
      for (const id of ['', '../escape', 'a/b', '.hidden', 'a.partial', 'x'.repeat(201)])
        await expect(blobs.put(id, new Uint8Array(1))).rejects.toThrow(/Invalid blob id/);
      expect(() => store.blobs('../up')).toThrow(/Invalid blob bucket name/);
    });
  });
}
