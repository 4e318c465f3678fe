const FMT = 0x666d7420; // 'fmt '
const DATA = 0x64617461; // 'data'

/**
 * Seconds of audio in a RIFF/WAVE file: the bytes of its `data` chunks (all of them: a decoder plays every one)
 * over the byte rate its samples fill (rate, channels and sample size, which a decoder goes by). The `fmt `
 * chunk's own byte rate is believed only below that (a compressed codec's); above it, it would price audio that
 * a decoder plays for minutes as milliseconds.
 */
export function wavSeconds(file: Buffer): number | null {
  if (
    file.length < 12 ||
    file.toString('latin1', 0, 4) !== 'RIFF' ||
    file.toString('latin1', 8, 12) !== 'WAVE'
  )
    return null;
  let byteRate = 0;
  let bytes = 0;
  let data = false;
  for (let at = 12; at + 8 <= file.length; ) {
    const id = file.readUInt32BE(at);
    const size = file.readUInt32LE(at + 4);
    if (id === FMT && at + 24 <= file.length) {
      const filled =
        (file.readUInt32LE(at + 12) * file.readUInt16LE(at + 10) * file.readUInt16LE(at + 22)) / 8;
      const declared = file.readUInt32LE(at + 16);
      byteRate = filled > 0 ? Math.min(declared, filled) : declared;
    }
    if (id === DATA) {
      if (!byteRate) return null;
      data = true;
      const available = file.length - at - 8;
      // a recorder that could not seek back to the header leaves 0 or 0xFFFFFFFF: the data runs to the end
      if (size === 0 || size === 0xffff_ffff || size >= available) {
        bytes += available;
        break;
      }
      bytes += size;
    }
    at += 8 + size + (size % 2);
  }
  return data ? bytes / byteRate : null;
}
