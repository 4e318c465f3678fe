import * as OTPAuth from 'otpauth';
import type { startMailCatcher } from '../../services/auth/test/mail-catcher';
import { callJson, startPlatformWithMail, type TestPlatform } from '../harness';
import { BrowserAgent, formFields } from '../support/browser-agent';

/** Defects found by a hunt through auth, each checked through the edge. */

const PASSWORD = 'correct horse battery';

describe("auth through the edge: two-step rules, leaving, and the sign-in pages' cookies", () => {
  let p: TestPlatform;
  let mail: Awaited<ReturnType<typeof startMailCatcher>>;
  let base: string;

  beforeAll(async () => {
    ({ p, mail, base } = await startPlatformWithMail({
      secret: 'auth-hunt-internal-secret-0123456789abcdef',
    }));
  });
  afterAll(async () => {
    await p.stop();
    await mail.close();
  });

  /** A password account with TOTP on, signed in through `POST /v2/login` with a recovery code (a second factor). */
  async function signedInWithSecondFactor(): Promise<{ userId: string; token: string }> {
    const email = `hunt-mfa-${Date.now()}-${Math.random().toString(36).slice(2)}@example.com`;
    const browser = new BrowserAgent(base);
    let page = await browser.go('/account/signup');
    page = await browser.go('/account/signup', {
      method: 'POST',
      form: { ...formFields(page.text, '/account/signup'), email, password: PASSWORD },
    });
    page = await browser.go('/account/mfa');
    const secret = /id="totp-secret">([A-Z2-7]+)</.exec(page.text)![1]!;
    const totp = new OTPAuth.TOTP({ secret: OTPAuth.Secret.fromBase32(secret) });
    page = await browser.go('/account/mfa', {
      method: 'POST',
      form: { ...formFields(page.text, '/account/mfa'), code: totp.generate() },
    });
    const recovery = /<li><code>([0-9a-f]{5}-[0-9a-f]{5})<\/code><\/li>/.exec(page.text)![1]!;
    const login = await callJson(`${base}/v2/login`, 'POST', {
      body: { email, password: PASSWORD, mfaCode: recovery },
    });
    expect(login.status).toBe(200);
    return { userId: login.body.userId, token: login.body.token };
  }

  it('an organization API key cannot turn off the two-step verification its organization requires', async () => {
    const owner = await signedInWithSecondFactor();
    const slug = `hunt-mfa-${Date.now()}`;
    const as = (path: string, method: string, body?: unknown) =>
      callJson(`${base}${path}`, method, { bearer: owner.token, body });
    expect((await as('/v2/orgs', 'POST', { slug, name: 'Strict' })).status).toBe(201);
    const key = await as(`/v2/orgs/${slug}/apikeys`, 'POST', {
      name: 'automation',
      permissions: ['members:read', 'members:manage'],
    });
    expect(key.status).toBe(201);
    expect((await as(`/v2/orgs/${slug}/security`, 'PUT', { requireMfa: true })).status).toBe(200);

    // the key (a script's credential, guarded by no second factor) may not lift the rule its people are held to
    const off = await callJson(`${base}/v2/orgs/${slug}/security`, 'PUT', {
      apiKey: key.body.apiKey,
      body: { requireMfa: false },
    });
    expect(off.status).toBe(403);
    expect((await as(`/v2/orgs/${slug}/security`, 'GET')).body).toEqual({ orgSlug: slug, requireMfa: true });
    // the owner, signed in with the second factor, still may
    expect((await as(`/v2/orgs/${slug}/security`, 'PUT', { requireMfa: false })).body).toEqual({
      orgSlug: slug,
      requireMfa: false,
    });
  });

  it('a cookie of the sign-in pages with a malformed percent-escape is no cookie, nor is a signature of other characters: never a 500', async () => {
    for (const [path, cookie] of [
      ['/account/login', 'csrf-token=%E0%A4%A'],
      ['/account/signup', 'csrf-token=%'],
      ['/account/login/mfa', 'mfa-pending=%zz'],
      ['/account/sso/nobody/callback?code=x&state=y', 'sso-state=%'],
      // as many characters as a signature has, but not as many bytes
      ['/account/sso/nobody/callback?code=x&state=y', `sso-state=e30.${'%C3%A9'.repeat(43)}`],
    ] as const) {
      const res = await fetch(`${base}${path}`, { headers: { cookie: cookie }, redirect: 'manual' });
      expect([path, res.status < 500]).toEqual([path, true]);
    }
    // the login page still works: a fresh CSRF cookie replaces the broken one
    const page = await fetch(`${base}/account/login`, { headers: { cookie: 'csrf-token=%' } });
    expect(page.status).toBe(200);
    expect(page.headers.getSetCookie().some((c) => c.startsWith('csrf-token='))).toBe(true);
  });

  it('a member without a second factor may still leave an organization that requires one, and its workspaces', async () => {
    const owner = await signedInWithSecondFactor();
    const slug = `hunt-leave-${Date.now()}`;
    const as = (who: { token: string }, path: string, method: string, body?: unknown) =>
      callJson(`${base}${path}`, method, { bearer: who.token, body });
    expect((await as(owner, '/v2/orgs', 'POST', { slug, name: 'Strict' })).status).toBe(201);
    const member = (await callJson(`${base}/v2/login/anonymous`, 'POST')).body;
    const added = await as(owner, `/v2/orgs/${slug}/members`, 'POST', {
      userId: member.userId,
      role: 'member',
    });
    expect(added.status).toBe(201);
    expect((await as(owner, '/v2/user/active-org', 'PUT', { orgSlug: slug })).status).toBe(200);
    const ws = (await as(owner, '/v2/workspaces', 'POST', { name: 'Team' })).body.id;
    expect(
      (await as(owner, `/v2/workspaces/${ws}/members/${member.userId}`, 'PUT', { role: 'editor' })).status,
    ).toBe(201);
    expect((await as(owner, `/v2/orgs/${slug}/security`, 'PUT', { requireMfa: true })).status).toBe(200);

    // the member cannot act in it (the rule holds)...
    expect((await as(member, `/v2/orgs/${slug}`, 'GET')).body.error).toBe('MfaRequired');
    expect((await as(member, `/v2/workspaces/${ws}`, 'GET')).body.error).toBe('MfaRequired');
    // removing someone else is not leaving: the rule still holds there
    const removal = await as(member, `/v2/orgs/${slug}/members/${owner.userId}`, 'DELETE');
    expect([removal.status, removal.body.error]).toEqual([403, 'MfaRequired']);
    // ...but leaving is always theirs (decision 0032: an invitee can leave at any time), a workspace as the organization
    expect((await as(member, `/v2/workspaces/${ws}/members/${member.userId}`, 'DELETE')).status).toBe(204);
    expect(
      (await as(owner, `/v2/workspaces/${ws}/members`, 'GET')).body.map((m: { userId: string }) => m.userId),
    ).toEqual([owner.userId]);
    expect((await as(member, `/v2/orgs/${slug}/members/${member.userId}`, 'DELETE')).status).toBe(204);
    expect((await as(member, '/v2/me', 'GET')).body.memberships).toEqual([]);
  });
});
