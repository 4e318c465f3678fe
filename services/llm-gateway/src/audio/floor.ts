// The most bytes a second of audio can take, by codec family: a timing field (a timescale, a timestamp, a
// granule) can be edited to say anything, a track's own payload bytes cannot be shrunk without losing audio.
// Dividing them by these gives a floor no edited timing field can price a file under, and that no honest
// file reaches (its bytes a second are at most these).

/**
 * Lossy codecs (AAC, Opus, Vorbis, Speex, MPEG audio): 512 kbit/s for a stereo pair, above every encoder's
 * ceiling (Opus: 510); a surround track (its channel count known, 8 at most) gets that for each pair.
 */
export const LOSSY_BYTES_PER_SECOND = 64_000;
export const lossyBytesPerSecond = (channels: number): number =>
  LOSSY_BYTES_PER_SECOND * Math.ceil(Math.min(8, Math.max(1, channels)) / 2);
/** AC-3: 640 kbit/s. */
export const AC3_BYTES_PER_SECOND = 80_000;
/** DVD LPCM: 6.144 Mbit/s. */
export const DVD_LPCM_BYTES_PER_SECOND = 768_000;
/** Lossless or PCM of a format not known: 8 channels of 32-bit samples at 192 kHz. */
export const LOSSLESS_BYTES_PER_SECOND = 8 * 4 * 192_000;

/**
 * FLAC (native or in Ogg) of `channels` and `bits` per sample: a frame never holds more than its verbatim
 * samples and a few header bytes, and no recording runs above DXD's 352.8 kHz: twice 192 kHz of verbatim
 * samples covers both (8 % to spare for headers), whatever the sample rate says (an edited one must not move
 * the floor).
 */
export const flacBytesPerSecond = (channels: number, bits: number): number =>
  Math.min(LOSSLESS_BYTES_PER_SECOND, 2 * 192_000 * Math.max(1, channels) * Math.ceil(Math.max(1, bits) / 8));

/** Seconds `bytes` of audio take at least, at `maxBytesPerSecond`. */
export const floorSeconds = (bytes: number, maxBytesPerSecond: number): number => bytes / maxBytesPerSecond;
