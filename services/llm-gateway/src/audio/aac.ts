// AAC's AudioSpecificConfig (ISO 14496-3, 1.6.2.1), as an MP4 `esds` box carries it: how many samples each
// access unit decodes to and at which rate. A decoder is configured by it, not by the container's timescale
// or durations: access units × samples ÷ rate is what it plays, whatever those say.

const RATES = [
  96_000, 88_200, 64_000, 48_000, 44_100, 32_000, 24_000, 22_050, 16_000, 12_000, 11_025, 8_000, 7_350,
];
/** object types whose config opens with GASpecificConfig (AAC Main, LC, SSR, LTP, scalable, TwinVQ, ER…) */
const GENERAL_AUDIO = new Set([1, 2, 3, 4, 6, 7, 17, 19, 20, 21, 22]);
const SBR = 5;
const PS = 29;
const LOW_DELAY = 23;
const ENHANCED_LOW_DELAY = 39;

export interface AacFrames {
  /** samples an access unit decodes to at `rate` (1024 or 960; 512 or 480 for the low-delay types) */
  samples: number;
  /**
   * the core coder's rate. With SBR (HE-AAC, signalled or found in the stream) the decoder plays twice the
   * samples at twice the rate: the same seconds, so neither the extension rate nor 2048 samples enter.
   */
  rate: number;
}

/** A big-endian bit reader over `file[from, to)`; reads past the end give -1. */
function bits(file: Buffer, from: number, to: number) {
  let at = from * 8;
  return (n: number): number => {
    if (at + n > to * 8) return -1;
    let v = 0;
    for (let i = 0; i < n; i++, at++) v = v * 2 + ((file[at >> 3]! >> (7 - (at & 7))) & 1);
    return v;
  };
}

/** Frames of the AudioSpecificConfig in `file[from, to)`, or null when it is no AAC a decoder plays. */
function audioSpecificConfig(file: Buffer, from: number, to: number): AacFrames | null {
  const read = bits(file, from, to);
  const objectType = () => {
    const t = read(5);
    return t === 31 ? 32 + read(6) : t;
  };
  const rate = () => {
    const index = read(4);
    return index === 15 ? read(24) : (RATES[index] ?? -1);
  };
  let type = objectType();
  const core = rate();
  if (read(4) < 0) return null; // channel configuration
  if (type === SBR || type === PS) {
    if (rate() < 0) return null; // the extension's (output) rate
    type = objectType();
    if (type === 22 && read(4) < 0) return null;
  }
  if (core <= 0) return null;
  // frameLengthFlag: the first bit of GASpecificConfig and of ELDSpecificConfig
  const short = read(1);
  if (short < 0) return null;
  if (GENERAL_AUDIO.has(type)) return { samples: short ? 960 : 1024, rate: core };
  if (type === LOW_DELAY || type === ENHANCED_LOW_DELAY) return { samples: short ? 480 : 512, rate: core };
  return null;
}

/**
 * The DecoderConfigDescriptor of an `esds` box's content `file[from, to)`: its object type (0x40 MPEG-4 audio,
 * 0x66-0x68 MPEG-2 AAC, 0x69 and 0x6B MPEG-2 and MPEG-1 audio...) and where its DecoderSpecificInfo is.
 */
function decoderConfig(
  file: Buffer,
  from: number,
  to: number,
): { object: number; info: [number, number] | null } | null {
  let at = from + 4; // version and flags
  /** reads a descriptor's tag and size at `at`, leaving `at` on its content; its end, or -1 */
  const descriptor = (tag: number): number => {
    if (at >= to || file[at] !== tag) return -1;
    at++;
    let size = 0;
    for (let i = 0; i < 4 && at < to; i++) {
      const b = file[at++]!;
      size = size * 128 + (b & 0x7f);
      if (!(b & 0x80)) break;
    }
    return Math.min(to, at + size);
  };
  if (descriptor(0x03) < 0 || at + 3 > to) return null; // ES_Descriptor
  const flags = file[at + 2]!;
  at += 3 + (flags & 0x80 ? 2 : 0);
  if (flags & 0x40) at += 1 + (file[at] ?? 0);
  if (flags & 0x20) at += 2;
  const config = descriptor(0x04);
  if (config < 0 || at + 13 > config) return null;
  const object = file[at]!;
  at += 13;
  const info = descriptor(0x05);
  return { object, info: info < 0 ? null : [at, info] };
}

/** The object type of an `esds` box's content `file[from, to)`, or -1. */
export const esdsObjectType = (file: Buffer, from: number, to: number): number =>
  decoderConfig(file, from, to)?.object ?? -1;

/** The frames of the AAC an `esds` box's content `file[from, to)` configures, else null. */
export function esdsAac(file: Buffer, from: number, to: number): AacFrames | null {
  const config = decoderConfig(file, from, to);
  // MPEG-4 audio, or MPEG-2 AAC (Main, LC, SSR): the others (MPEG-1/2 audio, Vorbis…) have no AudioSpecificConfig
  if (!config?.info || (config.object !== 0x40 && (config.object < 0x66 || config.object > 0x68)))
    return null;
  return audioSpecificConfig(file, config.info[0], config.info[1]);
}
