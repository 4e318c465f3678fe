import { readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import fsPromises from 'node:fs/promises';
import path from 'node:path';
import { tempDir } from '@platform/testkit';
import Datastore from '@seald-io/nedb';
import { CorruptFileError, createEmbeddedStore, DuplicateKeyError } from '../src';

type Item = { _id: string; n: number };

/** A disk error as Node reports it. */
const noSpace = () =>
  Object.assign(new Error('ENOSPC: no space left on device, write'), {
    code: 'ENOSPC',
    errno: -28,
    syscall: 'write',
  });

/** What a load makes of a file: the file its rewrite leaves, or the count of unreadable lines it refuses. */
type Outcome = { rewritten: string[] } | { unreadable: number; lines: number };

/** The lines of `file`, blank ones left out. */
const linesOf = (file: string) => readFileSync(file, 'utf8').split('\n').filter(Boolean);

/** NeDB's own load of a file holding `content` (its reader, which the store replaced), every line required readable. */
async function loadedByNedb(content: string): Promise<Outcome> {
  const data = tempDir('store-review-nedb-');
  const file = path.join(data.dir, 'items.db');
  try {
    writeFileSync(file, content);
    const ds = new Datastore({ filename: file, corruptAlertThreshold: 0 });
    try {
      await ds.loadDatabaseAsync();
    } catch (err) {
      const { corruptItems, dataLength } = err as { corruptItems?: number; dataLength?: number };
      if (corruptItems === undefined) throw err;
      return { unreadable: corruptItems, lines: dataLength! };
    }
    return { rewritten: linesOf(file) };
  } finally {
    data.remove();
  }
}

/** The store's load of a file holding `content`. */
async function loadedByStore(content: string): Promise<Outcome> {
  const data = tempDir('store-review-store-');
  const file = path.join(data.dir, 'items.db');
  try {
    writeFileSync(file, content, { mode: 0o600 });
    const told: unknown[] = [];
    const store = createEmbeddedStore({
      dataDir: data.dir,
      compactionIntervalMs: 0,
      onBackgroundError: (err) => told.push(err),
    });
    try {
      await store.collection('items').count({});
    } finally {
      await store.close();
    }
    const corrupt = told.find((err) => err instanceof CorruptFileError);
    if (corrupt) {
      // the file as it was is kept beside the one the load rewrote
      expect(readFileSync(corrupt.keptIn, 'utf8')).toBe(content);
      return { unreadable: corrupt.unreadable, lines: corrupt.lines };
    }
    expect(told).toEqual([]);
    return { rewritten: linesOf(file) };
  } finally {
    data.remove();
  }
}

/** Loads `content` with the store and with NeDB's own reader, and expects the same outcome. */
async function loadsAsNedbDid(content: string): Promise<Outcome> {
  const nedb = await loadedByNedb(content);
  expect(await loadedByStore(content)).toEqual(nedb);
  return nedb;
}

describe("embedded store's reader, against NeDB's loader it replaced", () => {
  it('reads index lines, dates, deletions of documents never inserted and JSON that is not a document as NeDB did', async () => {
    const outcome = await loadsAsNedbDid(
      [
        '{"$$indexCreated":{"fieldName":"a","unique":true,"sparse":false}}',
        '{"$$indexCreated":{"fieldName":"b","unique":false,"sparse":true,"expireAfterSeconds":60}}',
        '{"$$indexCreated":{"fieldName":"c","unique":false,"sparse":false}}',
        '{"$$indexRemoved":"c"}',
        '{"_id":"d","a":1,"at":{"$$date":1700000000000},"nested":{"when":{"$$date":1}}}',
        '{"$$deleted":true,"_id":"never"}',
        '5',
        '"text"',
        'true',
        '[{"_id":"in-an-array"}]',
        '{"_id":"e","a":2}',
        '',
      ].join('\n'),
    );
    expect(outcome).toEqual({
      rewritten: [
        '{"_id":"d","a":1,"at":{"$$date":1700000000000},"nested":{"when":{"$$date":1}}}',
        '{"_id":"e","a":2}',
        '{"$$indexCreated":{"fieldName":"a","unique":true,"sparse":false}}',
        '{"$$indexCreated":{"fieldName":"b","unique":false,"sparse":true}}',
      ],
    });
  });

  it('reads an empty file, and counts unreadable lines (null, a byte order mark) as NeDB did', async () => {
    expect(await loadsAsNedbDid('')).toEqual({ rewritten: [] });
    expect(await loadsAsNedbDid('{"_id":"a"}\nnull\n{"_id":"b"}\n{"_id":\n')).toEqual({
      unreadable: 2,
      lines: 4,
    });
    // a byte order mark makes the first line unreadable, to NeDB as to the store
    expect(await loadsAsNedbDid('\uFEFF{"_id":"a"}\n{"_id":"b"}\n')).toEqual({ unreadable: 1, lines: 2 });
  });

  it('reads a file written with CRLF line ends, blank lines included, as NeDB did', async () => {
    // by hand, or on another system: NeDB ended lines at \r\n, and passed over the blank ones
    const outcome = await loadsAsNedbDid('{"_id":"a","n":1}\r\n\r\n{"_id":"b"}\r\n');
    expect(outcome).toEqual({ rewritten: ['{"_id":"a","n":1}', '{"_id":"b"}'] });
    expect(await loadedByStore('{"_id":"a","n":1}\r\n\r\n$$batch:[{"_id":"b"},{"_id":"c"}]\r\n')).toEqual({
      rewritten: ['{"_id":"a","n":1}', '{"_id":"b"}', '{"_id":"c"}'],
    });
  });

  it('reads very long lines, and characters cut by the chunks the file is read in, as NeDB did', async () => {
    // 3- and 4-byte characters across the 64 KiB chunks of the read; a line of several megabytes
    const wide = '€😀'.repeat(60_000);
    const long = 'x'.repeat(5_000_000);
    const outcome = await loadsAsNedbDid(
      `{"_id":"a","text":"${wide}"}\n{"_id":"b","text":"${long}"}\n{"_id":"c","text":"z${wide}"}\n`,
    );
    expect(outcome).toEqual({
      rewritten: [
        `{"_id":"a","text":"${wide}"}`,
        `{"_id":"b","text":"${long}"}`,
        `{"_id":"c","text":"z${wide}"}`,
      ],
    });
  });
});

describe("embedded store's batch lines", () => {
  it('applies the entries of a batch in order, one _id several times, at the load and in its rewrite', async () => {
    expect(
      await loadedByStore(
        [
          '{"_id":"a","n":0}',
          '$$batch:[{"_id":"b","n":1},{"_id":"b","n":2},{"$$deleted":true,"_id":"a"},{"_id":"a","n":3}]',
          '$$batch:[{"_id":"c","n":4},{"$$deleted":true,"_id":"c"}]',
          '',
        ].join('\n'),
      ),
    ).toEqual({ rewritten: ['{"_id":"a","n":3}', '{"_id":"b","n":2}'] });
  });

  it('applies none of a batch holding something other than documents, and counts it unreadable', async () => {
    // a batch is whole or not at all: one entry that is no document (a hand edit, a disk error) makes all unreadable
    const data = tempDir('store-review-bad-batch-');
    const file = path.join(data.dir, 'items.db');
    writeFileSync(
      file,
      '{"_id":"a","n":1}\n$$batch:[{"_id":"a","n":2},null]\n$$batch:"ab"\n$$batch:[{"_id":"b","n":3},{"_id":"c","n":4}]\n',
      { mode: 0o600 },
    );
    const told: unknown[] = [];
    const store = createEmbeddedStore({
      dataDir: data.dir,
      compactionIntervalMs: 0,
      onBackgroundError: (err) => told.push(err),
    });
    try {
      expect(await store.collection<Item>('items').find({}, { sort: { _id: 1 } })).toEqual([
        { _id: 'a', n: 1 },
        { _id: 'b', n: 3 },
        { _id: 'c', n: 4 },
      ]);
      expect(told).toEqual([expect.objectContaining({ name: 'CorruptFileError', unreadable: 2, lines: 4 })]);
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
    const docs = store.collection<Item>('docs');
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
      const docs = store.collection<Item>('docs', [{ fields: { n: 1 }, unique: true }]);
      return { found: await docs.find({}, { sort: { n: 1 } }), told };
    } finally {
      await store.close();
    }
  }

  it('cuts the torn record before the next write, which is read back after a restart', async () => {
    const { data, store, docs } = await afterRefusedBatch('store-review-torn-write-');
    try {
      await docs.insertOne({ _id: 'next', n: 3 });
      await store.close();
      expect(await reopened(data.dir)).toEqual({
        found: [
          { _id: 'a', n: 1 },
          { _id: 'b', n: 2 },
          { _id: 'next', n: 3 },
        ],
        told: [],
      });
    } finally {
      await store.close();
      data.remove();
    }
  });

  it('cuts the torn record before the line of an index declared meanwhile, which made one unreadable line of both', async () => {
    const { data, file, store, docs, told } = await afterRefusedBatch('store-review-torn-index-');
    try {
      // a service asks for the collection with a new unique index before the refused write is reloaded: its line was
      // appended to the torn record, and the reload then found the file corrupt (told, and a copy of it kept)
      store.collection<Item>('docs', [{ fields: { n: 1 }, unique: true }]);
      await docs.insertOne({ _id: 'next', n: 3 });
      await expect(docs.insertOne({ _id: 'twin', n: 3 })).rejects.toBeInstanceOf(DuplicateKeyError);
      await store.close();
      expect(told).toEqual([]);
      expect(readdirSync(data.dir)).toEqual(['docs.db']); // no copy of a file found corrupt
      expect(linesOf(file)).toContain('{"$$indexCreated":{"fieldName":"n","unique":true,"sparse":false}}');
      expect(await reopened(data.dir)).toEqual({
        found: [
          { _id: 'a', n: 1 },
          { _id: 'b', n: 2 },
          { _id: 'next', n: 3 },
        ],
        told: [],
      });
    } finally {
      await store.close();
      data.remove();
    }
  });
});

describe('embedded store: updateMany through an inherited name, now one write', () => {
  it('answers the count of documents it changed, and appends nothing when none match', async () => {
    const data = tempDir('store-review-update-each-');
    const file = path.join(data.dir, 'docs.db');
    const store = createEmbeddedStore({ dataDir: data.dir, compactionIntervalMs: 0 });
    try {
      const docs = store.collection<Item & { counts?: Record<string, number> }>('docs');
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
    const data = tempDir('store-review-update-each-unique-');
    const store = createEmbeddedStore({ dataDir: data.dir, compactionIntervalMs: 0 });
    try {
      const docs = store.collection<Item & { owner?: Record<string, string> }>('docs', [
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
