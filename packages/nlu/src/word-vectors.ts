/**
 * Pre-trained word vectors, a language resource of the NLU engine (see language-resources.ts).
 *
 * - `WordVectorTable`: the process-wide table of a language, read once from the compact table file the package
 *   ships (see vector-table-file.ts).
 * - `ModelWordVectors`: what a trained model keeps: the vectors of its training vocabulary (serialised with it, so
 *   `loadModel` does not need the table), and the process-wide table for words it has not seen.
 */
import { decodeFloat32Array, encodeFloat32 } from './float-codec';

export interface WordVectorTable {
  /** where the vectors come from (package, version, vocabulary size) */
  readonly source: string;
  readonly dim: number;
  readonly size: number;
  /** row of a word (folded form), or -1; rows are in frequency order, so the row is also the word's rank */
  rowOf(word: string): number;
  /** vector of a row (do not modify) */
  row(r: number): Float32Array;
  /** word of a row (its folded form) */
  wordAt(r: number): string;
  /** what the table is made of (see WordVectorTableParts) */
  parts(): WordVectorTableParts;
}

/** The vocabulary side of a table: words by row, rows by word. */
abstract class RowsByWord implements WordVectorTable {
  constructor(
    readonly source: string,
    readonly dim: number,
    protected readonly rows: Map<string, number>,
  ) {}

  get size(): number {
    return this.rows.size;
  }

  rowOf(word: string): number {
    return this.rows.get(word) ?? -1;
  }

  private words?: string[];

  wordAt(r: number): string {
    this.words ??= [...this.rows.keys()];
    return this.words[r] ?? '';
  }

  abstract row(r: number): Float32Array;
  abstract parts(): WordVectorTableParts;
}

export class DenseWordVectorTable extends RowsByWord {
  constructor(
    source: string,
    dim: number,
    rows: Map<string, number>,
    private readonly data: Float32Array,
  ) {
    super(source, dim, rows);
  }

  row(r: number): Float32Array {
    return this.data.subarray(r * this.dim, (r + 1) * this.dim);
  }

  parts(): WordVectorTableParts {
    return { source: this.source, dim: this.dim, words: [...this.rows.keys()], data: this.data };
  }
}

/**
 * A table kept as it is stored (vector-table-file.ts): 8-bit integers with one float32 scale per row, a quarter of the
 * memory of float32 rows (5 MB instead of 20 MB for the English table). A row is dequantised when it is read (100
 * multiplications per word looked up): exactly the float32 values a dequantised table would hold
 * (`fround(int8 * scale)`).
 */
export class QuantisedWordVectorTable extends RowsByWord {
  constructor(
    source: string,
    dim: number,
    rows: Map<string, number>,
    private readonly values: Int8Array,
    private readonly scales: Float32Array,
  ) {
    super(source, dim, rows);
  }

  row(r: number): Float32Array {
    const out = new Float32Array(this.dim);
    const dim = this.dim;
    const scale = this.scales[r]!;
    const base = r * dim;
    for (let d = 0; d < dim; d++) out[d] = this.values[base + d]! * scale;
    return out;
  }

  parts(): WordVectorTableParts {
    return {
      source: this.source,
      dim: this.dim,
      words: [...this.rows.keys()],
      quantised: { values: this.values, scales: this.scales },
    };
  }
}

/** What a table is made of: its words in row order and its vectors, float32 or 8-bit. */
export interface WordVectorTableParts {
  source: string;
  dim: number;
  /** in row order */
  words: string[];
  /** float32 rows (tables built from explicit vectors) */
  data?: Float32Array;
  /** 8-bit rows, value = int8 * scale of the row (tables read from the package's file) */
  quantised?: { values: Int8Array; scales: Float32Array };
}

export function wordVectorTableFromParts(parts: WordVectorTableParts): WordVectorTable {
  const rows = new Map<string, number>();
  parts.words.forEach((w, i) => {
    rows.set(w, i);
  });
  if (parts.quantised)
    return new QuantisedWordVectorTable(
      parts.source,
      parts.dim,
      rows,
      parts.quantised.values,
      parts.quantised.scales,
    );
  if (!parts.data) throw new Error('word vectors: a table without vectors');
  return new DenseWordVectorTable(parts.source, parts.dim, rows, parts.data);
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

/** The arrays of a model's own word vectors (moved between threads and stored as they are, see model-codec.ts). */
export interface ModelWordVectorParts {
  source: string;
  dim: number;
  words: string[];
  ranks: Int32Array;
  data: Float32Array;
}

/** The word vectors a model uses: its own (training vocabulary), then the process-wide table, if any. */
export class ModelWordVectors {
  private readonly rows = new Map<string, number>();

  private constructor(
    readonly source: string,
    readonly dim: number,
    private readonly words: string[],
    private readonly ranks: ArrayLike<number>,
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

  static fromParts(parts: ModelWordVectorParts, table: WordVectorTable | null): ModelWordVectors {
    const usable = table && table.source === parts.source && table.dim === parts.dim ? table : null;
    if (parts.ranks.length !== parts.words.length || parts.data.length !== parts.words.length * parts.dim)
      throw new Error('word vectors: inconsistent model vectors');
    return new ModelWordVectors(parts.source, parts.dim, parts.words, parts.ranks, parts.data, usable);
  }

  toParts(): ModelWordVectorParts {
    return {
      source: this.source,
      dim: this.dim,
      words: this.words,
      ranks: Int32Array.from(this.ranks),
      data: this.data,
    };
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
      ranks: Array.from(this.ranks),
      vectors: encodeFloat32(this.data),
    };
  }
}
