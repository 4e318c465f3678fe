// MPEG-1/2/2.5 audio, layers I-III (mp3, mp2, mpga): the duration is the sum of the frames' samples,
// counted frame header by frame header. A Xing/Info/VBRI header's frame count is not trusted: a file
// can claim one frame and carry hours of them, and every decoder plays them all. So are frames a decoder
// plays though a strict reading refuses them: a reserved emphasis (ffmpeg ignores the field), and the free
// format (bit rate index 0: no size in the header, the same size all along, found from the next header, as
// mpg123 and minimp3 do; ffmpeg 5 refuses these, but the provider's decoder may be one of those).

const KBPS = {
  v1: [
    [0, 32, 64, 96, 128, 160, 192, 224, 256, 288, 320, 352, 384, 416, 448], // layer I
    [0, 32, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320, 384], // layer II
    [0, 32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320], // layer III
  ],
  v2: [
    [0, 32, 48, 56, 64, 80, 96, 112, 128, 144, 160, 176, 192, 224, 256],
    [0, 8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160],
    [0, 8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160],
  ],
};
const RATES = { 3: [44_100, 48_000, 32_000], 2: [22_050, 24_000, 16_000], 0: [11_025, 12_000, 8_000] };

/** The highest bit rate a free-format frame is taken to have (LAME's free format goes up to it). */
const FREE_FORMAT_MAX_KBPS = 640;

/**
 * The header `frameAt` last read (one object, reused: a file can hold millions of would-be headers). `bytes`
 * is its frame's size, padding included, 0 in the free format (no size in the header: the same all along a
 * stream, found from the next header).
 */
const header = { bytes: 0, samples: 0, rate: 0, tagAt: 0, kind: 0, padding: 0 };

/** What the frames of one stream share: version, layer and sample rate (6 bits of a header's bytes 1-2). */
const kindOf = (b1: number, b2: number) => (((b1 >> 1) & 0x0f) << 2) | ((b2 >> 2) & 3);

/** Whether a header of `kind` starts at `at` (of the free format when `free`), not reading it whole. */
const headerOfKind = (file: Buffer, at: number, kind: number, free: boolean) =>
  at + 4 <= file.length &&
  file[at] === 0xff &&
  (file[at + 1]! & 0xe0) === 0xe0 &&
  kindOf(file[at + 1]!, file[at + 2]!) === kind &&
  (free ? file[at + 2]! >> 4 === 0 : file[at + 2]! >> 4 !== 15);

/** Reads the frame header at `at` into `header`; false when those 4 bytes are no valid header. */
function frameAt(file: Buffer, at: number): boolean {
  if (at + 4 > file.length || file[at] !== 0xff) return false;
  const b1 = file[at + 1]!;
  const b2 = file[at + 2]!;
  if ((b1 & 0xe0) !== 0xe0) return false;
  const version = (b1 >> 3) & 3; // 3: MPEG-1, 2: MPEG-2, 0: MPEG-2.5
  const layer = 4 - ((b1 >> 1) & 3); // 1, 2, 3 (4: reserved)
  const bitrateIndex = b2 >> 4;
  const rateIndex = (b2 >> 2) & 3;
  // the emphasis is not read: a reserved one (2) does not stop decoders
  if (version === 1 || layer === 4 || bitrateIndex === 15 || rateIndex === 3) return false;
  const mpeg1 = version === 3;
  const kbps = (mpeg1 ? KBPS.v1 : KBPS.v2)[layer - 1]!;
  const rate = RATES[version as 0 | 2 | 3][rateIndex]!;
  const mono = file[at + 3]! >> 6 === 3;
  const samples = layer === 1 ? 384 : layer === 3 && !mpeg1 ? 576 : 1152;
  const padding = (b2 >> 1) & 1 ? (layer === 1 ? 4 : 1) : 0;
  header.bytes = bitrateIndex === 0 ? 0 : frameSize(layer, samples, kbps[bitrateIndex]!, rate) + padding;
  header.samples = samples;
  header.rate = rate;
  header.tagAt = layer === 1 ? 0 : at + 4 + (mpeg1 ? (mono ? 17 : 32) : mono ? 9 : 17);
  header.kind = kindOf(b1, b2);
  header.padding = padding;
  return true;
}

/** A frame's size at `kbps`, without padding (layer I counts 4-byte slots). */
const frameSize = (layer: number, samples: number, kbps: number, rate: number) =>
  layer === 1 ? Math.floor((12_000 * kbps) / rate) * 4 : Math.floor((samples * 125 * kbps) / rate);

/**
 * The sizes a free-format frame of each kind can have without its padding: from a frame's at the lowest bit
 * rate a header can name (so no bytes count for more seconds than they would in such a frame) to one's at
 * 640 kbit/s. 0 for the kinds no header has.
 */
