// MPEG-1/2/2.5 audio, layers I-III (mp3, mp2, mpga): the duration is the sum of the frames' samples,
// counted frame header by frame header. A Xing/Info/VBRI header's frame count is not trusted: a file
// can claim one frame and carry hours of them, and every decoder plays them all.

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

interface Frame {
  bytes: number;
  samples: number;
  rate: number;
  /** where a Xing/Info tag would sit, after the side information */
  tagAt: number;
}

/** The frame whose header starts at `at`, or null when those 4 bytes are no valid header. */
function frameAt(file: Buffer, at: number): Frame | null {
  if (at + 4 > file.length || file[at] !== 0xff) return null;
  const b1 = file[at + 1]!;
  const b2 = file[at + 2]!;
  if ((b1 & 0xe0) !== 0xe0) return null;
  const version = (b1 >> 3) & 3; // 3: MPEG-1, 2: MPEG-2, 0: MPEG-2.5
  const layer = 4 - ((b1 >> 1) & 3); // 1, 2, 3 (4: reserved)
  const bitrateIndex = b2 >> 4;
  const rateIndex = (b2 >> 2) & 3;
  if (version === 1 || layer === 4 || bitrateIndex === 0 || bitrateIndex === 15 || rateIndex === 3)
    return null;
  if ((file[at + 3]! & 3) === 2) return null; // reserved emphasis
  const mpeg1 = version === 3;
  const bitrate = (mpeg1 ? KBPS.v1 : KBPS.v2)[layer - 1]![bitrateIndex]! * 1000;
  const rate = RATES[version as 0 | 2 | 3][rateIndex]!;
  const padding = (b2 >> 1) & 1;
  const mono = file[at + 3]! >> 6 === 3;
  if (layer === 1)
    return { bytes: (Math.floor((12 * bitrate) / rate) + padding) * 4, samples: 384, rate, tagAt: 0 };
  const perFrame = layer === 3 && !mpeg1 ? 576 : 1152;
  return {
    bytes: Math.floor(((perFrame / 8) * bitrate) / rate) + padding,
    samples: perFrame,
    rate,
    tagAt: at + 4 + (mpeg1 ? (mono ? 17 : 32) : mono ? 9 : 17),
  };
}

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
  while (at + 4 <= file.length) {
    const frame = frameAt(file, at);
    const end = frame ? at + frame.bytes : 0;
    // out of sync, a header counts only when another one follows it (or the file ends with its frame)
    const accepted =
      frame !== null &&
      end <= file.length &&
      (synced || end + 4 > file.length || frameAt(file, end) !== null);
    if (!frame || !accepted) {
      synced = false;
      // to the next byte pair that can start a header (a tight loop: a file of 0xFF bytes is 25 MiB of candidates)
      at++;
      while (
        at + 4 <= file.length &&
        !(file[at] === 0xff && (file[at + 1]! & 0xe0) === 0xe0 && file[at + 2]! < 0xf0)
      )
        at++;
      continue;
    }
    synced = true;
    frameBytes += frame.bytes;
    const tag = first ? file.toString('latin1', frame.tagAt, frame.tagAt + 4) : '';
    const vbri = first && file.toString('latin1', at + 36, at + 40) === 'VBRI';
    // the LAME/Xing header frame is silence that decoders skip
    if (tag !== 'Xing' && tag !== 'Info' && !vbri) seconds += frame.samples / frame.rate;
    first = false;
    at = end;
  }
  if (frameBytes === 0 || frameBytes * 2 < file.length - from) return null;
  return seconds;
}
