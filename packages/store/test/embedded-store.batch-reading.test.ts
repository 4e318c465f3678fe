import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { tempDir } from '@platform/testkit';
import Datastore from '@seald-io/nedb';
import { CorruptFileError, createEmbeddedStore } from '../src';

type Item = { _id: string; n: number };

/** What a load makes of a file: the file its rewrite leaves, or the count of unreadable lines it refuses. */
type Outcome = { rewritten: string[] } | { unreadable: number; lines: number };

/** The lines of `file`, blank ones left out. */
const linesOf = (file: string) => readFileSync(file, 'utf8').split('\n').filter(Boolean);

/** NeDB's own load of a file holding `content` (its reader, which the store replaced), every line required readable. */
async function loadedByNedb(content: string): Promise<Outcome> {
  const data = tempDir('store-reading-nedb-');
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

/** A store opened on a new folder whose items.db holds `content`; `told` gathers what it reports in the background. */
function storeOnFile(prefix: string, content: string) {
  const data = tempDir(prefix);
  const file = path.join(data.dir, 'items.db');
  writeFileSync(file, content, { mode: 0o600 });
  const told: unknown[] = [];
  const store = createEmbeddedStore({
    dataDir: data.dir,
    compactionIntervalMs: 0,
    onBackgroundError: (err) => told.push(err),
  });
  return { data, file, store, told };
}

/** The store's load of a file holding `content`. */
async function loadedByStore(content: string): Promise<Outcome> {
  const { data, file, store, told } = storeOnFile('store-reading-store-', content);
  try {
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
    const { data, store, told } = storeOnFile(
      'store-reading-bad-batch-',
      '{"_id":"a","n":1}\n$$batch:[{"_id":"a","n":2},null]\n$$batch:"ab"\n$$batch:[{"_id":"b","n":3},{"_id":"c","n":4}]\n',
    );
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
