import * as fs from 'node:fs';
import * as path from 'node:path';
import { tempDir } from '@platform/testkit';
import { IntentClassifier } from './intent-classifier';
import { foldText } from './tokenize';
import { readWinkEmbeddings } from './wink-embeddings';
import { ModelWordVectors, WordVectorTable, wordVectorTable, wordVectorTableFromParts } from './word-vectors';

const f32 = (xs: number[]) => xs.map((x) => Math.fround(x));
const rowOf = (t: WordVectorTable, w: string) => Array.from(t.row(t.rowOf(w)));

describe('readWinkEmbeddings', () => {
  const tmp = tempDir('nlu-vectors-');
  afterAll(() => tmp.remove());

  /** a file in the package's format: header, word list, then "vectors" with [v1..vdim, l2norm, rank] per word */
  function winkFile(entries: Array<[string, number[]]>): string {
    const dim = entries[0]![1].length;
    const vectors = Object.fromEntries(entries.map(([w, v], i) => [w, [...v, 1, i]]));
    const json = JSON.stringify({
      precision: 8,
      l2NormIndex: dim,
      wordIndex: dim + 1,
      size: entries.length,
      dimensions: dim,
      words: entries.map(([w]) => w),
      vectors,
      unkVector: new Array(dim).fill(0),
    });
    const file = path.join(tmp.dir, `v${entries.length}.json`);
    fs.writeFileSync(file, json);
    return file;
  }

  it('reads the vectors in frequency order, folds the words and keeps the first of two that fold alike', () => {
    const file = winkFile([
      ['the', [0.1, -0.25, 3]],
      ['Café', [1.5, 2.25, -0.125]],
      ['cafe', [9, 9, 9]],
      ['"quoted"', [1e-7, -2.5e3, 0]],
      [']', [0.5, 0.5, 0.5]],
      ['rare', [7, 8, 9]],
    ]);
    const t = readWinkEmbeddings(file, 'test/1', 100, foldText);
    expect(t.dim).toBe(3);
    expect(t.size).toBe(5);
    expect(t.source).toBe('test/1');
    expect(t.rowOf('the')).toBe(0);
    expect(rowOf(t, 'the')).toEqual(f32([0.1, -0.25, 3]));
    expect(rowOf(t, 'cafe')).toEqual(f32([1.5, 2.25, -0.125])); // "Café" came first
    expect(rowOf(t, '"quoted"')).toEqual(f32([1e-7, -2.5e3, 0])); // escaped key, exponents
    expect(rowOf(t, ']')).toEqual(f32([0.5, 0.5, 0.5]));
    expect(t.rowOf('rare')).toBe(4);
    expect(t.rowOf('unknown')).toBe(-1);
  });

  it('stops after maxWords words', () => {
    const file = winkFile([
      ['a', [1, 0]],
      ['b', [0, 1]],
      ['c', [1, 1]],
    ]);
    const t = readWinkEmbeddings(file, 'test/2', 2);
    expect(t.size).toBe(2);
    expect(t.rowOf('c')).toBe(-1);
  });

  it('rebuilds a table from its parts', () => {
    const file = winkFile([
      ['x', [1, 2]],
      ['y', [3, 4]],
    ]);
    const parts = readWinkEmbeddings(file, 'test/3', 10).parts();
    expect(parts.words).toEqual(['x', 'y']);
    const t = wordVectorTableFromParts(structuredClone(parts));
    expect(rowOf(t, 'y')).toEqual([3, 4]);
    expect(t.source).toBe('test/3');
  });
});

describe('ModelWordVectors', () => {
  const table = wordVectorTable('test/4', 2, [
    ['the', [0.1, 0.1]],
    ['rain', [1, 0]],
    ['snow', [0.9, 0.1]],
    ['song', [0, 1]],
  ]);

  it('keeps the training vocabulary and looks up other words in the table while it is there', () => {
    const mv = ModelWordVectors.fromTable(table, ['rain', 'song', 'rain', 'zzz']);
    expect(mv.storedWords).toBe(2);
    expect(mv.find('rain')).toEqual({ vector: Float32Array.from([1, 0]), rank: 1 });
    expect(mv.find('snow')?.rank).toBe(2);
    expect(mv.find('zzz')).toBeUndefined();
    const json = JSON.parse(JSON.stringify(mv.toJSON()));
    const withTable = ModelWordVectors.fromJSON(json, table);
    expect(withTable.find('snow')?.rank).toBe(2);
    // without the table (package missing) or with another one, only the stored words are known
    for (const t of [null, wordVectorTable('other/1', 2, [['snow', [1, 1]]])]) {
      const alone = ModelWordVectors.fromJSON(json, t);
      expect(alone.hasTable).toBe(false);
      expect(alone.find('rain')).toEqual({ vector: Float32Array.from([1, 0]), rank: 1 });
      expect(alone.find('snow')).toBeUndefined();
    }
  });

  it('lets the intent classifier generalise to words seen only in the vectors, and survives their absence', () => {
    const docs = [
      ['rain', 'today'],
      ['rain', 'tomorrow'],
      ['a', 'song'],
      ['song', 'please'],
    ];
    const labels = [0, 1, 2, 3].map((i) => (i < 2 ? 0 : 1));
    const classifier = IntentClassifier.train(docs, labels, 2, undefined, table);
    const p = classifier.predict(['snow']).probabilities;
    expect(p[0]).toBeGreaterThan(p[1]!);
    const json = JSON.parse(JSON.stringify(classifier.toJSON()));
    expect(json.wordVectors.words.sort()).toEqual(['rain', 'song']);
    expect(IntentClassifier.fromJSON(json, table).predict(['snow'])).toEqual(classifier.predict(['snow']));
    // loaded where the table cannot be read: same answers on the training vocabulary
    const alone = IntentClassifier.fromJSON(json, null);
    expect(alone.predict(['rain', 'song'])).toEqual(classifier.predict(['rain', 'song']));
    expect(alone.predict(['snow']).probabilities[0]).toBeLessThan(p[0]!);
  });
});
