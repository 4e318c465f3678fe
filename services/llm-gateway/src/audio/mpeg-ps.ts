// MPEG program streams (.mpeg, .mpg: MPEG-1 and MPEG-2 systems): each audio stream's packets, demultiplexed.
// MPEG audio (streams 0xC0-0xDF) is measured by its frames, like an mp3; other audio (AC-3, LPCM in
// private stream 1) by the span of its presentation timestamps. Never less than a stream's payload bytes can
// hold at its codec's highest rate (floor.ts): timestamps can be edited to say anything.

import {
  AC3_BYTES_PER_SECOND,
  DVD_LPCM_BYTES_PER_SECOND,
  floorSeconds,
  LOSSLESS_BYTES_PER_SECOND,
  LOSSY_BYTES_PER_SECOND,
} from './floor';
import { mpegAudioSeconds } from './mpeg-audio';

interface Stream {
  /** MPEG audio's payloads, copied one after the other (a file can hold millions of tiny packets: no object each) */
  audio: Buffer | null;
  audioBytes: number;
  /** its packets' payload bytes */
  bytes: number;
  first: number | null;
  last: number;
}

/** Appends `file[from, to)` to the stream's audio, the buffer doubling as it fills. */
function append(s: Stream, file: Buffer, from: number, to: number): void {
  if (to <= from) return;
  if (s.audio === null || s.audioBytes + to - from > s.audio.length) {
    const grown = Buffer.allocUnsafe(Math.max(s.audioBytes + to - from, 2 * (s.audio?.length ?? 0), 4096));
    s.audio?.copy(grown, 0, 0, s.audioBytes);
    s.audio = grown;
  }
  s.audioBytes += file.copy(s.audio, s.audioBytes, from, to);
}

/** A 33-bit timestamp (90 kHz) from its 5 bytes. */
const timestamp = (f: Buffer, at: number) =>
  ((f[at]! >> 1) & 7) * 2 ** 30 +
  ((f[at + 1]! << 7) | (f[at + 2]! >> 1)) * 2 ** 15 +
  ((f[at + 3]! << 7) | (f[at + 4]! >> 1));

/** Where a PES packet's payload starts and its PTS, for MPEG-2 and MPEG-1 packet headers. */
function pesHeader(f: Buffer, at: number, end: number): { payload: number; pts: number | null } | null {
  if (at + 3 > end) return null;
  if ((f[at]! & 0xc0) === 0x80) {
    const payload = at + 3 + f[at + 2]!;
    const pts = f[at + 1]! & 0x80 && at + 8 <= end ? timestamp(f, at + 3) : null;
    return payload <= end ? { payload, pts } : null;
  }
  let p = at;
  while (p < end && f[p] === 0xff && p - at < 16) p++; // stuffing
  if (p < end && (f[p]! & 0xc0) === 0x40) p += 2; // STD buffer
  if (p >= end) return null;
  const kind = f[p]! & 0xf0;
  if (kind === 0x20) return p + 5 <= end ? { payload: p + 5, pts: timestamp(f, p) } : null;
  if (kind === 0x30) return p + 10 <= end ? { payload: p + 10, pts: timestamp(f, p) } : null;
  return f[p] === 0x0f ? { payload: p + 1, pts: null } : null;
}

/** The most bytes a second a stream can take: MPEG audio, AC-3 (0x80-0x87), LPCM (0xA0-0xAF), others (DTS...). */
const maxBytesPerSecond = (key: number) =>
  key < 0x100
    ? LOSSY_BYTES_PER_SECOND
    : key <= 0x187
      ? AC3_BYTES_PER_SECOND
      : key >= 0x1a0
        ? DVD_LPCM_BYTES_PER_SECOND
        : LOSSLESS_BYTES_PER_SECOND;

/** Seconds of the longest audio stream of an MPEG program stream; null when it is not one or holds no audio. */
export function mpegPsSeconds(file: Buffer): number | null {
  if (file.length < 4 || file.readUInt32BE(0) !== 0x000001ba) return null;
  const streams = new Map<number, Stream>();
  for (let at = 0; at + 4 <= file.length; ) {
    if (file[at] !== 0 || file[at + 1] !== 0 || file[at + 2] !== 1) {
      const next = file.indexOf('\0\0\x01', at + 1, 'latin1');
      if (next < 0) break;
      at = next;
      continue;
    }
    const code = file[at + 3]!;
    if (code === 0xba) {
      // pack header: MPEG-2's is 14 bytes and stuffing, MPEG-1's 12
      at += at + 14 <= file.length && (file[at + 4]! & 0xc0) === 0x40 ? 14 + (file[at + 13]! & 7) : 12;
      continue;
    }
    if (code < 0xbb || at + 6 > file.length) {
      at += 4;
      continue;
    }
    const end = Math.min(file.length, at + 6 + file.readUInt16BE(at + 4));
    const audio = code >= 0xc0 && code <= 0xdf;
    if (audio || code === 0xbd) {
      const h = pesHeader(file, at + 6, end);
      if (h) {
        // private stream 1 carries several: its first payload byte says which (AC-3 0x80-0x87, LPCM 0xA0-...)
        const key = audio ? code : 0x100 + (file[h.payload] ?? 0);
        const s = streams.get(key) ?? { audio: null, audioBytes: 0, bytes: 0, first: null, last: 0 };
        streams.set(key, s);
        s.bytes += Math.max(0, end - h.payload);
        if (audio) append(s, file, h.payload, end);
        if (h.pts !== null) {
          s.first = Math.min(s.first ?? h.pts, h.pts);
          s.last = Math.max(s.last, h.pts);
        }
      }
    }
    at = end;
  }
  let seconds: number | null = null;
  for (const [key, s] of streams) {
    const span = s.first === null ? 0 : (s.last - s.first) / 90_000;
    const frames = key < 0x100 && s.audio ? mpegAudioSeconds(s.audio.subarray(0, s.audioBytes)) : null;
    if (key < 0x100 && frames === null && span === 0) continue;
    if (key >= 0x100 && (key < 0x180 || key > 0x1af)) continue; // not an audio substream (subtitles: 0x20-0x3F)
    seconds = Math.max(seconds ?? 0, frames ?? 0, span, floorSeconds(s.bytes, maxBytesPerSecond(key)));
  }
  return seconds;
}
