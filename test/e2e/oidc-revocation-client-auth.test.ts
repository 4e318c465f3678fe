import { tempDir } from '@platform/testkit';
import { callJson } from '../harness';
import { type OidcPlatform, startOidcPlatform } from '../support/oidc-platform';

/**
 * RFC 7009 2.1 at {base_url}/oidc/token/revocation, through the edge, for the JWT access tokens auth revokes itself:
 * a confidential client authenticates with its secret, as node-oidc-provider asks of it for its other tokens.
 */

const SECRET = 'oidc-revocation-client-auth-internal-secret-0123';
const BACKEND_CALLBACK = 'https://backend.example/callback';
const APP = 'https://app.example';

describe('revoking a JWT access token: the client authenticates as it registered', () => {
  const data = tempDir('oidc-revocation-client-auth-');
  let oidc: OidcPlatform;
  let backendSecret: string;
  let otherSecret: string;

  beforeAll(async () => {
    oidc = await startOidcPlatform({ secret: SECRET, dataDir: data.dir });
    backendSecret = (await oidc.register('backend', { redirectUris: [BACKEND_CALLBACK], confidential: true }))
      .clientSecret!;
    otherSecret = (
      await oidc.register('other-backend', { redirectUris: [BACKEND_CALLBACK], confidential: true })
    ).clientSecret!;
    await oidc.register('spa', { redirectUris: [`${APP}/callback`] });
  });
  afterAll(async () => {
    await oidc?.stop();
    data.remove();
  });

  /** through the edge, which forwards an `Authorization: Basic` header (client_secret_basic) on these endpoints only */
  const basic = (clientId: string, secret: string) => ({
    authorization: `Basic ${Buffer.from(`${clientId}:${secret}`).toString('base64')}`,
  });

  /** an answer's body: its JSON, else its text (a revocation's 200 has none) */
  const bodyOf = async (res: Response): Promise<unknown> => {
    const text = await res.text();
    try {
      return JSON.parse(text);
    } catch {
      return text;
    }
  };
  const userinfo = async (accessToken: string) =>
    (await callJson(`${oidc.base}/oidc/me`, 'GET', { bearer: accessToken })).status;

  it('a confidential client without its secret, or with a wrong one, is 401 invalid_client and revokes nothing', async () => {
    const auth = { client_id: 'backend', client_secret: backendSecret };
    const tokens = await oidc.tokensOf(auth, BACKEND_CALLBACK);
    let refreshToken = tokens.refresh_token;
    const unauthenticated = [401, 'invalid_client', 'client authentication failed'] as const;
    const twoMechanisms = [
      400,
      'invalid_request',
      'client authentication must only be provided using one mechanism',
    ];
    const attempts: Array<[string, Record<string, string>, Record<string, string>, (readonly unknown[])?]> = [
      ['no secret', {}, { client_id: 'backend' }],
      ['no secret, from a page', { origin: APP }, { client_id: 'backend' }],
      ['a wrong secret', {}, { client_id: 'backend', client_secret: `${backendSecret}x` }],
      ['another client’s secret', {}, { client_id: 'backend', client_secret: otherSecret }],
      ['an empty secret', {}, { client_id: 'backend', client_secret: '' }],
      ['a wrong secret as Basic', basic('backend', 'wrong'), {}],
      ['a wrong secret as Basic, client_id in the form', basic('backend', 'wrong'), { client_id: 'backend' }],
      // RFC 6749 2.3: one way of authenticating per request, as the provider has it
      ['its secret both as Basic and in the form', basic('backend', backendSecret), auth, twoMechanisms],
    ];
    for (const [what, headers, form, [status, error, description] = unauthenticated] of attempts) {
      const refused = await oidc.post('/oidc/token/revocation', headers, {
        ...form,
        token: tokens.access_token,
      });
      expect([what, refused.status, await bodyOf(refused)]).toEqual([
        what,
        status,
        { error, error_description: description },
      ]);
      // no page reads what a confidential client is answered (commit b5035a2)
      if (headers.origin)
        expect([what, refused.headers.get('access-control-allow-origin')]).toEqual([what, null]);
      const next = await oidc.refreshed(refreshToken, auth);
      expect([what, next === null ? 'grant revoked' : 'grant holds']).toEqual([what, 'grant holds']);
      refreshToken = next!;
    }
    expect(await userinfo(tokens.access_token)).toBe(200);
  });

  it('a confidential client with its secret, in the form or as Basic, revokes its access token', async () => {
    const auth = { client_id: 'backend', client_secret: backendSecret };
    for (const [what, headers, form] of [
      ['client_secret_post', {}, auth],
      ['client_secret_post, with an Origin', { origin: 'https://backend.example' }, auth],
      ['client_secret_basic', basic('backend', backendSecret), {}],
      [
        'client_secret_basic, client_id in the form',
        basic('backend', backendSecret),
        { client_id: 'backend' },
      ],
    ] as Array<[string, Record<string, string>, Record<string, string>]>) {
      const tokens = await oidc.tokensOf(auth, BACKEND_CALLBACK);
      expect(await userinfo(tokens.access_token)).toBe(200);
      const revoked = await oidc.post('/oidc/token/revocation', headers, {
        ...form,
        token: tokens.access_token,
      });
      expect([what, revoked.status, await revoked.text()]).toEqual([what, 200, '']);
      if (headers.origin)
        expect([what, revoked.headers.get('access-control-allow-origin')]).toEqual([what, null]);
      expect([what, await oidc.refreshed(tokens.refresh_token, auth)]).toEqual([what, null]);
      expect([what, await userinfo(tokens.access_token)]).toEqual([what, 401]);
    }
  });

  it('a public client revokes with its client_id alone; one that sends a secret is refused as the provider refuses it', async () => {
    const auth = { client_id: 'spa' };
    const tokens = await oidc.tokensOf(auth, `${APP}/callback`);
    const refused = await oidc.post(
      '/oidc/token/revocation',
      { origin: APP },
      {
        ...auth,
        client_secret: 'not-a-secret',
        token: tokens.access_token,
      },
    );
    expect([refused.status, ((await bodyOf(refused)) as { error?: string }).error]).toEqual([
      401,
      'invalid_client',
    ]);
    const next = await oidc.refreshed(tokens.refresh_token, auth);
    expect(next).not.toBeNull();

    const revoked = await oidc.post(
      '/oidc/token/revocation',
      { origin: APP },
      { ...auth, token: tokens.access_token },
    );
    expect([revoked.status, revoked.headers.get('access-control-allow-origin')]).toEqual([200, APP]);
    expect(await oidc.refreshed(next!, auth)).toBeNull();
    expect(await userinfo(tokens.access_token)).toBe(401);
  });
});
