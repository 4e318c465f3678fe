// Ogg (ogg, oga, opus): pages and packets, never decoded. Opus's duration is the sum of its packets'
// durations (each packet's first byte says it); Vorbis, FLAC and Speex take the last granule position,
// but never less than their packets can hold, so a file cannot claim a second and carry an hour. Every codec
// is also never less than its audio packets' bytes can hold at its highest rate (floor.ts).

import { flacBytesPerSecond, floorSeconds, LOSSY_BYTES_PER_SECOND, lossyBytesPerSecond } from './floor';
import { opusPacketSamples } from './opus';

interface Stream {
  codec: 'opus' | 'vorbis' | 'flac' | 'speex';
  /** granule positions count samples at this rate */
  rate: number;
  headerPackets: number;
  /** Opus: samples to drop at the start */
  preSkip: number;
  /** the fewest samples an audio packet after the first one decodes to */
  minPacketSamples: number;
  /** the most samples one packet can decode to (to tell a stream that starts at 0 from a cut one) */
  maxPacketSamples: number;
  packets: number;
  /** Opus: the samples of its audio packets */
  packetSamples: number;
  firstGranule: number | null;
  packetsToFirstGranule: number;
  lastGranule: number;
  /** the last packet of the previous page goes on in the next one */
  open: boolean;
  link: number;
  /** the audio packets' bytes */
  bytes: number;
  maxBytesPerSecond: number;
}

/** The stream a beginning-of-stream packet opens, or null when it is no audio codec we know. */
function openStream(p: Buffer, link: number): Stream | null {
  const base = {
    packets: 0,
    packetSamples: 0,
    firstGranule: null,
    packetsToFirstGranule: 0,
    lastGranule: 0,
    open: false,
    link,
    preSkip: 0,
    bytes: 0,
    maxBytesPerSecond: LOSSY_BYTES_PER_SECOND,
  };
  if (p.toString('latin1', 0, 8) === 'OpusHead' && p.length >= 12)
    return {
      ...base,
      codec: 'opus',
      maxBytesPerSecond: lossyBytesPerSecond(p[9]!),
      rate: 48_000,
      headerPackets: 2,
      preSkip: p.readUInt16LE(10),
      minPacketSamples: 0,
      maxPacketSamples: 5760,
    };
  if (p.toString('latin1', 0, 7) === '\x01vorbis' && p.length >= 29) {
    const rate = p.readUInt32LE(12);
    const small = 1 << (p[28]! & 0x0f);
    const large = 1 << (p[28]! >> 4);
    return rate
      ? {
          ...base,
          codec: 'vorbis',
          maxBytesPerSecond: lossyBytesPerSecond(p[11]!),
          rate,
          headerPackets: 3,
          minPacketSamples: small / 2,
          maxPacketSamples: large,
        }
      : null;
  }
  if (p.toString('latin1', 0, 5) === '\x7fFLAC' && p.length >= 17 + 18) {
    const format = p.readUInt32BE(17 + 10); // rate: 20 bits, channels - 1: 3, bits per sample - 1: 5
    const rate = format >>> 12;
    const maxBlock = p.readUInt16BE(17 + 2);
    return rate
      ? {
          ...base,
          maxBytesPerSecond: flacBytesPerSecond(((format >> 9) & 7) + 1, ((format >> 4) & 31) + 1),
          codec: 'flac',
          rate,
          headerPackets: 1 + p.readUInt16BE(7),
          minPacketSamples: 0,
          maxPacketSamples: maxBlock || 65_535,
        }
      : null;
  }
  if (p.toString('latin1', 0, 8) === 'Speex   ' && p.length >= 72) {
    const rate = p.readUInt32LE(36);
    const perPacket = Math.max(1, p.readInt32LE(64)) * p.readUInt32LE(56);
    const extraHeaders = Math.min(p.readUInt32LE(68), 16);
    return rate
      ? {
          ...base,
          codec: 'speex',
          rate,
          headerPackets: 2 + extraHeaders,
          minPacketSamples: 0,
          maxPacketSamples: perPacket,
        }
      : null;
  }
  return null;
}

const NO_GRANULE = 0xffff_ffff;
const CAPTURE = 0x4f676753; // 'OggS'

