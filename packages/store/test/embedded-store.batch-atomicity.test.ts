import { spawn } from 'node:child_process';
import { readdirSync, readFileSync, statSync, truncateSync, writeFileSync } from 'node:fs';
import fsPromises from 'node:fs/promises';
import path from 'node:path';
import { tempDir, waitFor } from '@platform/testkit';
import { type Collection, createEmbeddedStore, DuplicateKeyError } from '../src';

interface Item {
  _id: string;
  group: string;
  n: number;
  pad: string;
}

const items = (count: number, group: string): Item[] =>
  Array.from({ length: count }, (_, i) => ({
    _id: `${group}-${String(i).padStart(3, '0')}`,
    group,
    n: i,
    pad: 'x'.repeat(200),
  }));

/** each document as `<_id> <n>` and whether it holds `counts`: a failure's diff stays short */
const summary = (docs: Array<Item & { counts?: unknown }>): string[] =>
  docs.map((d) => `${d._id} ${d.n}${d.counts === undefined ? '' : ' counts'}`);

/** a document of the tests of a batch the disk refused, and of updateMany through an inherited name */
type Numbered = { _id: string; n: number };

/** A disk error as Node reports it. */
const noSpace = () =>
  Object.assign(new Error('ENOSPC: no space left on device, write'), {
    code: 'ENOSPC',
    errno: -28,
    syscall: 'write',
  });

/** The lines of `file`, blank ones left out. */
const linesOf = (file: string) => readFileSync(file, 'utf8').split('\n').filter(Boolean);

/**
 * Runs `batch` on the collection `items` of a store holding `seed`, closes the store, then cuts the file in the middle of
 * the bytes the batch appended, as a process killed (or a machine that lost power) partway through that append leaves
 * it. Answers the documents a store opened on that file reads (`summary`).
 */
async function afterCrashMidBatch(
  seed: Item[],
  batch: (docs: Collection<Item>) => Promise<unknown>,
): Promise<string[]> {
  const data = tempDir('store-batch-crash-');
  const file = path.join(data.dir, 'items.db');
  try {
    let store = createEmbeddedStore({ dataDir: data.dir, compactionIntervalMs: 0 });
    let docs = store.collection<Item>('items');
    await docs.insertMany!(seed);
    await store.close();
    // the load rewrote the file: what follows is appended after it
    store = createEmbeddedStore({ dataDir: data.dir, compactionIntervalMs: 0 });
    docs = store.collection<Item>('items');
    await docs.count({});
    const before = statSync(file).size;
    await batch(docs);
    await store.close();
    const after = statSync(file).size;
    expect(after).toBeGreaterThan(before);
    truncateSync(file, before + Math.floor((after - before) / 2));

    store = createEmbeddedStore({ dataDir: data.dir, compactionIntervalMs: 0 });
    try {
      return summary(await store.collection<Item>('items').find({}, { sort: { _id: 1 } }));
    } finally {
      await store.close();
    }
  } finally {
    data.remove();
  }
}

/**
 * Starts `fixtures/batch-until-killed.ts` and kills it (SIGKILL) once the first megabyte of its 10 MB batch is in the
 * file and the rest never will be. Answers how many of the batch's documents a store opened after it reads.
 */
async function killMidBatch(): Promise<number> {
  const data = tempDir('store-batch-kill9-');
  const file = path.join(data.dir, 'docs.db');
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', path.join(__dirname, 'fixtures/batch-until-killed.ts'), data.dir],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  const exited = new Promise((resolve) => child.once('exit', resolve));
  let out = '';
  child.stdout.on('data', (chunk: Buffer) => {
    out += chunk.toString();
  });
  try {
    await waitFor(() => /^torn \d+\n/m.test(out), { timeoutMs: 20_000, what: 'the batch torn' });
    child.kill('SIGKILL');
    await exited;
    const before = Number(/^writing (\d+)/.exec(out)![1]);
    const torn = Number(/^torn (\d+)/m.exec(out)![1]);
    expect(torn).toBeGreaterThan(before);
    expect(statSync(file).size).toBe(torn);
    const store = createEmbeddedStore({ dataDir: data.dir });
    try {
      const ids = (await store.collection<{ _id: string }>('docs').find({})).map((d) => d._id);
      expect(ids).toContain('acked');
      return ids.length - 1;
    } finally {
      await store.close();
    }
  } finally {
    child.kill('SIGKILL');
    await exited;
    data.remove();
  }
}

