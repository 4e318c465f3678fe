// ISO base media (mp4, m4a, mov; fragmented files included): the sound track's duration, the longest of
// its media header's and the sum of its samples' durations (`stts`, and `trun` in fragments), and never less
// than its samples' bytes (`stsz`, `trun`) can hold at its codec's highest rate (floor.ts). Those timing
// fields can be edited to say anything; the codecs' own frames cannot. A track of AAC is never less than its
// access units (the samples `stsz`/`stz2` or `trun` count) at the frame length and rate of its
// AudioSpecificConfig (aac.ts); one of Opus or MPEG audio never less than its samples' own durations, read from
// each sample's first bytes (where `stsc`/`stco`/`co64` and `stsz`, or `trun`, put it).

import { type AacFrames, esdsAac, esdsObjectType } from './aac';
import {
  AC3_BYTES_PER_SECOND,
  floorSeconds,
  LOSSLESS_BYTES_PER_SECOND,
  LOSSY_BYTES_PER_SECOND,
  lossyBytesPerSecond,
} from './floor';
import { mpegFrameSeconds } from './mpeg-audio';
import { OPUS_RATE, opusPacketSamples } from './opus';

/** A codec whose every sample says how long it is: Opus (its TOC byte), MPEG audio (its frame header). */
type SelfTimed = 'opus' | 'mpeg';

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
  /** how many samples (access units) the track has */
  frames: number;
  /** AAC: the longest frame and lowest rate of its sample entries; null when one of them is no AAC */
  aac: AacFrames | null;
  /** Opus or MPEG audio (every sample entry): its samples' own seconds, and the last one's */
  selfTimed: SelfTimed | null;
  played: number;
  lastPlayed: number;
  /** where the sample table's `stsc`, `stco` or `co64` (and its entries' width) and `stsz` are */
  stsc: [number, number] | null;
  stco: [number, number, number] | null;
  stsz: [number, number] | null;
}

