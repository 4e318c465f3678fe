import { runCli } from '@platform/operator-cli';
import { startMailCatcher } from '../../services/auth/test/mail-catcher';
import { callJson, startPlatformWithMail, type TestPlatform } from '../harness';
import { consentedCode } from '../support/oidc-sign-in';

/**
 * A single-page application on its own origin (a public client, code + PKCE) calling {base_url}/oidc through the
 * edge as a browser does: a credential-less preflight first, then the request with its `Origin`.
 */

const APP = 'https://app.example';
const REDIRECT = `${APP}/callback`;
const OTHER = 'https://elsewhere.example';

describe('OpenID Connect from a page of another origin (CORS)', () => {
  let p: TestPlatform;
  let mail: Awaited<ReturnType<typeof startMailCatcher>>;
  let base: string;

  beforeAll(async () => {
    let cliEnv: Record<string, string>;
    ({ p, mail, base, cliEnv } = await startPlatformWithMail({
      secret: 'oidc-cors-e2e-internal-secret-0123456789abcdef',
      env: { JWKS_PUBLISH_DELAY_SECONDS: '0' },
    }));
    const io = { out: () => undefined, err: (l: string) => console.error(l) };
    const add = ['oidc-client', 'add', 'spa', '--redirect-uri', REDIRECT, '--name', 'Single Page App'];
    expect(await runCli(add, cliEnv, io)).toBe(0);
  });
  afterAll(async () => {
    await p?.stop();
    await mail?.close();
  });

  /** What a browser asks before a request it may not send unasked: no credential, no body. */
  const preflight = (path: string, origin: string, method: string, headers = 'content-type') =>
    fetch(`${base}${path}`, {
      method: 'OPTIONS',
      headers: {
        origin,
        'access-control-request-method': method,
        'access-control-request-headers': headers,
      },
    });

  /** A form POST of the page at `origin`, as fetch() sends it. */
  const postForm = (path: string, origin: string, form: Record<string, string>) =>
    fetch(`${base}${path}`, {
      method: 'POST',
      headers: { origin, 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams(form).toString(),
    });

  const allowed = (res: Response) => res.headers.get('access-control-allow-origin');

  /** A person who signed in to the app and allowed it: the code its callback got, and its PKCE verifier. */
  const authorizationCode = () =>
    consentedCode(base, { clientId: 'spa', redirectUri: REDIRECT, scope: 'openid email offline_access' });

  const exchange = (origin: string, { code, verifier }: { code: string; verifier: string }) =>
    postForm('/oidc/token', origin, {
      grant_type: 'authorization_code',
      client_id: 'spa',
      code,
      code_verifier: verifier,
      redirect_uri: REDIRECT,
    });

  type Tokens = { access_token: string; refresh_token: string };

  /** Tokens the app got from its own page. */
  async function tokensOfApp(): Promise<Tokens> {
    const res = await exchange(APP, await authorizationCode());
    expect(res.status).toBe(200);
    return (await res.json()) as Tokens;
  }

  it('the app’s page: the token endpoint’s preflight passes the edge, the code exchange and a refresh are readable', async () => {
    const asked = await preflight('/oidc/token', APP, 'POST', 'content-type, dpop');
    expect(asked.status).toBe(204);
    expect(allowed(asked)).toBe(APP);
    expect(asked.headers.get('access-control-allow-methods')).toContain('POST');
    expect(asked.headers.get('access-control-allow-headers')).toBe('content-type, dpop');

    const code = await exchange(APP, await authorizationCode());
    expect(code.status).toBe(200);
    expect(allowed(code)).toBe(APP);
    expect(code.headers.get('vary')).toMatch(/origin/i);
    const tokens = (await code.json()) as Tokens;
    expect(tokens).toMatchObject({ access_token: expect.any(String), refresh_token: expect.any(String) });

    const refreshed = await postForm('/oidc/token', APP, {
      grant_type: 'refresh_token',
      client_id: 'spa',
      refresh_token: tokens.refresh_token,
    });
    expect(refreshed.status).toBe(200);
    expect(allowed(refreshed)).toBe(APP);
    // an error is the page's to read too (a spent refresh token: sign in again)
    const spent = await postForm('/oidc/token', APP, {
      grant_type: 'refresh_token',
      client_id: 'spa',
      refresh_token: tokens.refresh_token,
    });
    expect(spent.status).toBe(400);
    expect(allowed(spent)).toBe(APP);
  });

  it('a page of an origin no client registered: no CORS headers, and its code exchange is refused unspent', async () => {
    for (const path of ['/oidc/token', '/oidc/token/revocation', '/oidc/me']) {
      const asked = await preflight(path, OTHER, 'POST', 'authorization');
      expect(asked.status).toBe(204);
      expect(allowed(asked)).toBeNull();
      expect(asked.headers.get('access-control-allow-methods')).toBeNull();
    }
    const grant = await authorizationCode();
    const refused = await exchange(OTHER, grant);
    expect(refused.status).toBe(400);
    expect(allowed(refused)).toBeNull();
    expect(await refused.json()).toMatchObject({ error: 'invalid_request' });
    // the refusal came before the code was used: the app's own page still redeems it
    const redeemed = await exchange(APP, grant);
    expect(redeemed.status).toBe(200);
    expect(allowed(redeemed)).toBe(APP);
  });

  it('userinfo: readable by the app’s page with its token, by no other page; a refusal readable by the app', async () => {
    const { access_token } = await tokensOfApp();
    const asked = await preflight('/oidc/me', APP, 'GET', 'authorization');
    expect(asked.status).toBe(204);
    expect(allowed(asked)).toBe(APP);
    expect(asked.headers.get('access-control-allow-headers')).toBe('authorization');

    const bearer = { authorization: `Bearer ${access_token}` };
    for (const method of ['GET', 'POST']) {
      const me = await fetch(`${base}/oidc/me`, { method, headers: { ...bearer, origin: APP } });
      expect(me.status).toBe(200);
      expect(allowed(me)).toBe(APP);
      expect(me.headers.get('vary')).toMatch(/origin/i);
      expect(await me.json()).toMatchObject({ sub: expect.any(String), email: expect.any(String) });
    }
    const elsewhere = await fetch(`${base}/oidc/me`, { headers: { ...bearer, origin: OTHER } });
    expect(elsewhere.status).toBe(200);
    expect(allowed(elsewhere)).toBeNull();
    expect(elsewhere.headers.get('vary')).toMatch(/origin/i);

    // a token no longer good: the app's page learns it (401), another page learns nothing
    for (const [origin, expected] of [
      [APP, APP],
      [OTHER, null],
    ] as const) {
      const refused = await fetch(`${base}/oidc/me`, {
        headers: { authorization: 'Bearer not-a-token', origin },
      });
      expect(refused.status).toBe(401);
      expect(allowed(refused)).toBe(expected);
    }
  });

  it('revocation: the app’s page revokes its access and refresh tokens; another page’s revocation is refused', async () => {
    const asked = await preflight('/oidc/token/revocation', APP, 'POST');
    expect(asked.status).toBe(204);
    expect(allowed(asked)).toBe(APP);

    const { access_token, refresh_token } = await tokensOfApp();
    const meStatus = async () => (await callJson(`${base}/oidc/me`, 'GET', { bearer: access_token })).status;
    const elsewhere = await postForm('/oidc/token/revocation', OTHER, {
      token: access_token,
      client_id: 'spa',
    });
    expect(elsewhere.status).toBe(400);
    expect(allowed(elsewhere)).toBeNull();
    expect(await meStatus()).toBe(200);

    const revoked = await postForm('/oidc/token/revocation', APP, { token: access_token, client_id: 'spa' });
    expect(revoked.status).toBe(200);
    expect(allowed(revoked)).toBe(APP);
    expect(await meStatus()).toBe(401);
    const refresh = await postForm('/oidc/token/revocation', APP, { token: refresh_token, client_id: 'spa' });
    expect(refresh.status).toBe(200);
    expect(allowed(refresh)).toBe(APP);
  });

  it('discovery and the JWKS: readable by any page, their preflights too', async () => {
    for (const path of ['/oidc/.well-known/openid-configuration', '/oidc/jwks']) {
      const asked = await preflight(path, OTHER, 'GET', 'x-requested-with');
      expect(asked.status).toBe(204);
      expect(allowed(asked)).toBe(OTHER);
    }
    const discovery = await fetch(`${base}/oidc/.well-known/openid-configuration`, {
      headers: { origin: OTHER },
    });
    expect(discovery.status).toBe(200);
    expect(allowed(discovery)).toBe(OTHER);
    const jwks = await fetch(`${base}/oidc/jwks`, { headers: { origin: OTHER } });
    expect(jwks.status).toBe(200);
    expect(allowed(jwks)).toBe('*');
  });

  it('the edge lets only preflights through without a credential: a plain OPTIONS, or another path, still needs one', async () => {
    const plain = await fetch(`${base}/oidc/token`, { method: 'OPTIONS', headers: { origin: APP } });
    expect(plain.status).toBe(401);
    const unlisted = await preflight('/v2/me', APP, 'GET', 'authorization');
    expect(unlisted.status).toBe(401);
    expect(allowed(unlisted)).toBeNull();
  });
});
