import { runCli } from '@platform/operator-cli';
import { waitFor } from '@platform/testkit';
import * as oidc from 'openid-client';
import * as OTPAuth from 'otpauth';
import { startMailCatcher } from '../../services/auth/test/mail-catcher';
import { callJson, startPlatformWithMail, type TestPlatform } from '../harness';
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
  const discover = (clientId: string) =>
    oidc.discovery(new URL(`${base}/oidc`), clientId, undefined, oidc.None(), {
      execute: [oidc.allowInsecureRequests],
    });

  beforeAll(async () => {
    ({ p, mail, base, cliEnv } = await startPlatformWithMail({
      secret: 'oidc-e2e-internal-secret-0123456789abcdef',
      env: { JWKS_PUBLISH_DELAY_SECONDS: '0', OIDC_FIRST_PARTY_REDIRECT_URIS: REDIRECT },
    }));
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
    const env = cliEnv;
    expect(await runCli(cli, env, io)).toBe(0);
    expect(JSON.parse(lines.pop()!)).toMatchObject({ result: 'created', data: { clientId: 'notes-app' } });
    expect(await runCli(cli, env, io)).toBe(0);
    expect(JSON.parse(lines.pop()!)).toMatchObject({ result: 'exists' });
    config = await discover('notes-app');
  });
  afterAll(async () => {
    await p.stop();
    await mail.close();
  });

  /** A code + PKCE authorization request of `client` as a browser makes it; answers the first page. */
  async function startAuthorization(
    browser: BrowserAgent,
    client = config,
    params: Record<string, string> = {},
  ) {
    const verifier = oidc.randomPKCECodeVerifier();
    const state = oidc.randomState();
    const url = oidc.buildAuthorizationUrl(client, {
      redirect_uri: REDIRECT,
      // `api`: the platform API's scope, without which the token is good for userinfo alone (decision 0109)
      scope: 'openid email profile offline_access api',
      code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
      state,
      ...params,
    });
    const page = await browser.go(url.toString());
    /** the code of the callback the browser reached, exchanged as the client does */
    const redeem = (callbackUrl: string) =>
      oidc.authorizationCodeGrant(client, new URL(callbackUrl), {
        pkceCodeVerifier: verifier,
        expectedState: state,
      });
    return { page, redeem };
  }

  /** Submits the interaction's sign-in form; answers the next page. */
  async function signIn(browser: BrowserAgent, page: { text: string }, email: string, password = PASSWORD) {
    const uid = /\/oidc\/interaction\/([^/"]+)\/login/.exec(page.text)![1]!;
    return browser.go(`/oidc/interaction/${uid}/login`, {
      method: 'POST',
      form: { ...formFields(page.text, `/oidc/interaction/${uid}/login`), email, password },
    });
  }

  /** Allows the consent page; answers where the browser went (the client's callback). */
  async function allow(browser: BrowserAgent, page: { text: string }) {
    expect(page.text).toContain('Allow access?');
    const uid = /\/oidc\/interaction\/([^/"]+)\/confirm/.exec(page.text)![1]!;
    return browser.go(`/oidc/interaction/${uid}/confirm`, {
      method: 'POST',
      form: formFields(page.text, `/oidc/interaction/${uid}/confirm`),
    });
  }

  /** Runs code + PKCE for `notes-app` through sign-in and consent; `onConsent` sees the consent page. */
  async function authorize(
    browser: BrowserAgent,
    email: string,
    params: Record<string, string> = {},
    onConsent: (page: string) => void = () => undefined,
  ) {
    const { page, redeem } = await startAuthorization(browser, config, { prompt: 'consent', ...params });
    expect(page.text).toContain('Sign in');
    const consent = await signIn(browser, page, email);
    expect(consent.text).toContain('Notes App');
    onConsent(consent.text);
    const callback = await allow(browser, consent);
    expect(callback.url.startsWith(REDIRECT)).toBe(true);
    return redeem(callback.url);
  }

  const signUp = async (prefix: string) => {
    const email = `${prefix}-${Date.now()}-${Math.random().toString(36).slice(2, 6)}@example.com`;
    expect(
      (await callJson(`${base}/v2/signup`, 'POST', { body: { email, password: PASSWORD } })).status,
    ).toBe(201);
    return email;
  };
  const meStatus = async (token: string) =>
    (await callJson(`${base}/v2/me`, 'GET', { bearer: token })).status;

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

  const API_LINE = 'Use the platform API as you: your organizations, their API keys, models and usage';

  it('an application granted `openid email` reads userinfo, and nothing else of the API (403 INSUFFICIENT_SCOPE)', async () => {
    const email = await signUp('no-api');
    let consent = '';
    const tokens = await authorize(new BrowserAgent(base), email, { scope: 'openid email' }, (page) => {
      consent = page;
    });
    expect(consent).toContain('See your email address');
    expect(consent).not.toContain(API_LINE);
    const token = tokens.access_token;
    expect(await oidc.fetchUserInfo(config, token, tokens.claims()!.sub)).toEqual({
      sub: tokens.claims()!.sub,
      email,
      email_verified: false,
    });
    const posted = await fetch(`${base}/oidc/me`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}` },
    });
    expect(posted.status).toBe(200);

    const refused = [
      await callJson(`${base}/v2/me`, 'GET', { bearer: token }),
      await callJson(`${base}/v2/orgs`, 'POST', {
        bearer: token,
        body: { name: 'Mine', slug: `mine-${Date.now()}` },
      }),
      await callJson(`${base}/v2/user/accessTokens`, 'GET', { bearer: token }),
      await callJson(`${base}/llm/v1/models`, 'GET', { bearer: token }),
      await callJson(`${base}/llm/v1/quotas/usage`, 'GET', { bearer: token }),
    ];
    for (const answer of refused) {
      expect(answer.status).toBe(403);
      expect(answer.body).toMatchObject({
        code: 'INSUFFICIENT_SCOPE',
        message: expect.stringContaining('api scope'),
      });
    }
    // The account pages (public routes) see no one: the token cannot mint itself an API token there.
    const account = await fetch(`${base}/account`, {
      headers: { authorization: `Bearer ${token}` },
      redirect: 'manual',
    });
    expect(await account.text()).not.toContain(email);

    // A revoked token is still a 401, not a 403.
    await oidc.tokenRevocation(config, token);
    expect(await meStatus(token)).toBe(401);
  });

  it('an application asking `openid api`: the consent page says what `api` allows, and the token works on the API', async () => {
    const email = await signUp('with-api');
    let consent = '';
    const tokens = await authorize(new BrowserAgent(base), email, { scope: 'openid api' }, (page) => {
      consent = page;
    });
    expect(consent).toContain(API_LINE);
    const claims = JSON.parse(Buffer.from(tokens.access_token.split('.')[1]!, 'base64url').toString());
    expect(claims.scope).toBe('openid api');
    const me = await callJson(`${base}/v2/me`, 'GET', { bearer: tokens.access_token });
    expect(me.status).toBe(200);
    expect(me.body.email).toBe(email);
    // it acts as the person, but mints nothing that would outlive the person revoking its grant
    const as = { bearer: tokens.access_token };
    const slug = `api-app-${Date.now().toString(36)}`;
    expect(
      (await callJson(`${base}/v2/orgs`, 'POST', { ...as, body: { name: 'App org', slug } })).status,
    ).toBe(201);
    const minted = [
      await callJson(`${base}/v2/user/accessTokens`, 'POST', {
        ...as,
        body: { name: 'from app', expiresAt: new Date(Date.now() + 86_400_000).toISOString() },
      }),
      await callJson(`${base}/v2/orgs/${slug}/apikeys`, 'POST', {
        ...as,
        body: { name: 'from app', permissions: ['models:read'] },
      }),
    ];
    expect(
      (await callJson(`${base}/v2/user/active-org`, 'PUT', { ...as, body: { orgSlug: slug } })).status,
    ).toBe(200);
    const workspace = await callJson(`${base}/v2/workspaces`, 'POST', { ...as, body: { name: 'App team' } });
    expect(workspace.status).toBe(201);
    minted.push(
      await callJson(`${base}/v2/workspaces/${workspace.body.id}/security/apikeys`, 'POST', {
        ...as,
        body: { name: 'from app', rules: [{ action: 'read', subject: 'workspace' }] },
      }),
    );
    for (const refused of minted)
      expect(refused.body).toMatchObject({ status: 403, error: 'PlatformSessionRequired' });
    // nor through the account pages, which mint `at:` tokens: there, in its cookie or its header, it is nobody
    const ways: Array<Record<string, string>> = [
      { cookie: `access-token=${tokens.access_token}` },
      { authorization: `Bearer ${tokens.access_token}` },
    ];
    for (const headers of ways) {
      const page = await fetch(`${base}/account`, { headers, redirect: 'manual' });
      expect(await page.text()).not.toContain(email);
    }
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

  it('end session: the provider asks in the platform’s page, then signs the browser out of the platform too', async () => {
    const email = await signUp('end');
    const browser = new BrowserAgent(base);
    const tokens = await authorize(browser, email);
    const cookie = browser.cookies.get('access-token')!;
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
    // The browser's platform session ends with it: its cookie is cleared and no longer accepted ...
    expect(browser.cookies.has('access-token')).toBe(false);
    await waitFor(async () => (await meStatus(cookie)) === 401, { what: 'the platform session revoked' });
    // ... so a new authorization asks to sign in again.
    const again = await startAuthorization(browser, config, { scope: 'openid' });
    expect(again.page.text).toContain('to continue to');
  });

  it('the platform’s own client (no consent) and a client id with a dot: their grants and sessions are stored', async () => {
    const email = await signUp('first-party');
    const browser = new BrowserAgent(base);
    // The first-party client holds `api` without asking for it.
    const web = await startAuthorization(browser, await discover('platform-web'), {
      scope: 'openid email profile',
    });
    const callback = await signIn(browser, web.page, email);
    expect(callback.status).toBe(303);
    expect(callback.url.startsWith(REDIRECT)).toBe(true);
    const webToken = (await web.redeem(callback.url)).access_token;
    expect(await meStatus(webToken)).toBe(200);
    // the platform's own pages, not an application: they mint the person's credentials (0109, "Later")
    const minted = await callJson(`${base}/v2/user/accessTokens`, 'POST', {
      bearer: webToken,
      body: { name: 'from the pages', expiresAt: new Date(Date.now() + 86_400_000).toISOString() },
    });
    expect([minted.status, minted.body.token]).toEqual([201, expect.stringMatching(/^at:/)]);

    const io = { out: () => undefined, err: () => undefined };
    const cli = ['oidc-client', 'add', 'acme.notes', '--redirect-uri', REDIRECT, '--json'];
    expect(await runCli(cli, cliEnv, io)).toBe(0);
    const dotted = await startAuthorization(browser, await discover('acme.notes'));
    const dottedCallback = await allow(browser, dotted.page);
    expect(dottedCallback.url.startsWith(REDIRECT)).toBe(true);
    expect(await meStatus((await dotted.redeem(dottedCallback.url)).access_token)).toBe(200);
  });

  it('registration: a public client made confidential shows its secret once; the platform’s own ids are refused', async () => {
    const lines: string[] = [];
    const io = { out: (l: string) => lines.push(l), err: (l: string) => lines.push(l) };
    const add = async (clientId: string, ...more: string[]) => {
      const code = await runCli(
        ['oidc-client', 'add', clientId, '--redirect-uri', REDIRECT, '--json', ...more],
        cliEnv,
        io,
      );
      return { code, out: code === 0 ? JSON.parse(lines.pop()!) : lines.join('\n') };
    };
    const id = `upgraded-${Date.now()}`;
    expect((await add(id)).out.data.clientSecret).toBeUndefined();
    const upgraded = await add(id, '--confidential');
    expect(upgraded.out).toMatchObject({
      result: 'updated',
      data: { tokenEndpointAuthMethod: 'client_secret_post' },
    });
    expect(upgraded.out.data.clientSecret).toEqual(expect.any(String));
    expect((await add(id, '--confidential')).out.data.clientSecret).toBeUndefined();
    // Sessions of the platform's own sign-in carry these client ids (see browserSignIn).
    for (const reserved of ['platform-password', 'platform-anonymous']) {
      expect((await add(reserved)).code).not.toBe(0);
    }
  });

  it('an application’s access token does not sign its holder in at the provider', async () => {
    const email = await signUp('holder');
    const tokens = await authorize(new BrowserAgent(base), email);
    // The application sends the person's access token as the platform's cookie, in its own cookie jar.
    const app = new BrowserAgent(base);
    app.cookies.set('access-token', tokens.access_token);
    const { page } = await startAuthorization(app, await discover('platform-web'));
    expect(page.status).toBe(200);
    expect(page.text).toContain('to continue to');
  });

  it('a new password ends the provider’s sessions, its grants and the codes not yet redeemed', async () => {
    const email = await signUp('reset');
    const browser = new BrowserAgent(base);
    const tokens = await authorize(browser, email);
    // A second authorization in that browser needs nobody: its code is left unredeemed.
    const pending = await startAuthorization(browser, config);
    expect(pending.page.url.startsWith(REDIRECT)).toBe(true);

    await callJson(`${base}/v2/password/forgot`, 'POST', { body: { email } });
    const link = new URL(await mail.linkFor(email, '/account/reset-password'));
    const reset = await callJson(`${base}/v2/password/reset`, 'POST', {
      body: { token: link.searchParams.get('token'), password: 'a brand new password' },
    });
    expect(reset.status).toBe(204);

    await expect(pending.redeem(pending.page.url)).rejects.toThrow();
    await expect(oidc.refreshTokenGrant(config, tokens.refresh_token!)).rejects.toThrow();
    expect(await meStatus(tokens.access_token)).toBe(401);
    // The provider's cookie alone (the platform's one was revoked) signs nobody in.
    const again = await startAuthorization(browser, config);
    expect(again.page.text).toContain('to continue to');
  });

  it('prompt=login and max_age ask for the person again; a sign-in then answers, with its auth_time', async () => {
    const email = await signUp('again');
    const browser = new BrowserAgent(base);
    await authorize(browser, email);
    // Sign-in times have whole seconds: each request below starts in a later second than the last sign-in.
    const nextSecond = async () => {
      const now = Math.floor(Date.now() / 1000);
      await waitFor(() => Math.floor(Date.now() / 1000) > now, { what: 'the next second' });
      return now;
    };
    const signedInAt = await nextSecond();
    // Without them the browser's session answers, and auth_time (sent when max_age asks) is when the
    // person signed in, not when the cookie was seen.
    const silent = await startAuthorization(browser, config, { max_age: '3600' });
    expect(silent.page.url.startsWith(REDIRECT)).toBe(true);
    expect((await silent.redeem(silent.page.url)).claims()!.auth_time).toBeLessThanOrEqual(signedInAt);

    const asks: Record<string, string>[] = [{ prompt: 'login' }, { max_age: '1' }];
    for (const params of asks) {
      await nextSecond();
      if (params.max_age) await nextSecond(); // more than a second after the last sign-in
      const asked = await startAuthorization(browser, config, params);
      expect(asked.page.text).toContain('to continue to');
      const callback = await signIn(browser, asked.page, email);
      expect(callback.url.startsWith(REDIRECT)).toBe(true);
      await asked.redeem(callback.url);
    }
  });

  it('a code redeemed twice: the replay fails and revokes what the first redemption gave', async () => {
    const email = await signUp('replay');
    const browser = new BrowserAgent(base);
    await authorize(browser, email);
    const { page, redeem } = await startAuthorization(browser, config);
    const tokens = await redeem(page.url);
    await expect(redeem(page.url)).rejects.toThrow();
    await waitFor(async () => (await meStatus(tokens.access_token)) === 401, { what: 'the grant revoked' });
    await expect(oidc.refreshTokenGrant(config, tokens.refresh_token!)).rejects.toThrow();
  });

  it('an unknown or finished interaction answers a page that says to start again', async () => {
    for (const [method, path] of [
      ['GET', '/oidc/interaction/unknown'],
      ['POST', '/oidc/interaction/unknown/login'],
      ['POST', '/oidc/interaction/unknown/confirm'],
    ] as const) {
      const res = await fetch(`${base}${path}`, { method });
      expect(res.status).toBe(400);
      expect(res.headers.get('content-type')).toMatch(/text\/html/);
      expect(await res.text()).toContain('sign in again');
    }
  });

  /** A code + PKCE authorization request of notes-app as form fields; `redeem` exchanges its callback's code. */
  async function authorizationForm(params: Record<string, string> = {}) {
    const verifier = oidc.randomPKCECodeVerifier();
    const state = oidc.randomState();
    const form = {
      client_id: 'notes-app',
      redirect_uri: REDIRECT,
      response_type: 'code',
      scope: 'openid email',
      code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
      state,
      ...params,
    };
    const redeem = (callbackUrl: string) =>
      oidc.authorizationCodeGrant(config, new URL(callbackUrl), {
        pkceCodeVerifier: verifier,
        expectedState: state,
      });
    return { form, redeem };
  }
  const postForm = (path: string, body: string, contentType = 'application/x-www-form-urlencoded') =>
    fetch(`${base}${path}`, {
      method: 'POST',
      redirect: 'manual',
      headers: { 'content-type': contentType },
      body,
    });

  it('OIDC Core 3.1.2.1: a form POST to the authorization endpoint is answered as its GET, by a 303 to it', async () => {
    const email = await signUp('form-post');
    const browser = new BrowserAgent(base);
    await authorize(browser, email);
    const { form, redeem } = await authorizationForm({ prompt: 'none' });
    // 303 to the same path (relative: right under whatever prefix a proxy removed), the form as the query
    const answer = await postForm('/oidc/auth', new URLSearchParams(form).toString());
    // before: 405
    expect(answer.status).toBe(303);
    expect(answer.headers.get('location')).toBe(`?${new URLSearchParams(form)}`);
    // the browser follows with its (Lax) cookies: signed in, prompt=none answers with a code at the redirect_uri
    const callback = await browser.go('/oidc/auth', { method: 'POST', form });
    expect(callback.url.startsWith(`${REDIRECT}?code=`)).toBe(true);
    expect((await redeem(callback.url)).claims()).toMatchObject({ aud: 'notes-app', email });

    // parameters in the query and the body are merged; a browser signed in nowhere is asked to, as by the GET
    const other = await authorizationForm();
    const { client_id, ...rest } = other.form;
    const stranger = new BrowserAgent(base);
    const page = await stranger.go(`/oidc/auth?client_id=${client_id}`, { method: 'POST', form: rest });
    expect(page.status).toBe(200);
    expect(page.text).toContain('to continue to');
    const consent = await signIn(stranger, page, email);
    const second = await allow(stranger, consent);
    expect((await other.redeem(second.url)).claims()).toMatchObject({ email });
  });

  it('a form POST to the end-session endpoint with id_token_hint signs out as its GET does', async () => {
    const email = await signUp('form-end');
    const browser = new BrowserAgent(base);
    const tokens = await authorize(browser, email);
    const cookie = browser.cookies.get('access-token')!;
    // before: 405
    const ask = await browser.go('/oidc/session/end', {
      method: 'POST',
      form: { client_id: 'notes-app', id_token_hint: tokens.id_token! },
    });
    expect(ask.status).toBe(200);
    expect(ask.text).toContain('Sign out?');
    const action = /<form[^>]*action="([^"]+)"/.exec(ask.text)![1]!;
    const done = await browser.go(action, {
      method: 'POST',
      form: { ...formFields(ask.text, action), logout: 'yes' },
    });
    expect(done.status).toBe(200);
    expect(browser.cookies.has('access-token')).toBe(false);
    await waitFor(async () => (await meStatus(cookie)) === 401, { what: 'the platform session revoked' });
  });

  it('a POST to those two that is not a small form, or repeats a parameter of the query, is a 4xx in the envelope', async () => {
    const { form } = await authorizationForm();
    const body = new URLSearchParams(form).toString();
    for (const path of ['/oidc/auth', '/oidc/session/end']) {
      const json = await postForm(path, JSON.stringify(form), 'application/json');
      expect([path, json.status]).toEqual([path, 415]);
      expect(await json.json()).toMatchObject({ code: 'UNSUPPORTED_MEDIA_TYPE', status: 415 });
      const big = await postForm(path, `${body}&request=${'x'.repeat(9 * 1024)}`);
      expect([path, big.status]).toEqual([path, 413]);
      expect(await big.json()).toMatchObject({ code: 'PAYLOAD_TOO_LARGE', status: 413 });
      // a small form that takes three times its size as a query (each `~` is %7E there): before, a 502
      const grows = await postForm(path, `${body}&ui_locales=${'~'.repeat(7500)}`);
      expect([path, grows.status]).toEqual([path, 413]);
      expect(await grows.json()).toMatchObject({ code: 'PAYLOAD_TOO_LARGE', status: 413 });
      // OAuth 2.0: a parameter is sent once
      const twice = await postForm(`${path}?client_id=notes-app`, body);
      expect([path, twice.status]).toEqual([path, 400]);
      expect(await twice.json()).toMatchObject({ error: 'invalid_request', status: 400 });
    }
    // GET (and HEAD) are as they were
    expect((await fetch(`${base}/oidc/session/end`)).status).toBe(200);
    expect((await fetch(`${base}/oidc/session/end`, { method: 'HEAD' })).status).toBe(200);
    const head = await fetch(`${base}/oidc/auth?client_id=notes-app`, { method: 'HEAD', redirect: 'manual' });
    expect(head.headers.get('location')).toMatch(/^http:\/\/127.0.0.1:7\/callback\?error=invalid_request/);
  });

  it('another method on an /oidc path is a 405 in the envelope with Allow, an unknown path a 404 in it; preflights stay', async () => {
    // the edge lets these through only with a credential (an anonymous one will do)
    const { token } = (await callJson(`${base}/v2/login/anonymous`, 'POST')).body as { token: string };
    const call = (method: string, path: string, headers: Record<string, string> = {}) =>
      fetch(`${base}${path}`, { method, headers: { authorization: `Bearer ${token}`, ...headers } });
    for (const [method, path, allowed] of [
      ['PATCH', '/oidc/token', ['POST']],
      ['GET', '/oidc/token', ['POST']],
      ['DELETE', '/oidc/jwks', ['GET', 'HEAD']],
      ['PUT', '/oidc/me', ['GET', 'HEAD', 'POST']],
      ['PATCH', '/oidc/auth', ['GET', 'HEAD', 'POST']],
      ['DELETE', '/oidc/.well-known/openid-configuration', ['GET', 'HEAD']],
      ['PATCH', '/oidc/interaction/some-uid', ['GET', 'HEAD']],
    ] as const) {
      // before: a plain-text 404 Not Found from the provider
      const answer = await call(method, path);
      expect([method, path, answer.status, answer.headers.get('allow')]).toEqual([
        method,
        path,
        405,
        allowed.join(', '),
      ]);
      expect(await answer.json()).toMatchObject({
        status: 405,
        code: 'METHOD_NOT_ALLOWED',
        details: { allowed },
      });
    }
    const unknown = await call('GET', '/oidc/no-such-endpoint');
    expect(unknown.status).toBe(404);
    expect(await unknown.json()).toMatchObject({ status: 404, error: 'RouteNotFound' });
    // OPTIONS that is no CORS preflight: the methods, as on every other path
    for (const [path, allowed] of [
      ['/oidc/token', 'POST'],
      ['/oidc/jwks', 'GET, HEAD'],
    ]) {
      const options = await call('OPTIONS', path!);
      expect([path, options.status, options.headers.get('allow')]).toEqual([path, 200, allowed]);
    }
    // the provider's CORS preflights and its OAuth errors are as they were
    for (const [path, method] of [
      ['/oidc/token', 'POST'],
      ['/oidc/jwks', 'GET'],
      ['/oidc/me', 'GET'],
    ]) {
      const preflight = await call('OPTIONS', path!, {
        origin: 'http://127.0.0.1:7',
        'access-control-request-method': method!,
      });
      expect([path, preflight.status]).toEqual([path, 204]);
      expect(preflight.headers.get('access-control-allow-origin')).toBe('http://127.0.0.1:7');
      expect(preflight.headers.get('access-control-allow-methods')).toContain(method);
    }
    const grant = await call('POST', '/oidc/token', { 'content-type': 'application/x-www-form-urlencoded' });
    expect(grant.status).toBe(400);
    expect(await grant.json()).toMatchObject({ error: 'invalid_request' });
    // every endpoint the discovery names is routed to the provider (a feature turned on needs its route too)
    const discovery = (await (await fetch(`${base}/oidc/.well-known/openid-configuration`)).json()) as Record<
      string,
      unknown
    >;
    const endpoints = Object.entries(discovery).filter(([name]) => /_endpoint$|^jwks_uri$/.test(name));
    expect(endpoints.length).toBeGreaterThanOrEqual(6);
    for (const [name, url] of endpoints) {
      const path = new URL(url as string).pathname;
      const answers = [(await call('GET', path)).status, (await call('POST', path)).status];
      expect([name, answers.some((status) => status !== 404 && status !== 405)]).toEqual([name, true]);
    }
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

  // Last: it revokes the key the tokens of the tests above were signed with (decision 0102).
  it('a revoked signing key: the provider signs with its replacement at once; refresh tokens carry on', async () => {
    const email = `leak-${Date.now()}@example.com`;
    await callJson(`${base}/v2/signup`, 'POST', { body: { email, password: PASSWORD } });
    const tokens = await authorize(new BrowserAgent(base), email);
    expect(await meStatus(tokens.access_token)).toBe(200);
    const kid = (t: string) => JSON.parse(Buffer.from(t.split('.')[0]!, 'base64url').toString()).kid;
    const lines: string[] = [];
    const io = { out: (l: string) => lines.push(l), err: (l: string) => lines.push(l) };
    expect(await runCli(['keys', 'revoke', kid(tokens.access_token), '--json'], cliEnv, io)).toBe(0);
    const { signingKid } = JSON.parse(lines.pop()!).data as { signingKid: string };
    expect(signingKid).not.toBe(kid(tokens.access_token));

    const refreshed = await oidc.refreshTokenGrant(config, tokens.refresh_token!);
    expect(kid(refreshed.access_token)).toBe(signingKid);
    expect(kid(refreshed.id_token!)).toBe(signingKid);
    expect(await meStatus(refreshed.access_token)).toBe(200);
    await waitFor(async () => (await meStatus(tokens.access_token)) === 401, {
      what: 'the edge refusing the revoked key',
    });
  });
});