/** a box type as the 32-bit number it is in the file (compared without making a string per box) */
const fourcc = (s: string) => Buffer.from(s, 'latin1').readUInt32BE(0);
const [TRAK, TKHD, MDHD, HDLR, STTS, STSZ, STZ2, STSC, STCO, CO64, STSD, TREX, MOOF, TFHD, TRUN] = [
  'trak',
  'tkhd',
  'mdhd',
  'hdlr',
  'stts',
  'stsz',
  'stz2',
  'stsc',
  'stco',
  'co64',
  'stsd',
  'trex',
  'moof',
  'tfhd',
  'trun',
].map(fourcc);
const [SOUN, DHLR, MP4A, ESDS, WAVE, OPUS, MP3] = [
  'soun',
  'dhlr',
  'mp4a',
  'esds',
  'wave',
  'Opus',
  '.mp3',
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

/** The content of the first `type` box among the boxes of `file[from, to)` (one level down into `wave`). */
function childBox(file: Buffer, from: number, to: number, type: number, depth = 0): [number, number] | null {
  for (let at = from; at + 8 <= to; ) {
    const size = file.readUInt32BE(at);
    if (size < 8) return null;
    const end = Math.min(to, at + size);
    const found = file.readUInt32BE(at + 4);
    if (found === type) return [at + 8, end];
    if (found === WAVE && depth === 0) {
      const inside = childBox(file, at + 8, end, type, 1);
      if (inside) return inside;
    }
    at += size;
  }
  return null;
}

/**
 * What the sample entry at `file[at, end)` holds that can be counted: AAC's frames (an `mp4a` whose `esds`
 * configures AAC), or a codec whose samples say their length (`Opus`; `.mp3`, or an `mp4a` of MPEG-1/2 audio).
 */
function sampleEntry(file: Buffer, at: number, end: number): AacFrames | SelfTimed | null {
  if (at + 36 > end) return null;
  const format = file.readUInt32BE(at + 4);
  if (format === OPUS) return 'opus';
  if (format === MP3) return 'mpeg';
  if (format !== MP4A) return null;
  // QuickTime's sound descriptions of version 1 and 2 are 16 and 36 bytes longer before their boxes
  const version = file.readUInt16BE(at + 16);
  const esds = childBox(file, at + 36 + (version === 1 ? 16 : version === 2 ? 36 : 0), end, ESDS);
  if (!esds) return null;
  const object = esdsObjectType(file, esds[0], esds[1]);
  return object === 0x69 || object === 0x6b ? 'mpeg' : esdsAac(file, esds[0], esds[1]);
}

/** How many of `count` samples the file can hold at `size` bytes each (or at least 1 when not known). */
const fitting = (file: Buffer, count: number, size: number) =>
  Math.min(count, Math.floor(file.length / Math.max(1, size)));

/**
 * How many bytes of samples are left to read. An honest file's samples do not overlap: they add up to its size
 * at most, each counted as 4 bytes at least (as its entry in `stsz` or `trun` takes). A file whose tables say
 * more (millions of runs of millions of 1-byte samples, all at the same place) is refused, and read no further.
 */
interface Budget {
  bytes: number;
}

/** Adds the seconds of the sample `file[at, at + size)` of a self-timed `track` (nothing when not in the file). */
function play(file: Buffer, budget: Budget, track: Track, at: number, size: number): void {
  if (size <= 0 || at < 0 || at + size > file.length || budget.bytes < 0) return;
  budget.bytes -= Math.max(4, size);
  const seconds =
    track.selfTimed === 'opus' ? opusPacketSamples(file, at, size) / OPUS_RATE : mpegFrameSeconds(file, at);
  track.played += seconds;
  track.lastPlayed = seconds;
}

/**
 * Plays each sample of a self-timed track from its sample table: `stsc` says how many samples each chunk
 * holds, `stco`/`co64` where each chunk is, `stsz` each sample's size. A table that goes back (a chunk named
 * twice) stops there, as it would have a file's chunks read over and over.
 */
function playSampleTable(file: Buffer, budget: Budget, track: Track): void {
  if (!track.stsc || !track.stco || !track.stsz) return;
  const [sc, se] = track.stsc;
  const [oc, oe, width] = track.stco;
  const [zc, ze] = track.stsz;
  const entries = Math.min(file.readUInt32BE(sc + 4), Math.floor((se - sc - 8) / 12));
  const chunks = Math.min(file.readUInt32BE(oc + 4), Math.floor((oe - oc - 8) / width));
  const constant = file.readUInt32BE(zc + 4);
  const count = constant
    ? file.readUInt32BE(zc + 8)
    : Math.min(file.readUInt32BE(zc + 8), Math.floor((ze - zc - 12) / 4));
  let sample = 0;
  for (let e = 0, chunk = 1; e < entries && sample < count; e++) {
    const first = file.readUInt32BE(sc + 8 + e * 12);
    const perChunk = file.readUInt32BE(sc + 12 + e * 12);
    const next = e + 1 < entries ? file.readUInt32BE(sc + 20 + e * 12) : chunks + 1;
    if (first < chunk || next <= first) return;
    for (chunk = first; chunk < next && chunk <= chunks && sample < count; chunk++) {
      let at =
        width === 8 ? u64(file, oc + 8 + (chunk - 1) * 8) : file.readUInt32BE(oc + 8 + (chunk - 1) * 4);
      for (let i = 0; i < perChunk && sample < count; i++, sample++) {
        const size = constant || file.readUInt32BE(zc + 12 + sample * 4);
        if (at + size > file.length || budget.bytes < 0) return;
        play(file, budget, track, at, size);
        at += size;
      }
    }
  }
}

/** Seconds of the longest sound track of an ISO base media file; null when it has none or is cut short. */
export function mp4Seconds(file: Buffer): number | null {
  if (!looksLikeMp4(file)) return null;
  const tracks: Track[] = [];
  const byId = new Map<number, Track>();
  let track: Track | null = null;
  let fragmentTrack: Track | null = null;
  let fragmentDefault = 0;
  let fragmentDefaultSize = 0;
  /** where the movie fragment starts and its last run's samples ended; the track fragment's base, next sample */
  let moofAt = 0;
  let runEnd = 0;
  let dataBase = 0;
  let dataAt = 0;
  /** more tracks than are remembered: the one left out could be the longest */
  let tooMany = false;
  const budget: Budget = { bytes: file.length };

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
            frames: 0,
            aac: null,
            selfTimed: null,
            played: 0,
            lastPlayed: 0,
            stsc: null,
            stco: null,
            stsz: null,
          };
          tracks.push(track);
        }
        if (type === MOOF) [moofAt, runEnd] = [at, at];
        walk(c, end, depth + 1);
      } else if (type === TKHD && track && c + 24 <= end) {
        track.id = file.readUInt32BE(c + (v1 ? 20 : 12));
        // a second track of the same id does not take the first's fragments (ffmpeg gives them to the first)
        if (!byId.has(track.id)) byId.set(track.id, track);
      } else if (type === MDHD && track && c + (v1 ? 32 : 20) <= end) {
        track.timescale = file.readUInt32BE(c + (v1 ? 20 : 12));
        const declared = v1 ? u64(file, c + 24) : file.readUInt32BE(c + 16);
        // all ones: unknown
        track.declared = declared === (v1 ? 2 ** 64 - 1 : 0xffff_ffff) ? 0 : declared;
      } else if (type === HDLR && track && c + 12 <= end && file.readUInt32BE(c + 4) !== DHLR) {
        // a QuickTime file's `minf` holds a data handler (`dhlr`, `url `/`alis`) after the media's own (`soun`)
        track.sound = file.readUInt32BE(c + 8) === SOUN;
      } else if (type === STTS && track && c + 8 <= end) {
        const count = Math.min(file.readUInt32BE(c + 4), Math.floor((end - c - 8) / 8));
        for (let i = 0; i < count; i++)
          track.samples += file.readUInt32BE(c + 8 + i * 8) * file.readUInt32BE(c + 12 + i * 8);
      } else if (type === STSZ && track && c + 12 <= end) {
        track.stsz = [c, end];
        const size = file.readUInt32BE(c + 4);
        const count = file.readUInt32BE(c + 8);
        if (size) {
          track.bytes += size * count;
          track.frames += fitting(file, count, size);
        } else {
          let i = 0;
          for (let p = c + 12; i < count && p + 4 <= end; i++, p += 4) track.bytes += file.readUInt32BE(p);
          track.frames += i;
        }
      } else if (type === STZ2 && track && c + 12 <= end) {
        // compact sample sizes: 4, 8 or 16 bits each
        const bits = file[c + 7]!;
        const fits = bits === 4 || bits === 8 || bits === 16 ? Math.floor(((end - c - 12) * 8) / bits) : 0;
        const count = Math.min(file.readUInt32BE(c + 8), fits);
        const last = c + 12 + Math.ceil((count * bits) / 8);
        // a byte at a time (a table can fill the file): two sizes in it, one, or a 16-bit size's high or low half
        for (let p = c + 12; p < last; p++) {
          const b = file[p]!;
          track.bytes += bits === 4 ? (b >> 4) + (b & 15) : bits === 8 || (p - c) & 1 ? b : b * 256;
        }
        if (bits === 4 && count & 1) track.bytes -= file[last - 1]! & 15; // the last byte's unused half
        track.frames += count;
      } else if (type === STSC && track && c + 8 <= end) track.stsc = [c, end];
      else if ((type === STCO || type === CO64) && track && c + 8 <= end)
        track.stco = [c, end, type === CO64 ? 8 : 4];
      else if (type === STSD && track && c + 16 <= end) {
        track.format = file.readUInt32BE(c + 12);
        if (c + 34 <= end) track.channels = file.readUInt16BE(c + 32); // at the entry's 24th byte
        // a track can switch sample entries: its frames are counted only when every entry is of one codec (AAC
        // at the lowest rate and longest frame)
        const entries = Math.min(file.readUInt32BE(c + 4), 16);
        let aac: AacFrames | null = null;
        let selfTimed: SelfTimed | null = null;
        for (let i = 0, p = c + 8; i < entries && p + 8 <= end; i++) {
          const size = file.readUInt32BE(p);
          const entry = size >= 8 ? sampleEntry(file, p, Math.min(end, p + size)) : null;
          if (typeof entry === 'string' && (i === 0 || selfTimed === entry)) selfTimed = entry;
          else if (entry && typeof entry !== 'string' && (i === 0 || aac))
            aac = aac
              ? { samples: Math.max(aac.samples, entry.samples), rate: Math.min(aac.rate, entry.rate) }
              : entry;
          else {
            [aac, selfTimed] = [null, null];
            break;
          }
          p += size;
        }
        track.aac = aac;
        track.selfTimed = selfTimed;
      } else if (type === TREX && c + 20 <= end) {
        const t = byId.get(file.readUInt32BE(c + 4));
        if (t) {
          t.defaultSampleDuration = file.readUInt32BE(c + 12);
          t.defaultSampleSize = file.readUInt32BE(c + 16);
        }
      } else if (type === TFHD && c + 8 <= end) {
        const flags = file.readUIntBE(c + 1, 3);
        fragmentTrack = byId.get(file.readUInt32BE(c + 4)) ?? null;
        // the fragment's samples are counted from its base offset when given, from the movie fragment when it
        // says so (default-base-is-moof), else from where the movie fragment's previous run ended (ISO BMFF, as
        // ffmpeg reads it): counted from the movie fragment, a second fragment's were read in the wrong place
        dataBase = flags & 0x01 && c + 16 <= end ? u64(file, c + 8) : flags & 0x02_0000 ? moofAt : runEnd;
        dataAt = dataBase;
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
        // the run's samples start at its data offset from the base, else where the previous run's ended
        if (flags & 0x01 && c + 12 <= end) dataAt = dataBase + file.readInt32BE(c + 8);
        let p = c + 8 + (flags & 0x01 ? 4 : 0) + (flags & 0x04 ? 4 : 0);
        const durations = (flags & 0x100) !== 0;
        const sizes = (flags & 0x200) !== 0;
        // the samples a decoder is given: as many as the run's table holds, or its count at the default size
        let frames = fitting(file, count, fragmentDefaultSize);
        if (durations || sizes) {
          const stride = 4 * (+durations + +sizes + ((flags >> 10) & 1) + ((flags >> 11) & 1));
          const sizeAt = durations ? 4 : 0;
          let i = 0;
          for (; i < count && p + stride <= end; i++, p += stride) {
            if (durations) fragmentTrack.samples += file.readUInt32BE(p);
            const size = sizes ? file.readUInt32BE(p + sizeAt) : fragmentDefaultSize;
            if (sizes) fragmentTrack.bytes += size;
            if (fragmentTrack.selfTimed) play(file, budget, fragmentTrack, dataAt, size);
            dataAt += size;
          }
          frames = i;
        } else {
          const size = fragmentDefaultSize;
          if (fragmentTrack.selfTimed && size > 0) {
            // only the run's samples inside the file are visited: one placed past its end is skipped at once
            // (walked sample by sample, thousands of runs of a file's length each held the thread for minutes)
            const inFile = Math.min(frames, Math.floor((file.length - dataAt) / size));
            for (let i = Math.max(0, Math.ceil(-dataAt / size)); i < inFile && budget.bytes >= 0; i++)
              play(file, budget, fragmentTrack, dataAt + i * size, size);
          }
          dataAt += count * size;
        }
        runEnd = dataAt;
        if (!durations) fragmentTrack.samples += count * fragmentDefault;
        if (!sizes) fragmentTrack.bytes += count * fragmentDefaultSize;
        fragmentTrack.frames += frames;
      }
      at = at + size;
    }
  };
  walk(0, file.length, 0);
  if (tooMany) return null;

  let seconds: number | null = null;
  for (const t of tracks) {
    // every access unit but the last is played whole (the last may be mostly the encoder's padding); the
    // timing fields are believed above that, as before (an honest file's are at least that long)
    if (t.selfTimed && t.sound) playSampleTable(file, budget, t);
    const frames =
      t.aac && t.frames > 1 ? ((t.frames - 1) * t.aac.samples) / t.aac.rate : t.played - t.lastPlayed;
    if (t.sound && (t.timescale > 0 || frames > 0)) {
      // the samples' bytes are in the file: a count that says more is damaged
      const max = BYTES_PER_SECOND.get(t.format) ?? LOSSLESS_BYTES_PER_SECOND;
      const floor = floorSeconds(
        Math.min(t.bytes, file.length),
        max === LOSSY_BYTES_PER_SECOND ? lossyBytesPerSecond(t.channels) : max,
      );
      const timing = t.timescale > 0 ? Math.max(t.declared, t.samples) / t.timescale : 0;
      seconds = Math.max(seconds ?? 0, timing, floor, frames);
    }
  }
  return budget.bytes < 0 ? null : seconds;
}
