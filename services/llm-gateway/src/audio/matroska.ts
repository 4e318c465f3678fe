// Matroska and WebM: the longest audio track's span, from its blocks' timestamps (cluster timestamp plus
// block offset, and the last block's duration), or the segment's declared Duration when that is longer.
// A browser's MediaRecorder writes no Duration and clusters of unknown size: both are read. Never less than
// the track's blocks' bytes can hold at its codec's highest rate (floor.ts): timestamps and their scale can
// be edited to say anything. Opus cannot: a track of it is never less than its packets' own durations (each
// frame of each block, laced ones included, says it in its first byte, once the bytes its track strips from
// every frame are put back; opus.ts).

import {
  AC3_BYTES_PER_SECOND,
  floorSeconds,
  LOSSLESS_BYTES_PER_SECOND,
  LOSSY_BYTES_PER_SECOND,
  lossyBytesPerSecond,
} from './floor';
import { OPUS_RATE, opusPacketSamples } from './opus';

// element ids, as written (length marker kept)
const SEGMENT = 0x18538067;
const INFO = 0x1549a966;
const TIMESTAMP_SCALE = 0x2ad7b1;
const DURATION = 0x4489;
const TRACKS = 0x1654ae6b;
const TRACK_ENTRY = 0xae;
const TRACK_NUMBER = 0xd7;
const TRACK_TYPE = 0x83;
const DEFAULT_DURATION = 0x23e383;
const CLUSTER = 0x1f43b675;
const CLUSTER_TIMESTAMP = 0xe7;
const SIMPLE_BLOCK = 0xa3;
const BLOCK_GROUP = 0xa0;
const BLOCK = 0xa1;
const BLOCK_DURATION = 0x9b;
const CODEC_ID = 0x86;
const AUDIO = 0xe1;
const CHANNELS = 0x9f;
const CONTENT_ENCODINGS = 0x6d80;
const CONTENT_ENCODING = 0x6240;
const CONTENT_ENCODING_SCOPE = 0x5032;
const CONTENT_ENCODING_TYPE = 0x5033;
const CONTENT_COMPRESSION = 0x5034;
const CONTENT_COMP_ALGO = 0x4254;
const CONTENT_COMP_SETTINGS = 0x4255;
/** ContentCompAlgo: header stripping (ContentCompSettings, the bytes removed from the start of every frame) */
const HEADER_STRIPPING = 3;

const OPUS = Buffer.from('A_OPUS');
/**
 * the most bytes a second of each codec family, its CodecID starting with these (`A_AAC/MPEG4/LC` is AAC):
 * decoders match them so (ffmpeg plays an `A_OPUSX` track as Opus); others are taken as lossless
 */
const BYTES_PER_SECOND: Array<[Buffer, number]> = [
  [OPUS, LOSSY_BYTES_PER_SECOND],
  [Buffer.from('A_VORBIS'), LOSSY_BYTES_PER_SECOND],
  [Buffer.from('A_AAC'), LOSSY_BYTES_PER_SECOND],
  [Buffer.from('A_MPEG'), LOSSY_BYTES_PER_SECOND],
  [Buffer.from('A_AC3'), AC3_BYTES_PER_SECOND],
];

/** Whether the CodecID in `file[from, to)` starts with `id`, compared in place (a file can hold millions). */
const startsWith = (file: Buffer, from: number, to: number, id: Buffer) =>
  from + id.length <= to && file.compare(id, 0, id.length, from, from + id.length) === 0;

/** The most bytes a second of the CodecID in `file[from, to)`. */
function codecBytesPerSecond(file: Buffer, from: number, to: number): number {
  for (const [id, max] of BYTES_PER_SECOND) if (startsWith(file, from, to, id)) return max;
  return LOSSLESS_BYTES_PER_SECOND;
}

/** A laced block's frame sizes, as read (reused: a file can hold millions of blocks, each of up to 256 frames). */
const laceSizes = new Float64Array(255);

/** A header-stripped frame's first two bytes, put back (reused, as the lace sizes). */
const packetStart = Buffer.alloc(2);