const [FREE_MIN_BYTES, FREE_MAX_BYTES] = [1, FREE_FORMAT_MAX_KBPS].map((kbps) =>
  Int32Array.from({ length: 64 }, (_, kind) => {
    const b1 = 0xe0 | ((kind >> 2) << 1);
    const b2 = (1 << 4) | ((kind & 3) << 2);
    if (!frameAt(Buffer.from([0xff, b1, b2, 0]), 0)) return 0;
    const layer = 4 - ((b1 >> 1) & 3);
    const table = ((b1 >> 3) & 3) === 3 ? KBPS.v1 : KBPS.v2;
    return frameSize(layer, header.samples, kbps === 1 ? table[layer - 1]![1]! : kbps, header.rate);
  }),
) as [Int32Array, Int32Array];

/** The first place from `at` where a header can start (a tight loop: a file of 0xFF bytes is 25 MiB of candidates). */
function nextCandidate(file: Buffer, at: number): number {
  const last = file.length - 4;
  while (at <= last && !(file[at] === 0xff && (file[at + 1]! & 0xe0) === 0xe0 && file[at + 2]! < 0xf0)) at++;
  return at <= last ? at : file.length;
}

/** Seconds of the MPEG audio frame whose header starts at `at` (as a sample of an mp4 track holds one); 0 when none. */
export const mpegFrameSeconds = (file: Buffer, at: number): number =>
  frameAt(file, at) ? header.samples / header.rate : 0;

/** Where the frames after the ID3v2 tags at `at` start (an mp3 often opens with one, cover art included). */
export function afterId3v2(file: Buffer, at: number): number {
  while (at + 10 <= file.length && file.toString('latin1', at, at + 3) === 'ID3') {
    const s = file.subarray(at + 6, at + 10);
    if (s.some((b) => b >= 0x80)) break;
    const size = (s[0]! << 21) | (s[1]! << 14) | (s[2]! << 7) | s[3]!;
    at += 10 + size + (file[at + 5]! & 0x10 ? 10 : 0);
  }
  return at;
}

/**
 * Seconds of MPEG audio in `file` from `start` (after any ID3v2 tag), or null when frames do not make up
 * at least half of its bytes: a file of something else in which a sync word happens to appear is not audio.
 */
export function mpegAudioSeconds(file: Buffer, start = 0): number | null {
  const from = afterId3v2(file, start);
  let at = from;
  let seconds = 0;
  let frameBytes = 0;
  let synced = false;
  let first = true;
  /** free format: each kind's frame size (without padding), once found; 0 until then */
  const freeBytes = new Int32Array(64);
  /** free format: the last header of each kind passed since the scan lost sync, its size not found; -1: none */
  const freeSeen = new Int32Array(64).fill(-1);

  /** Counts the frame at `at`, `bytes` long. */
  const count = (at: number, bytes: number) => {
    frameAt(file, at);
    frameBytes += bytes;
    const tag = first ? file.toString('latin1', header.tagAt, header.tagAt + 4) : '';
    const vbri = first && file.toString('latin1', at + 36, at + 40) === 'VBRI';
    // the LAME/Xing header frame is silence that decoders skip
    if (tag !== 'Xing' && tag !== 'Info' && !vbri) seconds += header.samples / header.rate;
    first = false;
  };
  /**
   * Where the free-format frame whose header `header` holds, at `at`, ends: at its kind's size when known and
   * (out of sync) another header of its kind follows; else at the distance from the last header of its kind
   * passed out of sync, when that is a size such a frame can have and a third header follows at that size (the
   * frame of that earlier header then counts too). 0 when not found.
   */
  const freeFrameEnd = (at: number): number => {
    const { kind, padding } = header;
    const known = freeBytes[kind]!;
    const end = at + known + padding;
    if (known && end <= file.length && (synced || end === file.length || headerOfKind(file, end, kind, true)))
      return end;
    const previous = freeSeen[kind]!;
    freeSeen[kind] = at;
    if (previous < 0) return 0;
    // one kind, one layer: its padding is 4 bytes in layer I, 1 in the others
    const size = at - previous - ((file[previous + 2]! >> 1) & 1 ? (header.samples === 384 ? 4 : 1) : 0);
    const next = at + size + padding;
    if (size < FREE_MIN_BYTES[kind]! || size > FREE_MAX_BYTES[kind]! || next > file.length) return 0;
    if (next !== file.length && !headerOfKind(file, next, kind, true)) return 0;
    freeBytes[kind] = size;
    count(previous, at - previous);
    return next;
  };

  while (at + 4 <= file.length) {
    let end = 0;
    if (frameAt(file, at)) {
      // out of sync, a header counts only when another one of its kind (version, layer, rate) follows it, or
      // the file ends with its frame: a stream does not change them from one frame to the next, random bytes do
      if (header.bytes === 0) end = freeFrameEnd(at);
      else if (
        at + header.bytes <= file.length &&
        (synced ||
          at + header.bytes + 4 > file.length ||
          headerOfKind(file, at + header.bytes, header.kind, false))
      )
        end = at + header.bytes;
    }
    if (end === 0) {
      synced = false;
      // to the next byte pair that can start a header (a tight loop: a file of 0xFF bytes is 25 MiB of candidates)
      at = nextCandidate(file, at + 1);
      continue;
    }
    if (!synced) freeSeen.fill(-1); // the bytes passed before are no frame
    synced = true;
    count(at, end - at);
    at = end;
  }
  if (frameBytes === 0 || frameBytes * 2 < file.length - from) return null;
  return seconds;
}
