/**
 * A vocabulary (string -> id) held in typed arrays: the strings' UTF-16 code units, their offsets, and an
 * open-addressing hash table of ids. A `Map` would hold one JS string and one entry per feature (40,000 for a
 * 100-intent model); these are four arrays, so adopting a model gives the garbage collector nothing to copy or mark
 * for its vocabulary, and the binary form (model-codec.ts) loads it without making a single string.
 */
import { runSteps, type Steps } from './steps';

const EMPTY = -1;

/** FNV-1a over UTF-16 code units. */
function hashOf(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 0x01000193);
  return h >>> 0;
}

function hashUnits(units: Uint16Array, start: number, length: number): number {
  let h = 0x811c9dc5;
  for (let i = start; i < start + length; i++) h = Math.imul(h ^ units[i]!, 0x01000193);
  return h >>> 0;
}

export class StringIndex {
  private constructor(
    /** the strings' code units, one after the other (the binary form's section as it is) */
    readonly units: Uint16Array,
    readonly lengths: Uint32Array,
    private readonly starts: Float64Array,
    private readonly table: Int32Array,
  ) {}

  /** The index of `strings`, id = position (the strings must differ from one another). */
  static of(strings: readonly string[]): StringIndex {
    const lengths = Uint32Array.from(strings, (s) => s.length);
    const text = Buffer.from(strings.join(''), 'utf16le');
    const units = new Uint16Array(text.length / 2);
    new Uint8Array(units.buffer).set(text);
    return runSteps(StringIndex.build(units, lengths));
  }

  /** `list` itself when it is an index already, else the index of its strings (models loaded from JSON hold plain lists). */
  static from(list: readonly string[] | StringIndex): StringIndex {
    return list instanceof StringIndex ? list : StringIndex.of(list);
  }

  /** The index over code units and lengths (a decoded model's sections), in steps of a few thousand strings. */
  static *build(units: Uint16Array, lengths: Uint32Array): Steps<StringIndex> {
    const n = lengths.length;
    const starts = new Float64Array(n + 1);
    for (let i = 0; i < n; i++) starts[i + 1] = starts[i]! + lengths[i]!;
    if (starts[n] !== units.length) throw new Error('string index: lengths do not match the text');
    let size = 8;
    while (size < 2 * n) size *= 2;
    const table = new Int32Array(size).fill(EMPTY);
    const index = new StringIndex(units, lengths, starts, table);
    const mask = size - 1;
    for (let id = 0; id < n; id++) {
      let slot = hashUnits(units, starts[id]!, lengths[id]!) & mask;
      for (;;) {
        const other = table[slot]!;
        if (other === EMPTY) break;
        if (index.sameUnits(other, id)) throw new Error('string index: a string is listed twice');
        slot = (slot + 1) & mask;
      }
      table[slot] = id;
      if ((id & 4095) === 4095) yield;
    }
    return index;
  }

  get size(): number {
    return this.lengths.length;
  }

  /** The id of `s`, or undefined. */
  get(s: string): number | undefined {
    const { table, units, lengths, starts } = this;
    const mask = table.length - 1;
    let slot = hashOf(s) & mask;
    for (;;) {
      const id = table[slot]!;
      if (id === EMPTY) return undefined;
      if (lengths[id] === s.length) {
        const start = starts[id]!;
        let i = 0;
        while (i < s.length && units[start + i] === s.charCodeAt(i)) i++;
        if (i === s.length) return id;
      }
      slot = (slot + 1) & mask;
    }
  }

  /** Every string, in id order (made on demand: serialising, tests). */
  keys(): string[] {
    const text = Buffer.from(this.units.buffer, this.units.byteOffset, this.units.byteLength).toString(
      'utf16le',
    );
    return Array.from(this.lengths, (length, id) => text.slice(this.starts[id]!, this.starts[id]! + length));
  }

  private sameUnits(a: number, b: number): boolean {
    const length = this.lengths[a]!;
    if (length !== this.lengths[b]) return false;
    const sa = this.starts[a]!;
    const sb = this.starts[b]!;
    for (let i = 0; i < length; i++) if (this.units[sa + i] !== this.units[sb + i]) return false;
    return true;
  }
}