/** The last integer `vint` read (one object, reused: a file can hold millions of elements). */
const read = { length: 0, value: 0, unknown: false };

/**
 * Reads the variable-length integer at `at` into `read`, its length marker removed (`keepMarker`: kept, as
 * element ids are written); false when there is none. All value bits set means "unknown" (a size).
 */
function vint(file: Buffer, at: number, maxLength: number, keepMarker: boolean): boolean {
  const first = file[at];
  if (first === undefined || first === 0) return false;
  const length = Math.clz32(first) - 23;
  if (length > maxLength || at + length > file.length) return false;
  let value = keepMarker ? first : first & (0xff >> length);
  let allOnes = value === 0xff >> length;
  for (let i = 1; i < length; i++) {
    value = value * 256 + file[at + i]!;
    allOnes &&= file[at + i] === 0xff;
  }
  read.length = length;
  read.value = value;
  read.unknown = !keepMarker && allOnes;
  return true;
}

const uint = (file: Buffer, from: number, to: number) => {
  let v = 0;
  for (let i = from; i < to && i < from + 8; i++) v = v * 256 + file[i]!;
  return v;
};

interface Track {
  type: number;
  /** nanoseconds */
  defaultDuration: number;
  first: number | null;
  last: number;
  /** how long the last block lasts: its BlockDuration, else the gap before it */
  lastLength: number;
  /** its blocks' bytes (frames, lacing included) */
  bytes: number;
  maxBytesPerSecond: number;
  channels: number;
  opus: boolean;
  /** where the bytes stripped from the start of every frame are (header stripping; empty: none) */
  strippedFrom: number;
  strippedTo: number;
  /** its blocks' frames read as Opus packets: their samples, and the last one's (whatever the codec: it is known at the end) */
  opusSamples: number;
  lastPacketSamples: number;
}