describe('embedded store: a batch of writes is kept whole or not at all across a crash', () => {
  it('keeps none of an insertMany whose append a crash cut in the middle (it kept the first half)', async () => {
    const seed = items(3, 'old');
    const found = await afterCrashMidBatch(seed, (docs) => docs.insertMany!(items(100, 'new')));
    expect(found).toEqual(summary(seed));
  });

  it('keeps none of an insertMany whose process was killed (SIGKILL) while appending it', async () => {
    expect(await killMidBatch()).toBe(0);
  });

  it('keeps none of an updateMany whose append a crash cut in the middle', async () => {
    const seed = items(100, 'g');
    const found = await afterCrashMidBatch(seed, (docs) =>
      docs.updateMany({ group: 'g' }, { $inc: { n: 1000 } }),
    );
    expect(found).toEqual(summary(seed));
  });

  it('keeps none of an updateMany through an inherited name (one write per document before) cut in the middle', async () => {
    const seed = items(100, 'g');
    const found = await afterCrashMidBatch(seed, (docs) =>
      docs.updateMany({ group: 'g' }, { $set: { 'counts.constructor': 1 } }),
    );
    expect(found).toEqual(summary(seed));
  });

  it('keeps every document a deleteMany cut in the middle would have removed', async () => {
    const seed = items(100, 'g');
    const found = await afterCrashMidBatch(seed, (docs) => docs.deleteMany({ group: 'g' }));
    expect(found).toEqual(summary(seed));
  });

  it('changes none of the documents of an updateMany through an inherited name that one of them refuses', async () => {
    const data = tempDir('store-batch-refused-');
    try {
      let store = createEmbeddedStore({ dataDir: data.dir, compactionIntervalMs: 0 });
      let docs = store.collection<{ _id: string; counts?: unknown }>('docs');
      // `b`'s counts is a number: no field can be made inside it
      await docs.insertMany!([{ _id: 'a' }, { _id: 'b', counts: 5 }, { _id: 'c' }]);
      await expect(docs.updateMany({}, { $set: { 'counts.constructor': 1 } })).rejects.toThrow(
        /Cannot create the field constructor/,
      );
      const expected = [{ _id: 'a' }, { _id: 'b', counts: 5 }, { _id: 'c' }];
      expect(await docs.find({}, { sort: { _id: 1 } })).toEqual(expected);
      await store.close();
      store = createEmbeddedStore({ dataDir: data.dir, compactionIntervalMs: 0 });
      docs = store.collection<{ _id: string; counts?: unknown }>('docs');
      expect(await docs.find({}, { sort: { _id: 1 } })).toEqual(expected);
      await store.close();
    } finally {
      data.remove();
    }
  });

  /** Writes a batch of each kind; answers what the collection holds then (75 documents). */
  const writeBatches = async (docs: Collection<Item>) => {
    await docs.insertMany!(items(50, 'a'));
    await docs.insertMany!(items(50, 'b'));
    await docs.updateMany({ group: 'a' }, { $inc: { n: 1000 }, $set: { at: new Date(1_700_000_000_000) } });
    await docs.updateMany({ group: 'b' }, { $set: { 'counts.toString': 1 } });
    await docs.deleteMany({ group: 'a', n: { $gte: 1025 } });
    return docs.find({}, { sort: { _id: 1 } });
  };
  /** the lines of a file that hold a write of several documents */
  const batchLines = (file: string) =>
    readFileSync(file, 'utf8')
      .split('\n')
      .filter((line) => line.startsWith('$$batch:'));

  it('reads whole batches back after a restart, and again from the file the load rewrote', async () => {
    const data = tempDir('store-batch-whole-');
    const file = path.join(data.dir, 'items.db');
    const open = () => createEmbeddedStore({ dataDir: data.dir, compactionIntervalMs: 0 });
    try {
      let store = open();
      const expected = await writeBatches(store.collection<Item>('items', [{ fields: { group: 1 } }]));
      expect(expected).toHaveLength(75);
      await store.close();
      expect(batchLines(file)).toHaveLength(5);
      for (let start = 0; start < 2; start++) {
        store = open();
        const docs = store.collection<Item>('items', [{ fields: { group: 1 } }]);
        expect(await docs.find({}, { sort: { _id: 1 } })).toEqual(expected);
        expect(await docs.count({ group: 'b' })).toBe(50);
        await store.close();
      }
      // the load's rewrite is one document a line, the format every version reads
      const lines = linesOf(file);
      expect(lines).toHaveLength(76); // 75 documents and the index on `group`
    } finally {
      data.remove();
    }
  });

  it('compacts a file holding batches into one that loads the same', async () => {
    const data = tempDir('store-batch-compacted-');
    const file = path.join(data.dir, 'items.db');
    try {
      let store = createEmbeddedStore({ dataDir: data.dir, compactionIntervalMs: 50 });
      const expected = await writeBatches(store.collection<Item>('items', [{ fields: { group: 1 } }]));
      await waitFor(() => batchLines(file).length === 0, { timeoutMs: 20_000, what: 'a compaction' });
      await store.close();
      store = createEmbeddedStore({ dataDir: data.dir, compactionIntervalMs: 0 });
      try {
        const docs = store.collection<Item>('items', [{ fields: { group: 1 } }]);
        expect(await docs.find({}, { sort: { _id: 1 } })).toEqual(expected);
      } finally {
        await store.close();
      }
    } finally {
      data.remove();
    }
  });

  it('reads back a document holding a line or paragraph separator (U+2028, U+2029, U+0085), which was lost', async () => {
    const data = tempDir('store-batch-separators-');
    const text = 'one\u2028two\u2029three\u0085four';
    try {
      let store = createEmbeddedStore({ dataDir: data.dir });
      await store.collection<{ _id: string; text: string }>('docs').insertMany!([
        { _id: 'a', text },
        { _id: 'b', text },
      ]);
      await store.collection<{ _id: string; text: string }>('docs').insertOne({ _id: 'c', text });
      await store.close();
      const told: unknown[] = [];
      store = createEmbeddedStore({ dataDir: data.dir, onBackgroundError: (err) => told.push(err) });
      try {
        expect(
          await store.collection<{ _id: string; text: string }>('docs').find({}, { sort: { _id: 1 } }),
        ).toEqual([
          { _id: 'a', text },
          { _id: 'b', text },
          { _id: 'c', text },
        ]);
        expect(told).toEqual([]);
      } finally {
        await store.close();
      }
    } finally {
      data.remove();
    }
  });

  it('loads a file written one document a line (every version so far) as it did', async () => {
    const data = tempDir('store-batch-old-format-');
    // what the store wrote before batches were one line: a batch as several lines, a deletion, an index, a date
    writeFileSync(
      path.join(data.dir, 'items.db'),
      [
        '{"_id":"a","group":"g","n":1,"at":{"$$date":1700000000000}}',
        '{"_id":"b","group":"g","n":2}',
        '{"_id":"c","group":"g","n":3}',
        '{"$$indexCreated":{"fieldName":"group","unique":false,"sparse":false}}',
        '{"_id":"b","group":"g","n":20}',
        '{"_id":"c","group":"g","n":30}',
        '{"$$deleted":true,"_id":"a"}',
        '{"_id":"d","group":"h","n":4}',
        '',
      ].join('\n'),
      { mode: 0o600 },
    );
    const told: unknown[] = [];
    const store = createEmbeddedStore({ dataDir: data.dir, onBackgroundError: (err) => told.push(err) });
    try {
      const docs = store.collection<{ _id: string; group: string; n: number }>('items');
      expect(await docs.find({}, { sort: { _id: 1 } })).toEqual([
        { _id: 'b', group: 'g', n: 20 },
        { _id: 'c', group: 'g', n: 30 },
        { _id: 'd', group: 'h', n: 4 },
      ]);
      expect(await docs.count({ group: 'g' })).toBe(2);
      expect(told).toEqual([]);
    } finally {
      await store.close();
      data.remove();
    }
  });
});

