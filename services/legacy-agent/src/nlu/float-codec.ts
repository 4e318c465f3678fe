/**
 * Compact, exact storage of model weights: weights are rounded to float32 when training ends (the trained model
 * computes with those rounded values), so base64 of their little-endian float32 bytes restores them bit for bit.
 */

/** Round every element to the nearest float32 in place. */
export function roundToFloat32(values: Float64Array): Float64Array {
  for (let i = 0; i < values.length; i++) values[i] = Math.fround(values[i]!);
  return values;
}

export function encodeFloat32(values: ArrayLike<number>): string {
  const buf = Buffer.alloc(values.length * 4);
  for (let i = 0; i < values.length; i++) buf.writeFloatLE(values[i]!, i * 4);
  return buf.toString('base64');
}

export function decodeFloat32(encoded: string): Float64Array {
  const buf = Buffer.from(encoded, 'base64');
  const out = new Float64Array(buf.length >> 2);
  for (let i = 0; i < out.length; i++) out[i] = buf.readFloatLE(i * 4);
  return out;
}

/** Same as decodeFloat32, into float32 storage (for large weight matrices). */
export function decodeFloat32Array(encoded: string): Float32Array {
  const buf = Buffer.from(encoded, 'base64');
  const out = new Float32Array(buf.length >> 2);
  for (let i = 0; i < out.length; i++) out[i] = buf.readFloatLE(i * 4);
  return out;
}
