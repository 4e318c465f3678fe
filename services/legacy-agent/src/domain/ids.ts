import { randomBytes } from 'node:crypto';

let lastMs = 0;
let sequence = 0;
/** random bytes drawn in bulk: one randomBytes call per 512 ids rather than per id */
let pool = Buffer.alloc(0);
let poolOffset = 0;

function random10(): Buffer {
  if (poolOffset + 10 > pool.length) {
    pool = randomBytes(10 * 512);
    poolOffset = 0;
  }
  poolOffset += 10;
  return pool.subarray(poolOffset - 10, poolOffset);
}

/**
 * A UUIDv7 (RFC 9562): 48 bits of Unix milliseconds, then a 12-bit counter and random bits, so ids made
 * by one process sort in creation order even within a millisecond (lists show intents as created).
 */
export function newId(): string {
  let ms = Date.now();
  if (ms <= lastMs) {
    sequence++;
    if (sequence > 0xfff) {
      lastMs++;
      sequence = 0;
    }
    ms = lastMs;
  } else {
    lastMs = ms;
    sequence = 0;
  }
  const bytes = Buffer.allocUnsafe(16);
  bytes.writeUIntBE(ms, 0, 6);
  random10().copy(bytes, 6);
  bytes[6] = 0x70 | (sequence >> 8);
  bytes[7] = sequence & 0xff;
  bytes[8] = 0x80 | (bytes[8]! & 0x3f);
  const hex = bytes.toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
