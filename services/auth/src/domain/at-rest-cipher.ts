import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';

const PREFIX = 'enc:v1:';
/** GCM's full tag: without it, Node accepts a tag cut to 4 bytes, which an attacker can guess */
const TAG_BYTES = 16;

/** Whether a stored value is sealed by an AtRestCipher (anything else is an earlier version's plain text). */
export const isSealed = (stored: string): boolean => stored.startsWith(PREFIX);

/**
 * Secrets auth must read back (private signing keys, OpenID Connect client secrets), sealed with AES-256-GCM
 * under a key derived from auth's at-rest secret and a purpose, so that one purpose's key opens nothing of
 * another's. Stored as `enc:v1:<iv>.<tag>.<ciphertext>` (base64url).
 */
export class AtRestCipher {
  private readonly key: Buffer;

  constructor(secret: string, purpose: string) {
    this.key = createHash('sha256').update(`${purpose}:${secret}`).digest();
  }

  seal(plain: string): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.key, iv);
    const body = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
    return `${PREFIX}${iv.toString('base64url')}.${cipher.getAuthTag().toString('base64url')}.${body.toString('base64url')}`;
  }

  /** The plain text of a sealed value; throws when it was sealed under another key or altered. */
  open(stored: string): string {
    const [iv, tag, body] = stored.slice(PREFIX.length).split('.');
    const decipher = createDecipheriv('aes-256-gcm', this.key, Buffer.from(iv!, 'base64url'), {
      authTagLength: TAG_BYTES,
    });
    decipher.setAuthTag(Buffer.from(tag!, 'base64url'));
    return Buffer.concat([decipher.update(Buffer.from(body!, 'base64url')), decipher.final()]).toString(
      'utf8',
    );
  }
}
