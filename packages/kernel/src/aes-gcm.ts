import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';

/** The parts of one AES-256-GCM seal; each caller keeps its own stored form of them. */
export interface GcmParts {
  iv: Buffer;
  tag: Buffer;
  data: Buffer;
}

/** GCM's full tag. Without `authTagLength`, Node opens a value whose tag was cut to 4 bytes (2^32 guesses). */
const TAG_BYTES = 16;

/** Seals UTF-8 text under a 32-byte key with a random 96-bit IV. */
export function gcmSeal(key: Buffer, plain: string): GcmParts {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', key, iv, { authTagLength: TAG_BYTES });
  const data = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
  return { iv, tag: cipher.getAuthTag(), data };
}

/** The text of a seal; throws when it was made under another key, altered, or its tag is not whole. */
export function gcmOpen(key: Buffer, { iv, tag, data }: GcmParts): string {
  const decipher = createDecipheriv('aes-256-gcm', key, iv, { authTagLength: TAG_BYTES });
  decipher.setAuthTag(tag);
  return Buffer.concat([decipher.update(data), decipher.final()]).toString('utf8');
}
