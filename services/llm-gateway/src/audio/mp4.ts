// ISO base media (mp4, m4a, mov; fragmented files included): the sound track's duration, the longest of
// its media header's and the sum of its samples' durations (`stts`, and `trun` in fragments), and never less
// than its samples' bytes (`stsz`, `trun`) can hold at its codec's highest rate (floor.ts).

import {
  AC3_BYTES_PER_SECOND,
  floorSeconds,
  LOSSLESS_BYTES_PER_SECOND,
  LOSSY_BYTES_PER_SECOND,
  lossyBytesPerSecond,
} from './floor';

interface Track {
  id: number;
  sound: boolean;
  timescale: number;
  declared: number;
  samples: number;
  defaultSampleDuration: number;
  /** the samples' bytes */
  bytes: number;
  defaultSampleSize: number;
  /** the first sample entry's format (`mp4a`, `Opus`, `alac`...) and channel count */
  format: number;
  channels: number;
}

/** a box type as the 32-bit number it is in the file (compared without making a string per box) */
const fourcc = (s: string) => Buffer.from(s, 'latin1').readUInt32BE(0);
const [TRAK, TKHD, MDHD, HDLR, STTS, STSZ, STSD, TREX, TFHD, TRUN, SOUN] = [
  'trak',
  'tkhd',
  'mdhd',
  'hdlr',
  'stts',
  'stsz',
  'stsd',
  'trex',
  'tfhd',
  'trun',
  'soun',
].map(fourcc);
/** the most bytes a second of each sample format can take; a format not listed is taken as lossless */
const BYTES_PER_SECOND = new Map([
  ...['mp4a', 'Opus', '.mp3', 'samr', 'sawb'].map((f) => [fourcc(f), LOSSY_BYTES_PER_SECOND] as const),
  [fourcc('ac-3'), AC3_BYTES_PER_SECOND],
]);
const CONTAINERS = new Set(['moov', 'trak', 'mdia', 'minf', 'stbl', 'mvex', 'moof', 'traf'].map(fourcc));
const FIRST_BOXES = new Set(['ftyp', 'moov', 'mdat', 'free', 'skip', 'wide', 'pnot'].map(fourcc));

/** Whether the file opens as an ISO base media file (its first box is one of theirs). */
export const looksLikeMp4 = (file: Buffer): boolean =>
  file.length >= 8 && FIRST_BOXES.has(file.readUInt32BE(4));

const MAX_TRACKS = 64;

const u64 = (file: Buffer, at: number) => file.readUInt32BE(at) * 2 ** 32 + file.readUInt32BE(at + 4);

