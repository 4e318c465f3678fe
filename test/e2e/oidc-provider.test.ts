import { runCli } from '@platform/operator-cli';
import { freePort } from '@platform/testkit';
import * as oidc from 'openid-client';
import * as OTPAuth from 'otpauth';
import { startMailCatcher } from '../../services/auth/test/mail-catcher';
import { callJson, startTestPlatform, type TestPlatform } from '../harness';
import { BrowserAgent, formFields } from '../support/browser-agent';

/** `openid-client` as a relying party of {base_url}/oidc, through the edge. */

const PASSWORD = 'correct horse battery';
const REDIRECT = 'http://127.0.0.1:7/callback';

describe('OpenID Connect provider at {base_url}/oidc', () => {
  let p: TestPlatform;
  let mail: Awaited<ReturnType<typeof startMailCatcher>>;
  let base: string;
  let config: oidc.Configuration;
  let cliEnv: Record<string, string>;

  beforeAll(async () => {
    mail = await startMailCatcher();
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    const secret = 'oidc-e2e-internal-secret-0123456789abcdef';
    p = await startTestPlatform({
      port,
      env: {
        PLATFORM_INTERNAL_SECRET: secret,
        PUBLIC_BASE_URL: base,
        JWT_ISSUER: base,
        SMTP_URL: mail.url,
        PASSWORD_SCRYPT_N: '1024',
        PASSWORD_SCRYPT_P: '1',
        JWKS_PUBLISH_DELAY_SECONDS: '0',
      },
    });
    const lines: string[] = [];
    const io = { out: (l: string) => lines.push(l), err: (l: string) => lines.push(l) };
    const cli = [
      'oidc-client',
      'add',
      'notes-app',
      '--redirect-uri',
      REDIRECT,
      '--name',
      'Notes App',
      '--json',
    ];
    cliEnv = { AUTH_URL: p.upstreams.auth, PLATFORM_INTERNAL_SECRET: secret };
    const env = cliEnv;
    expect(await runCli(cli, env, io)).toBe(0);
    expect(JSON.parse(lines.pop()!)).toMatchObject({ result: 'created', data: { clientId: 'notes-app' } });
    expect(await runCli(cli, env, io)).toBe(0);
    expect(JSON.parse(lines.pop()!)).toMatchObject({ result: 'exists' });
    config = await oidc.discovery(new URL(`${base}/oidc`), 'notes-app', undefined, oidc.None(), {
      execute: [oidc.allowInsecureRequests],
    });
  });
  afterAll(async () => {
    await p.stop();
    await mail.close();
  });

  /** Signs up a person in a browser, then runs code + PKCE for `notes-app` through sign-in and consent. */
  async function authorize(browser: BrowserAgent, email: string) {
    const verifier = oidc.randomPKCECodeVerifier();
    const state = oidc.randomState();
    const url = oidc.buildAuthorizationUrl(config, {
      redirect_uri: REDIRECT,
      scope: 'openid email profile offline_access',
      code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
      state,
      prompt: 'consent',
    });
    let page = await browser.go(url.toString());
    expect(page.text).toContain('Sign in');
    const uid = /\/oidc\/interaction\/([^/"]+)\/login/.exec(page.text)![1]!;
    page = await browser.go(`/oidc/interaction/${uid}/login`, {
      method: 'POST',
      form: { ...formFields(page.text, `/oidc/interaction/${uid}/login`), email, password: PASSWORD },
    });
    expect(page.text).toContain('Allow access?');
    expect(page.text).toContain('Notes App');
    const consentUid = /\/oidc\/interaction\/([^/"]+)\/confirm/.exec(page.text)![1]!;
    const callback = await browser.go(`/oidc/interaction/${consentUid}/confirm`, {
      method: 'POST',
      form: formFields(page.text, `/oidc/interaction/${consentUid}/confirm`),
    });
    expect(callback.url.startsWith(REDIRECT)).toBe(true);
    return oidc.authorizationCodeGrant(config, new URL(callback.url), {
      pkceCodeVerifier: verifier,
      expectedState: state,
    });
  }

  it('discovery names the issuer and its endpoints; the JWKS is the platform’s one key set', async () => {
    const meta = config.serverMetadata();
    expect(meta.issuer).toBe(`${base}/oidc`);
    expect(meta.jwks_uri).toBe(`${base}/oidc/jwks`);
    expect(meta.code_challenge_methods_supported).toEqual(['S256']);
    expect(meta.revocation_endpoint).toBe(`${base}/oidc/token/revocation`);
    expect(meta.end_session_endpoint).toBe(`${base}/oidc/session/end`);
  });

  it('code + PKCE: the access token is a session JWT the edge accepts, userinfo names the person', async () => {
    const email = `rp-${Date.now()}@example.com`;
    expect(
      (await callJson(`${base}/v2/signup`, 'POST', { body: { email, password: PASSWORD } })).status,
    ).toBe(201);
    const tokens = await authorize(new BrowserAgent(base), email);
    expect(tokens.refresh_token).toBeTruthy();
    expect(tokens.claims()).toMatchObject({ iss: `${base}/oidc`, aud: 'notes-app', email });
    const [, payload] = tokens.access_token.split('.');
    const claims = JSON.parse(Buffer.from(payload!, 'base64url').toString());
    expect(claims).toMatchObject({
      iss: base,
      aud: 'platform-api',
      client_id: 'notes-app',
      sub: tokens.claims()!.sub,
      platformSessionId: expect.any(String),
      scope: expect.stringContaining('openid'),
      jti: expect.any(String),
    });
    const me = await callJson(`${base}/v2/me`, 'GET', { bearer: tokens.access_token });
    expect(me.status).toBe(200);
    expect(me.body.email).toBe(email);
    const info = await oidc.fetchUserInfo(config, tokens.access_token, tokens.claims()!.sub);
    expect(info).toMatchObject({ email, email_verified: false });
  });

  it('refreshes; old tokens verify after a key rotation; a reused refresh token revokes the family', async () => {
    const email = `rot-${Date.now()}@example.com`;
    await callJson(`${base}/v2/signup`, 'POST', { body: { email, password: PASSWORD } });
    const first = await authorize(new BrowserAgent(base), email);
    const second = await oidc.refreshTokenGrant(config, first.refresh_token!);
    expect(second.refresh_token).not.toBe(first.refresh_token);
    expect((await callJson(`${base}/v2/me`, 'GET', { bearer: second.access_token })).status).toBe(200);

    const kid = (t: string) => JSON.parse(Buffer.from(t.split('.')[0]!, 'base64url').toString()).kid;
    const io = { out: () => undefined, err: () => undefined };
    expect(await runCli(['keys', 'rotate'], cliEnv, io)).toBe(0);
    let third: oidc.TokenEndpointResponse | undefined;
    for (let i = 0; i < 50 && (!third || kid(third.access_token) === kid(second.access_token)); i++) {
      const refreshed = await oidc.refreshTokenGrant(config, (third ?? second).refresh_token!);
      third = refreshed;
    }
    expect(kid(third!.access_token)).not.toBe(kid(second.access_token));
    // the token signed before the rotation still verifies at the edge
    expect((await callJson(`${base}/v2/me`, 'GET', { bearer: second.access_token })).status).toBe(200);
    expect((await callJson(`${base}/v2/me`, 'GET', { bearer: third!.access_token })).status).toBe(200);

    // Replaying a spent refresh token: refused, and the whole family is revoked at the edge.
    await expect(oidc.refreshTokenGrant(config, first.refresh_token!)).rejects.toThrow();
    await expect(oidc.refreshTokenGrant(config, third!.refresh_token!)).rejects.toThrow();
    expect((await callJson(`${base}/v2/me`, 'GET', { bearer: third!.access_token })).status).toBe(401);
  });

  it('RFC 7009: revoking the access token ends its session at the edge', async () => {
    const email = `rev-${Date.now()}@example.com`;
    await callJson(`${base}/v2/signup`, 'POST', { body: { email, password: PASSWORD } });
    const tokens = await authorize(new BrowserAgent(base), email);
    await oidc.tokenRevocation(config, tokens.access_token);
    expect((await callJson(`${base}/v2/me`, 'GET', { bearer: tokens.access_token })).status).toBe(401);
    await expect(oidc.refreshTokenGrant(config, tokens.refresh_token!)).rejects.toThrow();
  });

  it('end session: the provider asks in the platform’s page, then signs the browser out', async () => {
    const email = `end-${Date.now()}@example.com`;
    await callJson(`${base}/v2/signup`, 'POST', { body: { email, password: PASSWORD } });
    const browser = new BrowserAgent(base);
    const tokens = await authorize(browser, email);
    const ask = await browser.go(
      `/oidc/session/end?client_id=notes-app&id_token_hint=${encodeURIComponent(tokens.id_token!)}`,
    );
    expect(ask.status).toBe(200);
    expect(ask.text).toContain('Sign out?');
    expect(ask.headers.get('content-security-policy')).toMatch(/default-src 'none'/);
    const action = /<form[^>]*action="([^"]+)"/.exec(ask.text)![1]!;
    const done = await browser.go(action, {
      method: 'POST',
      form: { ...formFields(ask.text, action), logout: 'yes' },
    });
    expect(done.status).toBe(200);
    // The provider's session is gone: a new authorization asks to sign in again (no platform cookie here).
    browser.cookies.delete('access-token');
    const again = await browser.go(
      oidc
        .buildAuthorizationUrl(config, {
          redirect_uri: REDIRECT,
          scope: 'openid',
          code_challenge: await oidc.calculatePKCECodeChallenge(oidc.randomPKCECodeVerifier()),
          code_challenge_method: 'S256',
        })
        .toString(),
    );
    expect(again.text).toContain('to continue to');
  });

  it('a browser session from before two-step verification was turned on does not skip it', async () => {
    const email = `late-mfa-${Date.now()}@example.com`;
    const browser = new BrowserAgent(base);
    // Sign up in the browser (a session without a second factor), then turn TOTP on.
    let page = await browser.go('/account/signup');
    page = await browser.go('/account/signup', {
      method: 'POST',
      form: { ...formFields(page.text, '/account/signup'), email, password: PASSWORD },
    });
    expect(page.url).toBe(`${base}/account?welcome=1`);
    page = await browser.go('/account/mfa');
    const secret = /id="totp-secret">([A-Z2-7]+)</.exec(page.text)![1]!;
    const totp = new OTPAuth.TOTP({ secret: OTPAuth.Secret.fromBase32(secret) });
    page = await browser.go('/account/mfa', {
      method: 'POST',
      form: { ...formFields(page.text, '/account/mfa'), code: totp.generate() },
    });
    expect(page.text).toContain('Two-step verification is on');
    // The old cookie session is not enough for the app: the sign-in form (and then the code) is asked.
    const url = oidc.buildAuthorizationUrl(config, {
      redirect_uri: REDIRECT,
      scope: 'openid email',
      code_challenge: await oidc.calculatePKCECodeChallenge(oidc.randomPKCECodeVerifier()),
      code_challenge_method: 'S256',
    });
    const interaction = await browser.go(url.toString());
    expect(interaction.text).toContain('to continue to');
  });
});
