/**
 * Compact, exact storage of model weights: weights are rounded to float32 when training ends (the trained model
 * computes with those rounded values), so base64 of their little-endian float32 bytes restores them bit for bit.
 */
import { endianness } from 'node:os';

const LITTLE_ENDIAN = endianness() === 'LE';

/** Round every element to the nearest float32 in place. */
export function roundToFloat32(values: Float64Array): Float64Array {
  for (let i = 0; i < values.length; i++) values[i] = Math.fround(values[i]!);
  return values;
}

export function encodeFloat32(values: ArrayLike<number>): string {
  if (LITTLE_ENDIAN && values instanceof Float32Array)
    return Buffer.from(values.buffer, values.byteOffset, values.byteLength).toString('base64');
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

/**
 * Same as decodeFloat32, into float32 storage (for large weight matrices). On little-endian hosts the bytes are
 * copied as they are (a memcpy instead of one read per value: a 100-intent model's weights load in ~1 ms).
 */
export function decodeFloat32Array(encoded: string): Float32Array {
  const buf = Buffer.from(encoded, 'base64');
  const out = new Float32Array(buf.length >> 2);
  if (LITTLE_ENDIAN) new Uint8Array(out.buffer).set(buf.subarray(0, out.length * 4));
  else for (let i = 0; i < out.length; i++) out[i] = buf.readFloatLE(i * 4);
  return out;
}
