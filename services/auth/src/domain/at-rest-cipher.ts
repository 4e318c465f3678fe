import { createHash } from 'node:crypto';
import { gcmOpen, gcmSeal } from '@platform/kernel';

const PREFIX = 'enc:v1:';

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
    const { iv, tag, data } = gcmSeal(this.key, plain);
    return `${PREFIX}${[iv, tag, data].map((b) => b.toString('base64url')).join('.')}`;
  }

  /** The plain text of a sealed value; throws when it was sealed under another key or altered. */
  open(stored: string): string {
    const [iv = '', tag = '', data = ''] = stored.slice(PREFIX.length).split('.');
    const part = (s: string) => Buffer.from(s, 'base64url');
    return gcmOpen(this.key, { iv: part(iv), tag: part(tag), data: part(data) });
  }
}
