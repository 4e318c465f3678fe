import * as fs from 'node:fs';
import { dataFile, ENGLISH_VECTOR_SOURCE, ENGLISH_VECTORS_FILE } from './language-resources';
import { decodeVectorTable, encodeVectorTable } from './vector-table-file';
import { wordVectorTable } from './word-vectors';

const cosine = (a: ArrayLike<number>, b: ArrayLike<number>) => {
  let ab = 0;
  let aa = 0;
  let bb = 0;
  for (let i = 0; i < a.length; i++) {
    ab += a[i]! * b[i]!;
    aa += a[i]! * a[i]!;
    bb += b[i]! * b[i]!;
  }
  return ab / Math.sqrt(aa * bb);
};

describe('vector table file', () => {
  const words = ['the', 'café', 'zebra', 'nul'];
  const vectors = [
    [0.5, -0.25, 0.125, 1],
    [-3.2, 0.001, 2.5, 0.7],
    [1e-3, -2e-3, 5e-4, 0],
    [0, 0, 0, 0],
  ];
  const table = wordVectorTable(
    'test/4',
    4,
    words.map((w, i) => [w, vectors[i]!]),
  );

  it('keeps words, their order and the direction of every vector through 8-bit quantisation', () => {
    const decoded = decodeVectorTable(encodeVectorTable(table, words));
    expect(decoded.source).toBe('test/4');
    expect(decoded.dim).toBe(4);
    expect(words.map((w) => decoded.rowOf(w))).toEqual([0, 1, 2, 3]);
    expect(decoded.rowOf('absent')).toBe(-1);
    for (let r = 0; r < 3; r++) expect(cosine(decoded.row(r), vectors[r]!)).toBeGreaterThan(0.9999);
    expect(Array.from(decoded.row(3))).toEqual([0, 0, 0, 0]);
    // each value within half a quantisation step of the original
    for (let r = 0; r < 3; r++) {
      const step = Math.max(...vectors[r]!.map(Math.abs)) / 127;
      for (let d = 0; d < 4; d++)
        expect(Math.abs(decoded.row(r)[d]! - vectors[r]![d]!)).toBeLessThanOrEqual(step / 2 + 1e-9);
    }
  });

  it('is deterministic, and refuses files that are not tables or are cut short', () => {
    const bytes = encodeVectorTable(table, words);
    expect(encodeVectorTable(table, words).equals(bytes)).toBe(true);
    expect(() => decodeVectorTable(Buffer.from('not a table at all'))).toThrow(/not a vector table/);
    expect(() => decodeVectorTable(bytes.subarray(0, bytes.length - 1))).toThrow(/wrong length/);
  });

  it('keeps the table 8-bit and reads rows as the float32 values int8 × scale', () => {
    const bytes = encodeVectorTable(table, words);
    const decoded = decodeVectorTable(bytes);
    const parts = decoded.parts();
    expect(parts.data).toBeUndefined();
    expect(parts.quantised!.values.byteLength).toBe(words.length * 4);
    for (let r = 0; r < words.length; r++) {
      const expected = Array.from(parts.quantised!.values.subarray(r * 4, r * 4 + 4), (q) =>
        Math.fround(q * parts.quantised!.scales[r]!),
      );
      expect(Array.from(decoded.row(r))).toEqual(expected);
    }
    // each row read is its own array: two rows can be held at once
    expect(decoded.row(0)).not.toBe(decoded.row(0));
  });

  it('ships the English table: 50,000 words of 100 dimensions, at most 20 MB', () => {
    const file = dataFile(ENGLISH_VECTORS_FILE);
    expect(fs.statSync(file).size).toBeLessThanOrEqual(20 * 2 ** 20);
    const en = decodeVectorTable(fs.readFileSync(file));
    expect(en.source).toBe(ENGLISH_VECTOR_SOURCE);
    expect([en.size, en.dim]).toEqual([50_000, 100]);
    expect(en.rowOf('the')).toBe(0);
    // related words stay close, unrelated ones do not
    const sim = (a: string, b: string) => cosine(en.row(en.rowOf(a)), en.row(en.rowOf(b)));
    expect(sim('train', 'railway')).toBeGreaterThan(0.5);
    expect(sim('train', 'banana')).toBeLessThan(0.3);
  });
});
