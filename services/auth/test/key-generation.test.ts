import { generateEncodedKeyPair, generateSigningKey, thumbprint } from '../src/domain/signing-keys';

describe('signing key generation', () => {
  it('answers a JWK and a PKCS#8 PEM made by the generation job, for RSA and EC', async () => {
    const rsa = await generateSigningKey({ kty: 'RSA', alg: 'RS256', size: 2048 });
    expect(rsa.publicJwk).toMatchObject({ kty: 'RSA', alg: 'RS256', use: 'sig', e: 'AQAB' });
    expect(rsa.kid).toBe(thumbprint(rsa.publicJwk));
    expect(rsa.privatePem).toMatch(/^-----BEGIN PRIVATE KEY-----/);
    const ec = await generateSigningKey({ kty: 'EC', alg: 'ES256', size: 256 });
    expect(ec.publicJwk).toMatchObject({ kty: 'EC', crv: 'P-256', alg: 'ES256' });
    await expect(generateEncodedKeyPair('ec', { namedCurve: 'no-such-curve' })).rejects.toThrow();
  });
});