/** Seconds of audio in an Ogg file (the longest audio stream of each chained link, links added); null when none. */
export function oggSeconds(file: Buffer): number | null {
  if (file.toString('latin1', 0, 4) !== 'OggS') return null;
  const streams = new Map<number, Stream>();
  const unknown = new Set<number>();
  let link = 0;
  let inData = false;
  for (let at = 0; at + 27 <= file.length; ) {
    if (file.readUInt32BE(at) !== CAPTURE || file[at + 4] !== 0 || file[at + 5]! > 7) {
      // to the next capture pattern (a tight loop: a file of 'OggS' repeated is 6 million candidates)
      at++;
      while (
        at + 27 <= file.length &&
        !(file[at] === 0x4f && file.readUInt32BE(at) === CAPTURE && file[at + 4] === 0)
      )
        at++;
      continue;
    }
    const flags = file[at + 5]!;
    const granuleLow = file.readUInt32LE(at + 6);
    const granuleHigh = file.readUInt32LE(at + 10);
    const serial = file.readUInt32LE(at + 14);
    const segments = file[at + 26]!;
    const body = at + 27 + segments;
    if (body > file.length) break;
    let length = 0;
    for (let i = 0; i < segments; i++) length += file[at + 27 + i]!;
    if (body + length > file.length) break; // a page cut short: its granule is not reached
    if (flags & 2) {
      if (inData) link++; // a stream beginning after another link's data: chained, not multiplexed
      inData = false;
    } else inData = true;
    let stream = streams.get(serial);
    // a file can open any number of streams: a few dozen are remembered, and a file of more is refused (the
    // stream left out could be the longest)
    if (!stream && !unknown.has(serial)) {
      if (streams.size + unknown.size >= 64) return null;
      const opened = flags & 2 ? openStream(file.subarray(body, body + length), link) : null;
      if (opened) streams.set(serial, opened);
      else unknown.add(serial);
      stream = opened ?? undefined;
    }
    if (stream) {
      if (!(flags & 1)) stream.open = false; // a continuation that never came
      let pos = body;
      for (let i = 0; i < segments; i++) {
        const lace = file[at + 27 + i]!;
        if (!stream.open && lace > 0) {
          if (stream.packets >= stream.headerPackets && stream.codec === 'opus')
            stream.packetSamples += opusPacketSamples(file, pos, lace);
          stream.packets++;
        }
        if (stream.packets > stream.headerPackets) stream.bytes += lace;
        stream.open = lace === 255;
        pos += lace;
      }
      const granule = granuleHigh * 2 ** 32 + granuleLow;
      if (
        !(granuleLow === NO_GRANULE && granuleHigh === NO_GRANULE) &&
        stream.packets > stream.headerPackets
      ) {
        if (stream.firstGranule === null) {
          stream.firstGranule = granule;
          stream.packetsToFirstGranule = stream.packets - stream.headerPackets;
        }
        stream.lastGranule = Math.max(stream.lastGranule, granule);
      }
    }
    at = body + length;
  }
  const links = new Map<number, number>();
  for (const s of streams.values()) {
    const audioPackets = s.packets - s.headerPackets;
    let samples: number;
    if (s.codec === 'opus') {
      // the last granule trims the last packet (at most 120 ms); one that says otherwise is not believed
      const packets = s.packetSamples - s.preSkip;
      const granule = s.lastGranule - s.preSkip;
      samples = granule <= packets && granule >= packets - 5760 ? granule : packets;
    } else {
      // a stream cut out of a longer one (a radio recording) starts at a granule position far from 0
      const first = s.firstGranule ?? 0;
      const start = first > s.packetsToFirstGranule * s.maxPacketSamples ? first : 0;
      // the first audio packet decodes to nothing, the last may be trimmed
      samples = Math.max(s.lastGranule - start, (audioPackets - 2) * s.minPacketSamples);
    }
    const seconds = Math.max(0, samples / s.rate, floorSeconds(s.bytes, s.maxBytesPerSecond));
    links.set(s.link, Math.max(links.get(s.link) ?? 0, seconds));
  }
  if (links.size === 0) return null;
  return [...links.values()].reduce((a, b) => a + b, 0);
}