describe('embedded store after a batch the disk refused partway through its append', () => {
  /**
   * A store whose collection `docs` holds a and b, and whose next write, an insertMany of 100 documents, the disk took
   * half of, then refused (ENOSPC). Answers the store, the file and what the store told.
   */
  async function afterRefusedBatch(prefix: string) {
    const data = tempDir(prefix);
    const file = path.join(data.dir, 'docs.db');
    const clock = { ms: 0 };
    const told: unknown[] = [];
    const store = createEmbeddedStore({
      dataDir: data.dir,
      compactionIntervalMs: 0,
      now: () => clock.ms,
      onBackgroundError: (err) => told.push(err),
    });
    const docs = store.collection<Numbered>('docs');
    await docs.insertMany!([
      { _id: 'a', n: 1 },
      { _id: 'b', n: 2 },
    ]);
    const before = statSync(file).size;
    const realAppend = fsPromises.appendFile;
    const full = jest.spyOn(fsPromises, 'appendFile').mockImplementation(async (target, text, options) => {
      await realAppend(target, String(text).slice(0, String(text).length / 2), options);
      throw noSpace();
    });
    const batch = Array.from({ length: 100 }, (_, i) => ({ _id: `batch-${i}`, n: 100 + i }));
    try {
      await expect(docs.insertMany!(batch)).rejects.toMatchObject({ kind: 'unavailable' });
    } finally {
      full.mockRestore();
    }
    // the torn record is in the file: what comes next must not be appended to it
    expect(statSync(file).size).toBeGreaterThan(before);
    clock.ms += 1_000; // past the wait after a refused write
    return { data, file, store, docs, told };
  }

  /** The documents a store started on `dir` reads, and what it was told of. */
  async function reopened(dir: string) {
    const told: unknown[] = [];
    const store = createEmbeddedStore({ dataDir: dir, onBackgroundError: (err) => told.push(err) });
    try {
      const docs = store.collection<Numbered>('docs', [{ fields: { n: 1 }, unique: true }]);
      return { found: await docs.find({}, { sort: { n: 1 } }), told };
    } finally {
      await store.close();
    }
  }

  /** what a store reads after `afterRefusedBatch` and an insertOne of `next`: the batch left no trace */
  const withNext = [
    { _id: 'a', n: 1 },
    { _id: 'b', n: 2 },
    { _id: 'next', n: 3 },
  ];

  it('cuts the torn record before the next write, which is read back after a restart', async () => {
    const { data, store, docs } = await afterRefusedBatch('store-batch-torn-write-');
    try {
      await docs.insertOne({ _id: 'next', n: 3 });
      await store.close();
      expect(await reopened(data.dir)).toEqual({ found: withNext, told: [] });
    } finally {
      await store.close();
      data.remove();
    }
  });

  it('cuts the torn record before the line of an index declared meanwhile, which made one unreadable line of both', async () => {
    const { data, file, store, docs, told } = await afterRefusedBatch('store-batch-torn-index-');
    try {
      // a service asks for the collection with a new unique index before the refused write is reloaded: its line was
      // appended to the torn record, and the reload then found the file corrupt (told, and a copy of it kept)
      store.collection<Numbered>('docs', [{ fields: { n: 1 }, unique: true }]);
      await docs.insertOne({ _id: 'next', n: 3 });
      await expect(docs.insertOne({ _id: 'twin', n: 3 })).rejects.toBeInstanceOf(DuplicateKeyError);
      await store.close();
      expect(told).toEqual([]);
      expect(readdirSync(data.dir)).toEqual(['docs.db']); // no copy of a file found corrupt
      expect(linesOf(file)).toContain('{"$$indexCreated":{"fieldName":"n","unique":true,"sparse":false}}');
      expect(await reopened(data.dir)).toEqual({ found: withNext, told: [] });
    } finally {
      await store.close();
      data.remove();
    }
  });
});

