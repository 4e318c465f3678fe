/** Seconds of audio in a PCM WAV file, from its header; null when the file is not one. */
export function wavDurationSeconds(file: Buffer): number | null {
  if (file.length < 12 || file.toString('ascii', 0, 4) !== 'RIFF' || file.toString('ascii', 8, 12) !== 'WAVE')
    return null;
  let byteRate = 0;
  for (let at = 12; at + 8 <= file.length; ) {
    const id = file.toString('ascii', at, at + 4);
    const size = file.readUInt32LE(at + 4);
    if (id === 'fmt ' && at + 20 <= file.length) byteRate = file.readUInt32LE(at + 16);
    if (id === 'data') return byteRate ? Math.min(size, file.length - at - 8) / byteRate : null;
    at += 8 + size + (size % 2);
  }
  return null;
}
