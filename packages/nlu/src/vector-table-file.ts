/**
 * The compact word-vector table the engine ships (`packages/nlu/data/*.vec`): a vocabulary cut (the most frequent
 * words, folded like the tokens) with each vector quantised to 8-bit integers and one float32 scale per row.
 *
 * Layout (little-endian):
 *   "PNLUVEC1"                       8 bytes, magic
 *   u32 headerLength, header JSON    {source, dim, words, wordBytes, quantisation: "int8-row-scale"}
 *   words                            UTF-8, one per line ("\n"), in frequency order (row = rank)
 *   f32 scale[words]                 value = int8 * scale
 *   i8  data[words * dim]
 *
 * Per-row symmetric quantisation keeps each vector's direction within ~0.4 % (the engine only uses directions and
 * rank-based weights); `scripts/build-word-vectors.ts` writes the file from the original package.
 */
import { type WordVectorTable, wordVectorTableFromParts } from './word-vectors';

const MAGIC = 'PNLUVEC1';

export interface VectorTableHeader {
  source: string;
  dim: number;
  words: number;
  wordBytes: number;
  quantisation: 'int8-row-scale';
}

/** Encode a table (every row) into the file format. */
export function encodeVectorTable(table: WordVectorTable, words: readonly string[]): Buffer {
  const dim = table.dim;
  const wordText = Buffer.from(words.join('\n'), 'utf8');
  const header: VectorTableHeader = {
    source: table.source,
    dim,
    words: words.length,
    wordBytes: wordText.length,
    quantisation: 'int8-row-scale',
  };
  const headerText = Buffer.from(JSON.stringify(header), 'utf8');
  const scales = Buffer.alloc(words.length * 4);
  const data = Buffer.alloc(words.length * dim);
  words.forEach((w, i) => {
    const row = table.row(table.rowOf(w));
    let max = 0;
    for (let d = 0; d < dim; d++) max = Math.max(max, Math.abs(row[d]!));
    const scale = max > 0 ? max / 127 : 1;
    scales.writeFloatLE(scale, i * 4);
    for (let d = 0; d < dim; d++) data.writeInt8(Math.round(row[d]! / Math.fround(scale)), i * dim + d);
  });
  const length = Buffer.alloc(4);
  length.writeUInt32LE(headerText.length, 0);
  return Buffer.concat([Buffer.from(MAGIC, 'latin1'), length, headerText, wordText, scales, data]);
}

/**
 * Decode a table file into a table kept 8-bit as stored;
 * rows are dequantised when read (QuantisedWordVectorTable). `source` of the table is the header's.
 */
export function decodeVectorTable(file: Buffer): WordVectorTable {
  if (file.length < 12 || file.toString('latin1', 0, 8) !== MAGIC)
    throw new Error('word vectors: not a vector table file');
  const headerLength = file.readUInt32LE(8);
  let pos = 12;
  const header = JSON.parse(file.toString('utf8', pos, pos + headerLength)) as VectorTableHeader;
  pos += headerLength;
  const { dim, words: n } = header;
  if (header.quantisation !== 'int8-row-scale' || !(dim > 0) || !(n >= 0))
    throw new Error('word vectors: unsupported vector table');
  if (file.length !== pos + header.wordBytes + n * 4 + n * dim)
    throw new Error('word vectors: vector table file has the wrong length');
  const words = n > 0 ? file.toString('utf8', pos, pos + header.wordBytes).split('\n') : [];
  pos += header.wordBytes;
  const scales = new Float32Array(n);
  for (let i = 0; i < n; i++) scales[i] = file.readFloatLE(pos + i * 4);
  const values = new Int8Array(n * dim);
  values.set(new Int8Array(file.buffer, file.byteOffset + pos + n * 4, n * dim));
  return wordVectorTableFromParts({ source: header.source, dim, words, quantised: { values, scales } });
}
