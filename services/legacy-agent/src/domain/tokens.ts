import { createHash, hkdfSync, randomBytes } from 'node:crypto';
import { gcmOpen, gcmSeal } from '@platform/kernel';

/**
 * The legacy service's own credentials. Each has a distinct prefix so a leaked one is recognisable
 * (secret scanners) and a request can tell which kind it was given without a lookup.
 */
export const TOKEN_PREFIX = {
  session: 'lst_',
  accessToken: 'lat_',
  clientToken: 'lct_',
  developerToken: 'ldt_',
} as const;
export type TokenKind = keyof typeof TOKEN_PREFIX;

const TOKEN_BODY = /^[A-Za-z0-9_-]{43}$/;

/** A fresh token of the kind: prefix + 256 random bits in base64url. */
export function newToken(kind: TokenKind): string {
  return TOKEN_PREFIX[kind] + randomBytes(32).toString('base64url');
}

/** Which kind a presented token is by its shape; null when malformed. */
export function tokenKind(value: string): TokenKind | null {
  for (const [kind, prefix] of Object.entries(TOKEN_PREFIX) as Array<[TokenKind, string]>) {
    if (value.startsWith(prefix) && TOKEN_BODY.test(value.slice(prefix.length))) return kind;
  }
  return null;
}

/** Tokens carry 256 random bits, so a plain sha256 is a safe lookup key (no slow hash needed). */
export const hashToken = (token: string): string => createHash('sha256').update(token).digest('hex');

/** What lists show of a token: its prefix and first characters, never enough to use it. */
export const tokenHint = (token: string): string => `${token.slice(0, 10)}…`;

/** Encrypts tokens that must be shown again to their owner (developer tokens), AES-256-GCM. */
export class TokenSealer {
  private readonly key: Buffer;

  constructor(key: Buffer) {
    if (key.length !== 32) throw new Error('token encryption key must be 32 bytes');
    this.key = key;
  }

  /** the configured key, or one derived from the internal secret */
  static fromConfig(config: { LEGACY_TOKEN_ENCRYPTION_KEY?: string; PLATFORM_INTERNAL_SECRET: string }) {
    if (config.LEGACY_TOKEN_ENCRYPTION_KEY)
      return new TokenSealer(Buffer.from(config.LEGACY_TOKEN_ENCRYPTION_KEY, 'base64'));
    const derived = hkdfSync(
      'sha256',
      config.PLATFORM_INTERNAL_SECRET,
      'legacy-agent',
      'developer-token-encryption',
      32,
    );
    return new TokenSealer(Buffer.from(derived));
  }

  seal(plain: string): string {
    const { iv, tag, data } = gcmSeal(this.key, plain);
    return `v1.${[iv, data, tag].map((b) => b.toString('base64url')).join('.')}`;
  }

  /** null when the ciphertext was not made with this key */
  open(sealed: string): string | null {
    const [version, iv, body, tag] = sealed.split('.');
    if (version !== 'v1' || !iv || !body || !tag) return null;
    const part = (s: string) => Buffer.from(s, 'base64url');
    try {
      return gcmOpen(this.key, { iv: part(iv), tag: part(tag), data: part(body) });
    } catch {
      return null;
    }
  }
}
