/** Seconds of audio in a RIFF/WAVE file: its `data` chunk's bytes over the `fmt ` chunk's byte rate. */
export function wavSeconds(file: Buffer): number | null {
  if (
    file.length < 12 ||
    file.toString('latin1', 0, 4) !== 'RIFF' ||
    file.toString('latin1', 8, 12) !== 'WAVE'
  )
    return null;
  let byteRate = 0;
  for (let at = 12; at + 8 <= file.length; ) {
    const id = file.toString('latin1', at, at + 4);
    const size = file.readUInt32LE(at + 4);
    if (id === 'fmt ' && at + 20 <= file.length) byteRate = file.readUInt32LE(at + 16);
    if (id === 'data') {
      const available = file.length - at - 8;
      // a recorder that could not seek back to the header leaves 0 or 0xFFFFFFFF: the data runs to the end
      const bytes = size === 0 || size === 0xffff_ffff ? available : Math.min(size, available);
      return byteRate ? bytes / byteRate : null;
    }
    at += 8 + size + (size % 2);
  }
  return null;
}
