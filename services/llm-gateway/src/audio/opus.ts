// Opus packets say their own length in their first byte (RFC 6716, 3.1), whatever container carries them and
// whatever its timing fields say: Ogg, Matroska/WebM and MP4 count them.

/** Samples (at 48 kHz) of one frame of each of the 32 configurations: SILK, hybrid, then CELT. */
const FRAME_SAMPLES = Uint16Array.from({ length: 32 }, (_, config) =>
  config < 12
    ? [480, 960, 1920, 2880][config & 3]!
    : config < 16
      ? [480, 960][config & 1]!
      : [120, 240, 480, 960][config & 3]!,
);

/**
 * Samples (at 48 kHz, whatever rate a header names) the Opus packet `file[at, at + size)` decodes to, from its TOC
 * byte (and, for code 3, the frame count in the next).
 */
export function opusPacketSamples(file: Buffer, at: number, size: number): number {
  const toc = file[at]!;
  const code = toc & 3;
  const frames = code === 0 ? 1 : code < 3 ? 2 : size > 1 ? file[at + 1]! & 0x3f : 0;
  const samples = FRAME_SAMPLES[toc >> 3]! * frames;
  return samples <= 5760 ? samples : 0; // at most 120 ms in a packet
}

/** Opus decodes at 48 kHz. */
export const OPUS_RATE = 48_000;
