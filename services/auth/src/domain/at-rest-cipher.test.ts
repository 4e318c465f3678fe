import { AtRestCipher, isSealed } from './at-rest-cipher';

const SECRET = 'an-at-rest-secret-of-32-characters-or-more';

describe('secrets sealed at rest', () => {
  it('opens what it sealed; the stored form names nothing of it and differs at every seal', () => {
    const cipher = new AtRestCipher(SECRET, 'platform-auth-oidc-client-secrets');
    const first = cipher.seal('the client secret');
    expect(isSealed(first)).toBe(true);
    expect(first).not.toContain('client');
    expect(cipher.seal('the client secret')).not.toBe(first);
    expect(cipher.open(first)).toBe('the client secret');
  });

  it('one purpose’s key opens nothing of another’s, nor an altered value', () => {
    const sealed = new AtRestCipher(SECRET, 'platform-auth-oidc-client-secrets').seal('secret');
    expect(() => new AtRestCipher(SECRET, 'platform-auth-signing-keys').open(sealed)).toThrow();
    expect(() => new AtRestCipher(`${SECRET}!`, 'platform-auth-oidc-client-secrets').open(sealed)).toThrow();
    const [iv, tag, body] = sealed.slice('enc:v1:'.length).split('.');
    const flipped = Buffer.from(body!, 'base64url');
    flipped[0] = flipped[0]! ^ 1;
    const altered = `enc:v1:${iv}.${tag}.${flipped.toString('base64url')}`;
    expect(altered).not.toBe(sealed);
    expect(() => new AtRestCipher(SECRET, 'platform-auth-oidc-client-secrets').open(altered)).toThrow();
  });

  it('refuses a value whose authentication tag was cut short (a 4-byte tag is guessed in 2^32 tries)', () => {
    const cipher = new AtRestCipher(SECRET, 'platform-auth-oidc-client-secrets');
    const [iv, tag, body] = cipher.seal('secret').slice('enc:v1:'.length).split('.');
    const short = Buffer.from(tag!, 'base64url').subarray(0, 4).toString('base64url');
    expect(() => cipher.open(`enc:v1:${iv}.${short}.${body}`)).toThrow();
  });

  it('opens private keys sealed before it existed (the stored form did not change)', () => {
    // PrivateKeyCodec's seal of the previous version, same secret
    const before = 'enc:v1:kekjygJ53a5goIWK.LmFsDeC9y21hma3YLIYJgw.Yu9iJv0L-2OVmDhnSbWX9VWp';
    expect(new AtRestCipher(SECRET, 'platform-auth-signing-keys').open(before)).toBe('sealed before 0103');
  });
});
