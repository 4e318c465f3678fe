// FLAC: STREAMINFO's total samples, or more when the last frame's header says the audio runs further (a
// STREAMINFO written by a recorder that could not seek back says 0, and one can be made to say anything), and
// never less than its frames' bytes can hold (floor.ts): a sample rate or frame numbers can be edited.

import { flacBytesPerSecond, floorSeconds } from './floor';

/** CRC-8 (polynomial 0x07), a byte at a time from a table: a file can hold millions of would-be headers. */
const CRC8 = new Uint8Array(256).map((_, n) => {
  let crc = n;
  for (let i = 0; i < 8; i++) crc = crc & 0x80 ? ((crc << 1) ^ 0x07) & 0xff : (crc << 1) & 0xff;
  return crc;
});
const crc8 = (file: Buffer, from: number, to: number): number => {
  let crc = 0;
  for (let i = from; i < to; i++) crc = CRC8[crc ^ file[i]!]!;
  return crc;
};

interface FrameHeader {
  /** the first sample of the frame */
  start: number;
  samples: number;
  variable: boolean;
}

/** The frame header at `at`, checked with its CRC-8; `fixedBlock` turns a frame number into a sample number. */
function frameHeaderAt(file: Buffer, at: number, fixedBlock: number): FrameHeader | null {
  if (at + 6 > file.length || file[at] !== 0xff || (file[at + 1]! & 0xfe) !== 0xf8) return null;
  const variable = (file[at + 1]! & 1) === 1;
  const blockCode = file[at + 2]! >> 4;
  const rateCode = file[at + 2]! & 0x0f;
  if (blockCode === 0 || rateCode === 15 || file[at + 3]! >> 4 > 10 || (file[at + 3]! & 1) !== 0) return null;
  // the frame or sample number, coded like UTF-8 (up to 7 bytes)
  let p = at + 4;
  const lead = file[p]!;
  const extra = lead < 0x80 ? 0 : lead >= 0xc0 && lead < 0xff ? Math.clz32(~(lead << 24)) - 1 : -1;
  if (extra < 0 || p + 1 + extra > file.length) return null;
  let number = extra === 0 ? lead : lead & (0x3f >> extra);
  for (let i = 1; i <= extra; i++) {
    const b = file[p + i]!;
    if ((b & 0xc0) !== 0x80) return null;
    number = number * 64 + (b & 0x3f);
  }
  p += 1 + extra;
  let samples: number;
  if (blockCode === 1) samples = 192;
  else if (blockCode <= 5) samples = 576 << (blockCode - 2);
  else if (blockCode === 6) samples = (file[p++] ?? 0) + 1;
  else if (blockCode === 7) {
    samples = (p + 2 <= file.length ? file.readUInt16BE(p) : 0) + 1;
    p += 2;
  } else samples = 256 << (blockCode - 8);
  p += rateCode === 12 ? 1 : rateCode === 13 || rateCode === 14 ? 2 : 0;
  if (p >= file.length || crc8(file, at, p) !== file[p]) return null;
  if (!variable && !fixedBlock) return null;
  return { start: variable ? number : number * fixedBlock, samples, variable };
}

/**
 * Where the audio ends, in samples, from the last two frame headers of the file (read backwards): one
 * header passing its CRC-8 could still be chance, two that follow each other are not.
 */
function lastFrameEnd(file: Buffer, from: number, fixedBlock: number): number | null {
  const later: FrameHeader[] = [];
  for (let at = file.length - 2; at >= from; at--) {
    if (file[at] !== 0xff) continue;
    const h = frameHeaderAt(file, at, fixedBlock);
    if (!h) continue;
    const next = later.find((l) => l.variable === h.variable && l.start === h.start + h.samples);
    if (next) return next.start + next.samples;
    if (later.length < 8) later.push(h);
  }
  // a file of one frame
  return later.length === 1 && later[0]!.start === 0 ? later[0]!.samples : null;
}

/** Seconds of audio in a native FLAC stream whose `fLaC` marker is at `at`; null when it is not one. */
export function flacSeconds(file: Buffer, at: number): number | null {
  if (file.toString('latin1', at, at + 4) !== 'fLaC') return null;
  let p = at + 4;
  let rate = 0;
  let total = 0;
  let fixedBlock = 0;
  let maxBytesPerSecond = 0;
  for (let last = false; !last; ) {
    if (p + 4 > file.length) return null;
    last = (file[p]! & 0x80) !== 0;
    const size = file.readUIntBE(p + 1, 3);
    if ((file[p]! & 0x7f) === 0) {
      const s = p + 4;
      if (size < 34 || s + 18 > file.length) return null;
      fixedBlock = file.readUInt16BE(s + 2); // the largest block: every frame's but the last
      rate = file.readUInt32BE(s + 10) >>> 12;
      total = (file[s + 13]! & 0x0f) * 2 ** 32 + file.readUInt32BE(s + 14);
      const format = file.readUInt32BE(s + 10); // rate: 20 bits, channels - 1: 3, bits per sample - 1: 5
      maxBytesPerSecond = flacBytesPerSecond(((format >> 9) & 7) + 1, ((format >> 4) & 31) + 1);
    }
    p += 4 + size;
  }
  if (!rate) return null;
  const end = lastFrameEnd(file, p, fixedBlock);
  if (end === null && total === 0) return null;
  // the frames: every byte after the metadata blocks
  const frames = Math.max(0, file.length - p);
  return Math.max(Math.max(total, end ?? 0) / rate, floorSeconds(frames, maxBytesPerSecond));
}
