import { createEmbeddedStore } from '../src';

/**
 * Paths MongoDB would refuse or store but NeDB's `obj[part]` walk turns into something else: `__proto__` reaching
 * Object.prototype of the whole process, an array's `length`, a field inside a string.
 */
describe('the embedded store, with update paths NeDB cannot walk as MongoDB does', () => {
  const store = createEmbeddedStore();
  const docs = store.collection<{ _id: string; [field: string]: unknown }>('odd_paths', []);
  afterAll(() => store.close());

  it('refuses a path through __proto__, and no object of the process gets the field', async () => {
    await docs.insertOne({ _id: 'p', quotas: { rpm: 1 } });
    await expect(docs.updateOne({ _id: 'p' }, { $set: { 'quotas.__proto__.polluted': 1 } })).rejects.toThrow(
      /__proto__/,
    );
    await expect(
      docs.updateOne({ _id: 'p2', 'a.__proto__.polluted': 1 }, { $set: { b: 1 } }, { upsert: true }),
    ).rejects.toThrow(/__proto__/);
    await expect(
      docs.updateOne({ _id: 'p3' }, { $setOnInsert: { 'a.__proto__.polluted': 1 } }, { upsert: true }),
    ).rejects.toThrow(/__proto__/);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(await docs.findOne({ _id: 'p' })).toEqual({ _id: 'p', quotas: { rpm: 1 } });
  });

  it('refuses a value holding a field __proto__, which NeDB dropped while giving the stored object its content', async () => {
    // what JSON.parse makes of a body: an own field `__proto__`; NeDB's copy set it as the stored object's
    // prototype, so queries matched fields nobody stored (`x.admin`) until the next start lost them
    const value = () => JSON.parse('{"ok":1,"x":{"__proto__":{"admin":true}}}') as Record<string, unknown>;
    await expect(docs.insertOne({ _id: 'v1', ...value() })).rejects.toThrow(/__proto__/);
    await expect(docs.insertMany!([{ _id: 'v2', list: [value()] }])).rejects.toThrow(/__proto__/);
    await docs.insertOne({ _id: 'v3', ok: 1 });
    await expect(docs.updateOne({ _id: 'v3' }, { $set: { meta: value() } })).rejects.toThrow(/__proto__/);
    await expect(docs.updateOne({ _id: 'v3' }, { $push: { list: value() } })).rejects.toThrow(/__proto__/);
    await expect(
      docs.updateOne({ _id: 'v4' }, { $setOnInsert: { meta: value() } }, { upsert: true }),
    ).rejects.toThrow(/__proto__/);
    await expect(docs.updateMany({}, { $set: { meta: value() } })).rejects.toThrow(/__proto__/);
    expect(await docs.find({ 'meta.x.admin': true })).toEqual([]);
    expect(await docs.find({ 'x.admin': true })).toEqual([]);
    expect(await docs.findOne({ _id: 'v3' })).toEqual({ _id: 'v3', ok: 1 });
    expect(await docs.count({ _id: { $in: ['v1', 'v2', 'v4'] } })).toBe(0);
  });

  it("refuses to set an array's length or a field inside a string, as MongoDB does, and keeps the document", async () => {
    await docs.insertOne({ _id: 'a', tags: ['x', 'y'], name: 'abcd' });
    await expect(docs.updateOne({ _id: 'a' }, { $set: { 'tags.length': 0 } })).rejects.toThrow(/array/);
    await expect(docs.updateOne({ _id: 'a' }, { $set: { 'name.length': 1 } })).rejects.toThrow();
    // removals through them have nothing to remove
    await docs.updateOne({ _id: 'a' }, { $unset: { 'tags.length': '', 'name.toString': '' } });
    expect(await docs.findOne({ _id: 'a' })).toEqual({ _id: 'a', tags: ['x', 'y'], name: 'abcd' });
  });
});
