import { createHash } from 'node:crypto';
import { gcmOpen, gcmSeal } from '@platform/kernel';

/**
 * Provider keys at rest: AES-256-GCM with a random IV per value, stored as `v1.<iv>.<tag>.<data>`
 * (base64url). The key is derived from the configured secret; values never leave the gateway.
 */
export class SecretBox {
  private readonly key: Buffer;

  constructor(secret: string) {
    this.key = createHash('sha256').update(`llm-gateway/provider-keys/${secret}`).digest();
  }

  seal(plain: string): string {
    const { iv, tag, data } = gcmSeal(this.key, plain);
    return `v1.${[iv, tag, data].map((b) => b.toString('base64url')).join('.')}`;
  }

  open(sealed: string): string {
    const [version, iv, tag, data] = sealed.split('.');
    if (version !== 'v1' || !iv || !tag || data === undefined) throw new Error('not a sealed value');
    const part = (s: string) => Buffer.from(s, 'base64url');
    return gcmOpen(this.key, { iv: part(iv), tag: part(tag), data: part(data) });
  }
}