describe('embedded store: updateMany through an inherited name, now one write', () => {
  it('answers the count of documents it changed, and appends nothing when none match', async () => {
    const data = tempDir('store-batch-update-each-');
    const file = path.join(data.dir, 'docs.db');
    const store = createEmbeddedStore({ dataDir: data.dir, compactionIntervalMs: 0 });
    try {
      const docs = store.collection<Numbered & { counts?: Record<string, number> }>('docs');
      await docs.insertMany!([
        { _id: 'a', n: 1 },
        { _id: 'b', n: 1 },
        { _id: 'c', n: 2 },
      ]);
      expect(await docs.updateMany({ n: 1 }, { $set: { 'counts.constructor': 1 } })).toEqual({
        matched: 2,
        modified: 2,
      });
      const size = statSync(file).size;
      expect(await docs.updateMany({ n: 9 }, { $inc: { 'counts.toString': 1 } })).toEqual({
        matched: 0,
        modified: 0,
      });
      expect(statSync(file).size).toBe(size);
      expect(await docs.find({}, { sort: { _id: 1 } })).toEqual([
        { _id: 'a', n: 1, counts: { constructor: 1 } },
        { _id: 'b', n: 1, counts: { constructor: 1 } },
        { _id: 'c', n: 2 },
      ]);
    } finally {
      await store.close();
      data.remove();
    }
  });

  it('refuses as a duplicate key a change two documents cannot both take, and changes neither', async () => {
    const data = tempDir('store-batch-update-each-unique-');
    const store = createEmbeddedStore({ dataDir: data.dir, compactionIntervalMs: 0 });
    try {
      const docs = store.collection<Numbered & { owner?: Record<string, string> }>('docs', [
        { fields: { owner: 1 }, unique: true, sparse: true },
      ]);
      await docs.insertMany!([
        { _id: 'a', n: 1 },
        { _id: 'b', n: 1 },
      ]);
      // the key, `{toString: 'x'}`, failed String() with a TypeError (a 500) in place of the duplicate key
      await expect(docs.updateMany({ n: 1 }, { $set: { 'owner.toString': 'x' } })).rejects.toThrow(
        new DuplicateKeyError('docs', '{"toString":"x"}'),
      );
      expect(await docs.find({}, { sort: { _id: 1 } })).toEqual([
        { _id: 'a', n: 1 },
        { _id: 'b', n: 1 },
      ]);
    } finally {
      await store.close();
      data.remove();
    }
  });
});
