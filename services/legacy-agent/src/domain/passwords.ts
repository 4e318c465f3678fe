import { randomBytes, scrypt, timingSafeEqual } from 'node:crypto';
import type { AccountDoc } from '../persistence/collections';

export type PasswordHash = AccountDoc['password'];

const KEY_LENGTH = 64;
const R = 8;
const P = 1;

function scryptAsync(password: string, salt: Buffer, N: number, r: number, p: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    // maxmem must cover 128 * N * r bytes; the default (32 MiB) is exactly the limit at N = 2^15.
    scrypt(
      password.normalize('NFKC'),
      salt,
      KEY_LENGTH,
      { N, r, p, maxmem: 256 * N * r + 1024 * 1024 },
      (err, key) => (err ? reject(err) : resolve(key)),
    );
  });
}

/** scrypt with a 16-byte per-user salt; the parameters are stored with the hash so they can be raised later. */
export async function hashPassword(password: string, N: number): Promise<PasswordHash> {
  const salt = randomBytes(16);
  const hash = await scryptAsync(password, salt, N, R, P);
  return { algorithm: 'scrypt', N, r: R, p: P, salt: salt.toString('base64'), hash: hash.toString('base64') };
}

export async function verifyPassword(password: string, stored: PasswordHash): Promise<boolean> {
  const expected = Buffer.from(stored.hash, 'base64');
  const actual = await scryptAsync(
    password,
    Buffer.from(stored.salt, 'base64'),
    stored.N,
    stored.r,
    stored.p,
  );
  return actual.length === expected.length && timingSafeEqual(actual, expected);
}