/** Seconds of the longest audio track of a Matroska or WebM file; null when it is not one or has no audio. */
export function matroskaSeconds(file: Buffer): number | null {
  if (file.length < 4 || file.readUInt32BE(0) !== 0x1a45dfa3) return null;
  let scale = 1_000_000; // nanoseconds per timestamp tick
  let declared = 0;
  let sawSegment = false;
  const tracks = new Map<number, Track>();
  // a file can name millions of track numbers: the first few dozen are enough for any real one, and a file of
  // more is refused (the track left out could be the longest)
  let tooMany = false;
  /** a track's frames were read before its entry said bytes are stripped from them */
  let misread = false;
  const trackOf = (n: number): Track | null => {
    const known = tracks.get(n);
    if (known) return known;
    if (tracks.size >= 64) {
      tooMany = true;
      return null;
    }
    const t: Track = {
      type: 0,
      defaultDuration: 0,
      first: null,
      last: 0,
      lastLength: 0,
      bytes: 0,
      maxBytesPerSecond: LOSSLESS_BYTES_PER_SECOND,
      channels: 0,
      opus: false,
      strippedFrom: 0,
      strippedTo: 0,
      opusSamples: 0,
      lastPacketSamples: 0,
    };
    tracks.set(n, t);
    return t;
  };
  const newEntry = () => ({
    number: 0,
    type: 0,
    defaultDuration: 0,
    maxBytesPerSecond: LOSSLESS_BYTES_PER_SECOND,
    channels: 0,
    opus: false,
    /** its first ContentEncoding (the one ffmpeg applies): how many there are, its type, scope, compression */
    encodings: 0,
    encodingType: 0,
    encodingScope: 1,
    compression: 0,
    settingsFrom: 0,
    settingsTo: 0,
  });
  let entry = newEntry();
  const declaredTracks = new Set<number>();
  let cluster = 0;
  let lastBlock: Track | null = null;

  /**
   * The frame of `file[from, to)` as an Opus packet: its samples counted for `track`. A decoder is given it
   * with the track's stripped header bytes put back (ffmpeg does): its TOC is theirs, not the first byte stored.
   */
  const packet = (track: Track, from: number, to: number) => {
    const stripped = track.strippedTo - track.strippedFrom;
    track.bytes += stripped; // they are the frame's bytes too (the floor counts them)
    const size = to - from + stripped;
    if (to < from || size <= 0) return;
    let samples: number;
    if (stripped === 0) samples = opusPacketSamples(file, from, size);
    else {
      packetStart[0] = file[track.strippedFrom]!;
      packetStart[1] = stripped > 1 ? file[track.strippedFrom + 1]! : to > from ? file[from]! : 0;
      samples = opusPacketSamples(packetStart, 0, size);
    }
    track.opusSamples += samples;
    track.lastPacketSamples = samples;
  };

  /** The frames of a block's payload `file[from, to)`, laced as its `flags` say (Xiph, fixed-size or EBML). */
  const frames = (track: Track, flags: number, from: number, to: number) => {
    const lacing = (flags >> 1) & 3;
    if (lacing === 0) return packet(track, from, to);
    if (from >= to) return;
    const count = file[from]! + 1;
    let at = from + 1;
    if (lacing === 2) {
      const size = Math.floor((to - at) / count);
      for (let i = 0; i < count; i++, at += size) packet(track, at, at + size);
      return;
    }
    // the sizes of all frames but the last, which takes what is left; a lace that overruns its block is damaged
    for (let i = 0, size = 0; i < count - 1; i++) {
      if (lacing === 1) {
        let s = 0;
        while (at < to && file[at] === 255) s += file[at++]!;
        if (at >= to) return;
        size = s + file[at++]!;
      } else {
        if (!vint(file, at, 8, false)) return;
        const bias = i === 0 ? 0 : 2 ** (7 * read.length - 1) - 1;
        size = i === 0 ? read.value : size + read.value - bias;
        at += read.length;
      }
      if (size < 0) return;
      laceSizes[i] = size;
    }
    for (let i = 0; i < count - 1; i++) {
      const size = laceSizes[i]!;
      if (at + size > to) return;
      packet(track, at, at + size);
      at += size;
    }
    packet(track, at, to);
  };

  const block = (from: number, to: number) => {
    if (!vint(file, from, 8, false) || from + read.length + 2 > to) return;
    const track = trackOf(read.value);
    if (!track) return;
    const at = cluster + file.readInt16BE(from + read.length);
    track.bytes += Math.max(0, to - (from + read.length + 3)); // after the track number, timestamp and flags
    if (from + read.length + 3 <= to)
      frames(track, file[from + read.length + 2]!, from + read.length + 3, to);
    track.first = Math.min(track.first ?? at, at);
    lastBlock = null;
    if (at >= track.last) {
      track.lastLength = at - track.last;
      track.last = at;
      lastBlock = track;
    }
  };

  const walk = (from: number, to: number, depth: number) => {
    for (let at = from; at < to; ) {
      if (!vint(file, at, 4, true)) return;
      const v = read.value;
      const sizeAt = at + read.length;
      if (!vint(file, sizeAt, 8, false)) return;
      const unknown = read.unknown;
      const body = sizeAt + read.length;
      const size = read.value;
      const end = unknown ? to : Math.min(to, body + size);
      if (
        v === SEGMENT ||
        v === INFO ||
        v === TRACKS ||
        v === CLUSTER ||
        v === BLOCK_GROUP ||
        v === AUDIO ||
        v === CONTENT_ENCODINGS ||
        v === CONTENT_COMPRESSION
      ) {
        if (v === SEGMENT) sawSegment = true;
        // of unknown size (a live recording's segment and clusters): its children simply follow
        if (unknown) {
          at = body;
          continue;
        }
        if (depth < 8) walk(body, end, depth + 1);
      } else if (v === SIMPLE_BLOCK || v === BLOCK) block(body, end);
      else if (v === CLUSTER_TIMESTAMP) cluster = uint(file, body, end);
      else if (v === BLOCK_DURATION) {
        if (lastBlock) (lastBlock as Track).lastLength = uint(file, body, end);
      } else if (v === TRACK_ENTRY) {
        entry = newEntry();
        if (depth < 8 && !unknown) walk(body, end, depth + 1);
        // a track number's first entry is the one decoders give its blocks to (ffmpeg): a later one of the same
        // number (a video track) must not turn the audio's blocks into something unmeasured
        const track = entry.number && !declaredTracks.has(entry.number) ? trackOf(entry.number) : null;
        if (track) {
          declaredTracks.add(entry.number);
          const stripping =
            entry.encodings > 0 &&
            entry.encodingType === 0 &&
            (entry.encodingScope & 1) !== 0 &&
            entry.compression === HEADER_STRIPPING;
          // its blocks, read before it, were counted without the stripped bytes: what they hold is not known
          if (stripping && entry.settingsTo > entry.settingsFrom && track.first !== null) misread = true;
          // frames compressed otherwise (zlib, bzlib, LZO) or encrypted are not the codec's bytes: a zlib header
          // read as an Opus TOC priced 2.55 s at 1.26. No recorder writes them: refused, not guessed
          if (entry.encodings > 0 && (entry.encodingScope & 1) !== 0 && !stripping) misread = true;
          Object.assign(track, {
            type: entry.type,
            defaultDuration: entry.defaultDuration,
            maxBytesPerSecond: entry.maxBytesPerSecond,
            channels: entry.channels,
            opus: entry.opus,
            strippedFrom: stripping ? entry.settingsFrom : 0,
            strippedTo: stripping ? entry.settingsTo : 0,
          });
        }
      } else if (v === TRACK_NUMBER) entry.number = uint(file, body, end);
      else if (v === TRACK_TYPE) entry.type = uint(file, body, end);
      else if (v === DEFAULT_DURATION) entry.defaultDuration = uint(file, body, end);
      else if (v === CHANNELS) entry.channels = uint(file, body, end);
      else if (v === CONTENT_ENCODING) {
        // ffmpeg applies a track's first ContentEncoding only
        if (++entry.encodings === 1 && depth < 8 && !unknown) walk(body, end, depth + 1);
      } else if (v === CONTENT_ENCODING_TYPE) entry.encodingType = uint(file, body, end);
      else if (v === CONTENT_ENCODING_SCOPE) entry.encodingScope = uint(file, body, end);
      else if (v === CONTENT_COMP_ALGO) entry.compression = uint(file, body, end);
      else if (v === CONTENT_COMP_SETTINGS) [entry.settingsFrom, entry.settingsTo] = [body, end];
      else if (v === CODEC_ID) {
        entry.maxBytesPerSecond = codecBytesPerSecond(file, body, end);
        entry.opus = startsWith(file, body, end, OPUS);
      } else if (v === TIMESTAMP_SCALE) scale = uint(file, body, end) || scale;
      else if (v === DURATION)
        declared = end - body === 4 ? file.readFloatBE(body) : end - body === 8 ? file.readDoubleBE(body) : 0;
      else if (unknown) return; // an element of unknown size cannot be skipped
      at = end;
    }
  };
  walk(0, file.length, 0);
  if (!sawSegment || tooMany || misread) return null;

  const all = [...tracks.values()];
  // the audio tracks; a file whose Tracks are missing is taken as all audio, one that has none as no audio
  const audio = all.some((t) => t.type !== 0) ? all.filter((t) => t.type === 2) : all;
  if (audio.length === 0) return null;
  let starts = 0;
  let ticks = 0;
  let floor = 0;
  for (const t of audio) {
    const max =
      t.maxBytesPerSecond === LOSSY_BYTES_PER_SECOND ? lossyBytesPerSecond(t.channels) : t.maxBytesPerSecond;
    floor = Math.max(floor, floorSeconds(t.bytes, max));
    // every packet but the last is played whole (the last may be mostly padding, as the pre-skip is)
    if (t.opus) floor = Math.max(floor, (t.opusSamples - t.lastPacketSamples) / OPUS_RATE);
    if (t.first === null) continue;
    const lastLength = t.defaultDuration ? t.defaultDuration / scale : t.lastLength;
    starts = Math.max(starts, t.last - t.first);
    ticks = Math.max(ticks, t.last - t.first + lastLength);
  }
  // the declared Duration when every block starts within it, else the blocks' span
  const duration = Number.isFinite(declared) && declared >= starts ? declared : ticks;
  return Math.max((duration * scale) / 1e9, floor);
}
