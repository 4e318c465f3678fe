import { randomBytes } from 'node:crypto';
import { hashPassword, verifyPassword } from './passwords';
import { hashToken, newToken, TokenSealer, tokenKind } from './tokens';

describe('tokens', () => {
  it('tells each kind by its prefix and refuses malformed ones', () => {
    expect(tokenKind(newToken('session'))).toBe('session');
    expect(tokenKind(newToken('accessToken'))).toBe('accessToken');
    expect(tokenKind(newToken('clientToken'))).toBe('clientToken');
    expect(tokenKind(newToken('developerToken'))).toBe('developerToken');
    expect(tokenKind('ldt_short')).toBeNull();
    expect(tokenKind(`xyz_${'a'.repeat(43)}`)).toBeNull();
    expect(hashToken('a')).toHaveLength(64);
  });

  it('seals and opens developer tokens; another key cannot open them', () => {
    const sealer = TokenSealer.fromConfig({ PLATFORM_INTERNAL_SECRET: 'x'.repeat(32) });
    const token = newToken('developerToken');
    const sealed = sealer.seal(token);
    expect(sealed).not.toContain(token.slice(4));
    expect(sealer.open(sealed)).toBe(token);
    const other = TokenSealer.fromConfig({
      PLATFORM_INTERNAL_SECRET: 'x'.repeat(32),
      LEGACY_TOKEN_ENCRYPTION_KEY: randomBytes(32).toString('base64'),
    });
    expect(other.open(sealed)).toBeNull();
    expect(sealer.open('garbage')).toBeNull();
  });
});

describe('passwords', () => {
  it('verifies the right password only, with a fresh salt each time', async () => {
    const a = await hashPassword('correct horse', 1024);
    const b = await hashPassword('correct horse', 1024);
    expect(a.salt).not.toBe(b.salt);
    expect(await verifyPassword('correct horse', a)).toBe(true);
    expect(await verifyPassword('correct hors', a)).toBe(false);
  });
});
