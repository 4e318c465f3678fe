import { generateKeyPairSync } from 'node:crypto';
import { ManualClock } from '@platform/kernel';
import { tempDir } from '@platform/testkit';
import jwt from 'jsonwebtoken';
import { callJson } from '../harness';
import { type OidcPlatform, startOidcPlatform } from '../support/oidc-platform';

/**
 * RFC 7009 2.2 at {base_url}/oidc/token/revocation, through the edge: once the client has authenticated, a token it
 * cannot revoke (expired, altered, signed by no key of the platform, or another client's) is answered 200 and revokes
 * nothing. Before, every such JWT was 400 `unsupported_token_type`, and a confidential client naming another client's
 * refresh token was 400 `invalid_request`.
 */

const SECRET = 'oidc-revocation-rfc7009-internal-secret-0123456';
const BACKEND_CALLBACK = 'https://backend.example/callback';
const APP = 'https://app.example';
const OTHER_PAGE = 'https://elsewhere.example';
/** OIDC_ACCESS_TOKEN_TTL_SECONDS by default */
const ACCESS_TOKEN_TTL_MS = 3_600_000;

describe('revoking a token the client cannot revoke: 200, and nothing is revoked', () => {
  const data = tempDir('oidc-revocation-rfc7009-');
  // the edge and auth check a JWT's expiry by it; node-oidc-provider dates its tokens and grants by the wall clock
  const clock = new ManualClock();
  let oidc: OidcPlatform;
  let backend: { client_id: string; client_secret: string };
  let otherBackend: { client_id: string; client_secret: string };
  const spa = { client_id: 'spa' };

  beforeAll(async () => {
    oidc = await startOidcPlatform({ secret: SECRET, dataDir: data.dir, clock });
    const confidential = { redirectUris: [BACKEND_CALLBACK], confidential: true };
    backend = {
      client_id: 'backend',
      client_secret: (await oidc.register('backend', confidential)).clientSecret!,
    };
    otherBackend = {
      client_id: 'other-backend',
      client_secret: (await oidc.register('other-backend', confidential)).clientSecret!,
    };
    await oidc.register('spa', { redirectUris: [`${APP}/callback`] });
  });
  afterAll(async () => {
    await oidc?.stop();
    data.remove();
  });

  /** status and body of a revocation (a 200 has an empty body) */
  const revoke = async (headers: Record<string, string>, form: Record<string, string>) => {
    const res = await oidc.post('/oidc/token/revocation', headers, form);
    const text = await res.text();
    return [res.status, text.startsWith('{') ? JSON.parse(text) : text] as const;
  };
  const userinfo = async (accessToken: string) =>
    (await callJson(`${oidc.base}/oidc/me`, 'GET', { bearer: accessToken })).status;

  it('another client’s access token or refresh token, confidential or public client: 200, and it stays valid', async () => {
    const tokens = await oidc.tokensOf(backend, BACKEND_CALLBACK);
    const basic = {
      authorization: `Basic ${Buffer.from(`other-backend:${otherBackend.client_secret}`).toString('base64')}`,
    };
    /** what is tried, how the client authenticates (headers, form), and which of the person's tokens it names */
    const attempts: Array<[string, Record<string, string>, Record<string, string>, 'access' | 'refresh']> = [
      ['its access token, by a confidential client', {}, otherBackend, 'access'],
      ['its access token, by one as Basic', basic, {}, 'access'],
      ['its access token, hinted', {}, { ...otherBackend, token_type_hint: 'access_token' }, 'access'],
      ['its access token, by a public client', {}, spa, 'access'],
      ['its access token, by a public client’s page', { origin: APP }, spa, 'access'],
      ['its refresh token, by a confidential client', {}, otherBackend, 'refresh'],
      ['its refresh token, by a public client', {}, spa, 'refresh'],
    ];
    let refreshToken = tokens.refresh_token;
    for (const [what, headers, form, named] of attempts) {
      const token = named === 'access' ? tokens.access_token : refreshToken;
      expect([what, ...(await revoke(headers, { ...form, token }))]).toEqual([what, 200, '']);
      expect([what, await userinfo(tokens.access_token)]).toEqual([what, 200]);
      const next = await oidc.refreshed(refreshToken, backend);
      expect([what, next === null ? 'grant revoked' : 'grant holds']).toEqual([what, 'grant holds']);
      refreshToken = next!;
    }
  });

  it('an altered JWT, or one no key of the platform signed: 200 for the client, and its own token stays valid', async () => {
    const tokens = await oidc.tokensOf(backend, BACKEND_CALLBACK);
    const [header, payload, signature] = tokens.access_token.split('.');
    const claims = JSON.parse(Buffer.from(payload!, 'base64url').toString()) as Record<string, unknown>;
    const { privateKey } = generateKeyPairSync('ec', {
      namedCurve: 'P-256',
      publicKeyEncoding: { type: 'spki', format: 'pem' },
      privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
    });
    const decodedHeader = JSON.parse(Buffer.from(header!, 'base64url').toString()) as { kid: string };
    const forged = jwt.sign(claims, privateKey, { algorithm: 'ES256', keyid: decodedHeader.kid });
    const flipped = `${signature![0] === 'A' ? 'B' : 'A'}${signature!.slice(1)}`;
    // a decoder that trusts `typ` parses the payload as JSON, and throws on this one
    const typJwt = Buffer.from(JSON.stringify({ ...decodedHeader, typ: 'JWT' })).toString('base64url');
    const notJson = Buffer.from('not json').toString('base64url');
    const invalid: Array<[string, string]> = [
      ['its signature altered', `${header}.${payload}.${flipped}`],
      ['signed by another key under its kid', forged],
      ['its payload not JSON, under a header typ JWT', `${typJwt}.${notJson}.${signature}`],
      ['a JWE', 'eyJhbGciOiJkaXIiLCJlbmMiOiJBMjU2R0NNIn0..aXY.Y2lwaGVy.dGFn'],
    ];
    for (const [what, token] of invalid) {
      expect([what, ...(await revoke({}, { ...backend, token }))]).toEqual([what, 200, '']);
    }
    expect(await userinfo(tokens.access_token)).toBe(200);
    expect(await oidc.refreshed(tokens.refresh_token, backend)).not.toBeNull();
  });

  it('an unauthenticated client is still refused first: 401 invalid_client, whatever the token', async () => {
    const tokens = await oidc.tokensOf(backend, BACKEND_CALLBACK);
    const refused = { error: 'invalid_client', error_description: 'client authentication failed' };
    const wrongSecret = { client_id: 'other-backend', client_secret: 'wrong' };
    for (const token of [tokens.access_token, `${tokens.access_token.slice(0, -2)}xx`]) {
      expect(await revoke({}, { ...wrongSecret, token })).toEqual([401, refused]);
      expect(await revoke({}, { client_id: 'backend', token })).toEqual([401, refused]);
      expect(await revoke({}, { client_id: 'no-such-client', token })).toEqual([401, refused]);
      expect(await revoke({}, { token })).toEqual([
        400,
        { error: 'invalid_request', error_description: 'no client authentication mechanism provided' },
      ]);
    }
    expect(await userinfo(tokens.access_token)).toBe(200);
  });

  it('what the provider answers stays its own: a repeated hint, a page of another origin, its own tokens', async () => {
    const tokens = await oidc.tokensOf(spa, `${APP}/callback`);
    const repeated = new URLSearchParams({
      ...spa,
      token: tokens.access_token,
      token_type_hint: 'access_token',
    });
    repeated.append('token_type_hint', 'refresh_token');
    const twice = await fetch(`${oidc.base}/oidc/token/revocation`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: repeated.toString(),
    });
    expect([twice.status, await twice.json()]).toEqual([
      400,
      {
        error: 'invalid_request',
        error_description: "'token_type_hint' parameter must not be provided twice",
      },
    ]);
    // a page the client did not register is refused before the token is looked at, as for the provider's tokens;
    // its own pages read the answer
    const altered = `${tokens.access_token.slice(0, -2)}xx`;
    for (const token of [tokens.access_token, altered]) {
      const elsewhere = await oidc.post('/oidc/token/revocation', { origin: OTHER_PAGE }, { ...spa, token });
      expect([elsewhere.status, elsewhere.headers.get('access-control-allow-origin')]).toEqual([400, null]);
    }
    const page = await oidc.post('/oidc/token/revocation', { origin: APP }, { ...spa, token: altered });
    expect([page.status, page.headers.get('access-control-allow-origin')]).toEqual([200, APP]);
    expect(await userinfo(tokens.access_token)).toBe(200);
    // its own refresh token, hinted as an access token, is the provider's to revoke: the grant ends
    expect(
      await revoke({}, { ...spa, token: tokens.refresh_token, token_type_hint: 'access_token' }),
    ).toEqual([200, '']);
    expect(await oidc.refreshed(tokens.refresh_token, spa)).toBeNull();
  });

  // last: it moves the platform's clock past every access token issued so far
  it('an expired access token of its own: 200, and the grant it came from holds', async () => {
    const tokens = await oidc.tokensOf(backend, BACKEND_CALLBACK);
    const publicTokens = await oidc.tokensOf(spa, `${APP}/callback`);
    clock.advance(ACCESS_TOKEN_TTL_MS + 60_000);
    expect(await userinfo(tokens.access_token)).toBe(401);
    for (const headers of [{}, { origin: 'https://backend.example' }] as Record<string, string>[]) {
      expect(await revoke(headers, { ...backend, token: tokens.access_token })).toEqual([200, '']);
    }
    expect(await revoke({ origin: APP }, { ...spa, token: publicTokens.access_token })).toEqual([200, '']);
    expect(await oidc.refreshed(tokens.refresh_token, backend)).not.toBeNull();
    expect(await oidc.refreshed(publicTokens.refresh_token, spa)).not.toBeNull();
  });
});
