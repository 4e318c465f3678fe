import http from 'node:http';
import { freePort } from '@platform/testkit';
import { startMailCatcher } from '../../services/auth/test/mail-catcher';
import { callJson, startTestPlatform, type TestPlatform } from '../harness';
import { BrowserAgent, formFields } from '../support/browser-agent';

/** Password accounts as a client reaches them: through the edge, with a real SMTP server. */

const PASSWORD = 'correct horse battery';
let n = 0;
const newEmail = () => `e2e-${++n}-${Date.now()}@example.com`;

/** `name=value` pairs of a response's Set-Cookie headers. */
function cookiesOf(res: Response): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of res.headers.getSetCookie()) {
    const [pair] = line.split(';');
    const i = pair!.indexOf('=');
    out[pair!.slice(0, i)] = pair!.slice(i + 1);
  }
  return out;
}

describe('accounts through the edge', () => {
  let p: TestPlatform;
  let mail: Awaited<ReturnType<typeof startMailCatcher>>;
  beforeAll(async () => {
    mail = await startMailCatcher();
    const port = await freePort();
    p = await startTestPlatform({
      port,
      env: {
        // the public root as compose and the manifests give it: the issuer alone
        JWT_ISSUER: `http://127.0.0.1:${port}`,
        PUBLIC_BASE_URL: undefined,
        SMTP_URL: mail.url,
        PASSWORD_SCRYPT_N: '1024',
        PASSWORD_SCRYPT_P: '1',
        ANONYMOUS_LOGIN_RATE_LIMIT: '1000',
      },
    });
  });
  afterAll(async () => {
    await p.stop();
    await mail.close();
  });

  it('sign up, open the mailed link, sign in: the cookie alone answers GET /v2/me with the email', async () => {
    const email = newEmail();
    const signup = await callJson(`${p.baseUrl}/v2/signup`, 'POST', { body: { email, password: PASSWORD } });
    expect(signup.status).toBe(201);
    const link = await mail.linkFor(email, '/account/verify-email');
    expect(link.startsWith(`${p.baseUrl}/account/verify-email?token=`)).toBe(true);
    const page = await fetch(link);
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('Email confirmed');

    const login = await fetch(`${p.baseUrl}/v2/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email, password: PASSWORD }),
    });
    expect(login.status).toBe(200);
    const cookies = cookiesOf(login);
    expect(cookies['access-token']).toBeTruthy();
    expect(cookies['csrf-token']).toBeTruthy();
    const me = await fetch(`${p.baseUrl}/v2/me`, {
      headers: { cookie: `access-token=${cookies['access-token']}` },
    });
    expect(me.status).toBe(200);
    expect(await me.json()).toMatchObject({ email, anonymous: false, credential: { kind: 'session' } });

    // A cross-site form can make the browser send both cookies but not the header: refused, nothing changes.
    const cookie = `access-token=${cookies['access-token']}; csrf-token=${cookies['csrf-token']}`;
    const forged = await fetch(`${p.baseUrl}/v2/logout`, { method: 'POST', headers: { cookie } });
    expect(forged.status).toBe(403);
    expect(await forged.json()).toMatchObject({ code: 'CSRF_TOKEN_INVALID' });
    expect((await fetch(`${p.baseUrl}/v2/me`, { headers: { cookie } })).status).toBe(200);

    // Sign out with the cookie (and the CSRF header a page's script sends): the cookie stops working.
    const logout = await fetch(`${p.baseUrl}/v2/logout`, {
      method: 'POST',
      headers: { cookie, 'x-csrf-token': cookies['csrf-token']! },
    });
    expect(logout.status).toBe(204);
    expect(logout.headers.getSetCookie().some((c) => c.startsWith('access-token=;'))).toBe(true);
    const after = await fetch(`${p.baseUrl}/v2/me`, { headers: { cookie } });
    expect(after.status).toBe(401);
  });

  it('an anonymous user who signs up keeps its organizations', async () => {
    const anon = await callJson(`${p.baseUrl}/v2/login/anonymous`, 'POST');
    const slug = `anon-org-${Date.now()}`;
    const org = await callJson(`${p.baseUrl}/v2/orgs`, 'POST', {
      bearer: anon.body.token,
      body: { name: 'Anon Org', slug },
    });
    expect(org.status).toBe(201);
    const email = newEmail();
    const signup = await callJson(`${p.baseUrl}/v2/signup`, 'POST', {
      bearer: anon.body.token,
      body: { email, password: PASSWORD },
    });
    expect(signup.status).toBe(201);
    expect(signup.body.userId).toBe(anon.body.userId);
    const login = await callJson(`${p.baseUrl}/v2/login`, 'POST', { body: { email, password: PASSWORD } });
    const me = await callJson(`${p.baseUrl}/v2/me`, 'GET', { bearer: login.body.token });
    expect(me.body).toMatchObject({ id: anon.body.userId, email, activeOrgSlug: slug });
  });

  it('a refreshed token works at the edge; a reused refresh token ends the session everywhere', async () => {
    const email = newEmail();
    const s = await callJson(`${p.baseUrl}/v2/signup`, 'POST', { body: { email, password: PASSWORD } });
    const r = await callJson(`${p.baseUrl}/v2/login/refresh`, 'POST', {
      body: { refreshToken: s.body.refreshToken },
    });
    expect(r.status).toBe(200);
    expect((await callJson(`${p.baseUrl}/v2/me`, 'GET', { bearer: r.body.token })).status).toBe(200);
    const reuse = await callJson(`${p.baseUrl}/v2/login/refresh`, 'POST', {
      body: { refreshToken: s.body.refreshToken },
    });
    expect(reuse.status).toBe(401);
    expect((await callJson(`${p.baseUrl}/v2/me`, 'GET', { bearer: r.body.token })).status).toBe(401);
    expect((await callJson(`${p.baseUrl}/v2/me`, 'GET', { bearer: s.body.token })).status).toBe(401);
  });

  it("mails links on the platform's public root, whatever Host the request named", async () => {
    const email = newEmail();
    await callJson(`${p.baseUrl}/v2/signup`, 'POST', { body: { email, password: PASSWORD } });
    // a client that forges Host must not get the victim a reset link to the client's own server
    const forged = await new Promise<number>((resolve, reject) => {
      const req = http.request(
        `${p.baseUrl}/v2/password/forgot`,
        { method: 'POST', headers: { host: 'attacker.example', 'content-type': 'application/json' } },
        (res) => resolve(res.resume().statusCode!),
      );
      req.on('error', reject);
      req.end(JSON.stringify({ email }));
    });
    expect(forged).toBe(202);
    const link = await mail.linkFor(email, '/account/reset-password');
    expect(link.startsWith(`${p.baseUrl}/account/reset-password?token=`)).toBe(true);
  });

  it('password reset through the mailed page', async () => {
    const email = newEmail();
    await callJson(`${p.baseUrl}/v2/signup`, 'POST', { body: { email, password: PASSWORD } });
    expect((await callJson(`${p.baseUrl}/v2/password/forgot`, 'POST', { body: { email } })).status).toBe(202);
    const link = new URL(await mail.linkFor(email, '/account/reset-password'));
    expect((await fetch(link)).status).toBe(200);
    const done = await fetch(`${p.baseUrl}/account/reset-password`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ token: link.searchParams.get('token')!, password: 'my new long password' }),
    });
    expect(done.status).toBe(200);
    expect(await done.text()).toContain('Password changed');
    const login = await callJson(`${p.baseUrl}/v2/login`, 'POST', {
      body: { email, password: 'my new long password' },
    });
    expect(login.status).toBe(200);
  });
  it('the sign-up page makes no account that POST /v2/login would refuse as an invalid email', async () => {
    for (const email of [`ü-${Date.now()}@example.com`, `dot-${Date.now()}@example.c`]) {
      const browser = new BrowserAgent(p.baseUrl);
      const form = await browser.go('/account/signup');
      const page = await browser.go('/account/signup', {
        method: 'POST',
        form: { ...formFields(form.text, '/account/signup'), email, password: PASSWORD },
      });
      expect([email, page.status]).toEqual([email, 400]);
      expect(page.text).toContain('Enter a valid email address');
      // what the page accepts, the API signs in: here neither
      const login = await callJson(`${p.baseUrl}/v2/login`, 'POST', { body: { email, password: PASSWORD } });
      expect(login.status).toBe(400);
    }
  });
});