/** Seconds of the longest sound track of an ISO base media file; null when it has none or is cut short. */
export function mp4Seconds(file: Buffer): number | null {
  if (!looksLikeMp4(file)) return null;
  const tracks: Track[] = [];
  const byId = new Map<number, Track>();
  let track: Track | null = null;
  let fragmentTrack: Track | null = null;
  let fragmentDefault = 0;
  let fragmentDefaultSize = 0;
  /** more tracks than are remembered: the one left out could be the longest */
  let tooMany = false;

  const walk = (from: number, to: number, depth: number) => {
    for (let at = from; at + 8 <= to; ) {
      let size = file.readUInt32BE(at);
      const type = file.readUInt32BE(at + 4);
      let header = 8;
      if (size === 1) {
        if (at + 16 > to) return;
        size = u64(file, at + 8);
        header = 16;
      } else if (size === 0) size = to - at;
      if (size < header) return;
      const end = Math.min(to, at + size);
      const c = at + header; // the box's content
      const v1 = file[c] === 1; // full boxes: version, then 3 bytes of flags
      if (CONTAINERS.has(type) && depth < 8) {
        if (type === TRAK) {
          // a file can hold millions of empty tracks: the first few dozen are enough for any real one, and a file
          // of more is refused (the track left out could be the longest)
          if (tracks.length >= MAX_TRACKS) {
            tooMany = true;
            return;
          }
          track = {
            id: 0,
            sound: false,
            timescale: 0,
            declared: 0,
            samples: 0,
            defaultSampleDuration: 0,
            bytes: 0,
            defaultSampleSize: 0,
            format: 0,
            channels: 0,
          };
          tracks.push(track);
        }
        walk(c, end, depth + 1);
      } else if (type === TKHD && track && c + 24 <= end) {
        track.id = file.readUInt32BE(c + (v1 ? 20 : 12));
        byId.set(track.id, track);
      } else if (type === MDHD && track && c + (v1 ? 32 : 20) <= end) {
        track.timescale = file.readUInt32BE(c + (v1 ? 20 : 12));
        const declared = v1 ? u64(file, c + 24) : file.readUInt32BE(c + 16);
        // all ones: unknown
        track.declared = declared === (v1 ? 2 ** 64 - 1 : 0xffff_ffff) ? 0 : declared;
      } else if (type === HDLR && track && c + 12 <= end) {
        track.sound = file.readUInt32BE(c + 8) === SOUN;
      } else if (type === STTS && track && c + 8 <= end) {
        const count = Math.min(file.readUInt32BE(c + 4), Math.floor((end - c - 8) / 8));
        for (let i = 0; i < count; i++)
          track.samples += file.readUInt32BE(c + 8 + i * 8) * file.readUInt32BE(c + 12 + i * 8);
      } else if (type === STSZ && track && c + 12 <= end) {
        const size = file.readUInt32BE(c + 4);
        const count = file.readUInt32BE(c + 8);
        if (size) track.bytes += size * count;
        else
          for (let p = c + 12, i = 0; i < count && p + 4 <= end; i++, p += 4)
            track.bytes += file.readUInt32BE(p);
      } else if (type === STSD && track && c + 16 <= end) {
        track.format = file.readUInt32BE(c + 12);
        if (c + 34 <= end) track.channels = file.readUInt16BE(c + 32); // at the entry's 24th byte
      } else if (type === TREX && c + 20 <= end) {
        const t = byId.get(file.readUInt32BE(c + 4));
        if (t) {
          t.defaultSampleDuration = file.readUInt32BE(c + 12);
          t.defaultSampleSize = file.readUInt32BE(c + 16);
        }
      } else if (type === TFHD && c + 8 <= end) {
        const flags = file.readUIntBE(c + 1, 3);
        fragmentTrack = byId.get(file.readUInt32BE(c + 4)) ?? null;
        let p = c + 8 + (flags & 0x01 ? 8 : 0) + (flags & 0x02 ? 4 : 0);
        fragmentDefault = fragmentTrack?.defaultSampleDuration ?? 0;
        if (flags & 0x08) {
          if (p + 4 <= end) fragmentDefault = file.readUInt32BE(p);
          p += 4;
        }
        fragmentDefaultSize =
          flags & 0x10 && p + 4 <= end ? file.readUInt32BE(p) : (fragmentTrack?.defaultSampleSize ?? 0);
      } else if (type === TRUN && fragmentTrack && c + 8 <= end) {
        const flags = file.readUIntBE(c + 1, 3);
        const count = file.readUInt32BE(c + 4);
        let p = c + 8 + (flags & 0x01 ? 4 : 0) + (flags & 0x04 ? 4 : 0);
        const durations = (flags & 0x100) !== 0;
        const sizes = (flags & 0x200) !== 0;
        if (durations || sizes) {
          const stride = 4 * (+durations + +sizes + ((flags >> 10) & 1) + ((flags >> 11) & 1));
          const sizeAt = durations ? 4 : 0;
          for (let i = 0; i < count && p + stride <= end; i++, p += stride) {
            if (durations) fragmentTrack.samples += file.readUInt32BE(p);
            if (sizes) fragmentTrack.bytes += file.readUInt32BE(p + sizeAt);
          }
        }
        if (!durations) fragmentTrack.samples += count * fragmentDefault;
        if (!sizes) fragmentTrack.bytes += count * fragmentDefaultSize;
      }
      at = at + size;
    }
  };
  walk(0, file.length, 0);
  if (tooMany) return null;

  let seconds: number | null = null;
  for (const t of tracks)
    if (t.sound && t.timescale > 0) {
      // the samples' bytes are in the file: a count that says more is damaged
      const max = BYTES_PER_SECOND.get(t.format) ?? LOSSLESS_BYTES_PER_SECOND;
      const floor = floorSeconds(
        Math.min(t.bytes, file.length),
        max === LOSSY_BYTES_PER_SECOND ? lossyBytesPerSecond(t.channels) : max,
      );
      seconds = Math.max(seconds ?? 0, Math.max(t.declared, t.samples) / t.timescale, floor);
    }
  return seconds;
}
