import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { runCli } from '@platform/operator-cli';
import { freePort } from '@platform/testkit';
import Provider from 'oidc-provider';
import { startMailCatcher } from '../../services/auth/test/mail-catcher';
import { callJson, startPlatformWithMail, type TestPlatform } from '../harness';
import { BrowserAgent, formFields } from '../support/browser-agent';

/**
 * Single sign-on: a second oidc-provider plays a company's identity provider (its development login
 * accepts any name; `<name>@acme.example` is its verified email). Through the edge.
 */
describe('sign-in with an external OpenID Connect provider', () => {
  let p: TestPlatform;
  let mail: Awaited<ReturnType<typeof startMailCatcher>>;
  let idp: Server;
  let idpUrl: string;
  let base: string;
  let cliEnv: Record<string, string>;
  let companySlug: string;

  beforeAll(async () => {
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    idp = createServer();
    idp.listen(0, '127.0.0.1');
    await once(idp, 'listening');
    idpUrl = `http://127.0.0.1:${(idp.address() as AddressInfo).port}`;
    const provider = new Provider(idpUrl, {
      clients: [
        {
          client_id: 'platform',
          client_secret: 'company-secret-for-the-platform',
          redirect_uris: [`${base}/account/sso/acme/callback`],
          token_endpoint_auth_method: 'client_secret_post',
        },
      ],
      claims: { email: ['email', 'email_verified'], profile: ['given_name'] },
      async findAccount(_ctx, sub) {
        return {
          accountId: sub,
          claims: async () => ({
            sub,
            email: `${sub}@acme.example`,
            email_verified: !sub.startsWith('unverified'),
            given_name: sub,
          }),
        };
      },
      pkce: { required: () => true },
    });
    idp.on('request', provider.callback());

    ({ p, mail, cliEnv } = await startPlatformWithMail({
      secret: 'sso-e2e-internal-secret-0123456789abcdef',
      port,
      env: { ANONYMOUS_LOGIN_RATE_LIMIT: '1000' },
    }));
  });
  afterAll(async () => {
    await p.stop();
    await mail.close();
    idp.close();
  });

  /** `withSecret` false: run again without `--client-secret` */
  async function addProvider(org?: string, withSecret = true) {
    const out: string[] = [];
    const io = { out: (l: string) => out.push(l), err: (l: string) => out.push(l) };
    const argv = ['sso', 'add', 'acme', '--issuer', idpUrl, '--client-id', 'platform'];
    if (withSecret) argv.push('--client-secret', 'company-secret-for-the-platform');
    argv.push('--name', 'Acme Corp', '--json');
    if (org) argv.push('--org', org);
    expect(await runCli(argv, cliEnv, io)).toBe(0);
    return JSON.parse(out.pop()!);
  }

  /**
   * Makes the company's provider the platform's: the CLI's request with an explicit `orgSlug: null` (run again
   * without `--org`, the provider keeps its organization; the CLI has no option yet to send null).
   */
  async function makePlatformWide() {
    const res = await fetch(`${cliEnv.AUTH_URL}/internal/sso-providers/acme`, {
      method: 'PUT',
      headers: {
        'content-type': 'application/json',
        'x-platform-internal-secret': cliEnv.PLATFORM_INTERNAL_SECRET!,
      },
      body: JSON.stringify({ name: 'Acme Corp', issuer: idpUrl, clientId: 'platform', orgSlug: null }),
    });
    expect(res.status).toBe(200);
    return res.json();
  }

  /** Signs in at the company's provider as `name`; answers the agent (its platform cookies) and the last page. */
  async function signInWithAcme(name: string) {
    const browser = new BrowserAgent(base, { stopAt: [`${base}/account?`, `${base}/account/login/mfa`] });
    let page = await browser.go(`${base}/account/login`);
    expect(page.text).toContain('Sign in with Acme Corp');
    page = await browser.go(`${base}/account/sso/acme?next=/account`);
    for (let i = 0; i < 3 && page.url.startsWith(idpUrl); i++) {
      const action = /action="([^"]+)"/.exec(page.text)![1]!;
      const prompt = /name="prompt" value="([^"]+)"/.exec(page.text)![1]!;
      page = await browser.go(new URL(action, idpUrl).toString(), {
        method: 'POST',
        form: prompt === 'login' ? { prompt, login: name, password: 'anything' } : { prompt },
      });
    }
    return { browser, page };
  }

  const cookieOf = (browser: BrowserAgent) => `access-token=${browser.cookies.get('access-token')}`;

  it('a new person signs in through the company provider; a company provider makes them a member', async () => {
    const owner = await callJson(`${base}/v2/login/anonymous`, 'POST');
    const slug = `acme-${Date.now()}`;
    companySlug = slug;
    expect(
      (await callJson(`${base}/v2/orgs`, 'POST', { bearer: owner.body.token, body: { name: 'Acme', slug } }))
        .status,
    ).toBe(201);
    const added = await addProvider(slug);
    expect(added).toMatchObject({
      result: 'created',
      data: { redirectUri: `${base}/account/sso/acme/callback` },
    });

    const { browser, page } = await signInWithAcme('grace');
    expect(page.url).toBe(`${base}/account`);
    const me = await fetch(`${base}/v2/me`, { headers: { cookie: cookieOf(browser) } });
    expect(me.status).toBe(200);
    expect(await me.json()).toMatchObject({
      email: 'grace@acme.example',
      anonymous: false,
      memberships: [expect.objectContaining({ orgSlug: slug, role: 'member' })],
    });
  });

  it('an existing account with the same verified email is linked, not duplicated', async () => {
    // the platform's own provider (no organization)
    expect(await makePlatformWide()).toMatchObject({
      result: 'updated',
      orgSlug: null,
      hasClientSecret: true,
    });
    const email = 'linus@acme.example';
    const signup = await callJson(`${base}/v2/signup`, 'POST', {
      body: { email, password: 'a long password here' },
    });
    expect(signup.status).toBe(201);
    // Not linked while the local address is unconfirmed (nobody may pre-register someone else's email).
    const early = await signInWithAcme('linus');
    expect(early.page.status).toBe(403);
    expect(early.page.text).toContain('not confirmed');
    await fetch(await mail.linkFor(email, '/account/verify-email'));

    const { browser } = await signInWithAcme('linus');
    const me = await fetch(`${base}/v2/me`, { headers: { cookie: cookieOf(browser) } });
    expect(((await me.json()) as { id: string }).id).toBe(signup.body.userId);
    // And again: the identity is remembered.
    const again = await signInWithAcme('linus');
    const me2 = await fetch(`${base}/v2/me`, { headers: { cookie: cookieOf(again.browser) } });
    expect(((await me2.json()) as { id: string }).id).toBe(signup.body.userId);
  });

  it('a company’s provider does not sign in as an account outside its organization', async () => {
    expect(await addProvider(companySlug)).toMatchObject({ result: 'updated' });
    const email = 'dana@acme.example';
    expect(
      (await callJson(`${base}/v2/signup`, 'POST', { body: { email, password: 'a long password here' } }))
        .status,
    ).toBe(201);
    await fetch(await mail.linkFor(email, '/account/verify-email'));
    // Whoever runs the company's provider can assert any address: a verified one is not enough.
    const { browser, page } = await signInWithAcme('dana');
    expect(page.status).toBe(403);
    expect(page.text).toContain('outside Acme Corp');
    expect(browser.cookies.has('access-token')).toBe(false);
  });

  it('the company’s provider named again without --org stays the company’s: its people still become members', async () => {
    // before: it became the platform's provider ('updated', orgSlug null), and nobody joined the company any more
    expect(await addProvider()).toMatchObject({ result: 'exists', data: { orgSlug: companySlug } });
    const { browser, page } = await signInWithAcme('jack');
    expect(page.url).toBe(`${base}/account`);
    const me = await fetch(`${base}/v2/me`, { headers: { cookie: cookieOf(browser) } });
    expect(await me.json()).toMatchObject({
      email: 'jack@acme.example',
      memberships: [expect.objectContaining({ orgSlug: companySlug, role: 'member' })],
    });
  });

  it('a provider that does not confirm the email is refused', async () => {
    const { page } = await signInWithAcme('unverified-eve');
    expect(page.status).toBe(403);
    expect(page.text).toContain('did not confirm an email address');
  });

  it('an address an SSO sign-in made an account for takes no second account: API, page and anonymous sign-up are 409', async () => {
    const { browser } = await signInWithAcme('henry');
    const me = await fetch(`${base}/v2/me`, { headers: { cookie: cookieOf(browser) } });
    const henry = (await me.json()) as { id: string; email: string };
    expect(henry.email).toBe('henry@acme.example');
    const email = ' Henry@ACME.example ';

    const api = await callJson(`${base}/v2/signup`, 'POST', {
      body: { email, password: 'a long password here' },
    });
    expect(api.status).toBe(409);
    expect(api.body).toMatchObject({ error: 'SignupRefused', status: 409 });

    const anonymous = await callJson(`${base}/v2/login/anonymous`, 'POST');
    const upgrade = await callJson(`${base}/v2/signup`, 'POST', {
      bearer: anonymous.body.token,
      body: { email, password: 'a long password here' },
    });
    expect(upgrade.body).toMatchObject({ error: 'SignupRefused', status: 409 });
    const stillAnonymous = await callJson(`${base}/v2/me`, 'GET', { bearer: anonymous.body.token });
    expect(stillAnonymous.body).toMatchObject({ anonymous: true, email: null });

    const visitor = new BrowserAgent(base);
    const form = await visitor.go('/account/signup');
    const page = await visitor.go('/account/signup', {
      method: 'POST',
      form: { ...formFields(form.text, '/account/signup'), email, password: 'a long password here' },
    });
    expect(page.status).toBe(409);
    expect(page.text).toContain('An account cannot be created with this email');
    // nor can the address sign in with a password it never had
    const login = await callJson(`${base}/v2/login`, 'POST', {
      body: { email, password: 'a long password here' },
    });
    expect(login.status).toBe(401);
    const again = await signInWithAcme('henry');
    const me2 = await fetch(`${base}/v2/me`, { headers: { cookie: cookieOf(again.browser) } });
    expect(((await me2.json()) as { id: string }).id).toBe(henry.id);
  });

  it('the provider named again without its secret keeps it: people still sign in', async () => {
    // before: the stored secret was removed ('updated'), and the company provider refused every sign-in
    expect(await addProvider(companySlug, false)).toMatchObject({
      result: 'exists',
      data: { hasClientSecret: true },
    });
    const { page } = await signInWithAcme('ivy');
    expect(page.url).toBe(`${base}/account`);
  });

  it('a forged or replayed callback is refused', async () => {
    const res = await fetch(`${base}/account/sso/acme/callback?code=forged&state=forged`);
    expect(res.status).toBe(400);
    expect(await res.text()).toContain('Please start again');
  });
});
