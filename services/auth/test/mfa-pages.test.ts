import { sealPrincipal } from '@platform/kernel';
import * as OTPAuth from 'otpauth';
import { type AuthHarness, INTERNAL_SECRET, randomAddress, startAuth } from './helpers';

/** Two-step verification and the pages' CSRF tokens, at the service (the edge's part is played here). */

const PASSWORD = 'correct horse battery';

describe('two-step verification (TOTP) and page forms', () => {
  let a: AuthHarness;
  beforeAll(async () => {
    a = await startAuth({ env: { PASSWORD_SCRYPT_N: '1024', PASSWORD_SCRYPT_P: '1' } });
  });
  afterAll(() => a.stop());

  /** The headers the edge adds for a session. */
  async function asSession(userId: string, sessionId: string, h = a) {
    const { principal } = await h.service.context.introspection.resolve(
      { kind: 'session', userId, sessionId },
      null,
      't',
    );
    return {
      'x-platform-principal': sealPrincipal(principal, INTERNAL_SECRET, h.clock),
      'x-platform-user-id': userId,
    };
  }

  const csrfOf = (html: string, action: string) =>
    new RegExp(`action="${action}"[^]*?name="csrf" value="([^"]+)"`).exec(html)![1]!;

  async function enrolled(h = a) {
    const email = `mfa-${Date.now()}-${Math.random().toString(36).slice(2)}@example.com`;
    const s = await h.http
      .post('/v2/signup')
      .set('x-forwarded-for', randomAddress())
      .send({ email, password: PASSWORD });
    const headers = await asSession(s.body.userId, s.body.sessionId, h);
    const setup = await h.http.get('/account/mfa').set(headers);
    expect(setup.status).toBe(200);
    expect(setup.text).toContain('<svg');
    const secret = /id="totp-secret">([A-Z2-7]+)</.exec(setup.text)![1]!;
    const totp = new OTPAuth.TOTP({ secret: OTPAuth.Secret.fromBase32(secret) });
    const code = (offsetMs = 0) => totp.generate({ timestamp: h.clock.now().getTime() + offsetMs });

    const forged = await h.http
      .post('/account/mfa')
      .set(headers)
      .type('form')
      .send({ code: code(), csrf: 'forged' });
    expect(forged.status).toBe(403);
    const on = await h.http
      .post('/account/mfa')
      .set(headers)
      .type('form')
      .send({ code: code(), csrf: csrfOf(setup.text, '/account/mfa') });
    expect(on.status).toBe(200);
    const recovery = [...on.text.matchAll(/<li><code>([0-9a-f]{5}-[0-9a-f]{5})<\/code><\/li>/g)].map(
      (m) => m[1]!,
    );
    expect(recovery).toHaveLength(10);
    return { email, code, recovery, headers };
  }

  const login = (email: string, mfaCode?: string) =>
    a.http
      .post('/v2/login')
      .set('x-forwarded-for', randomAddress())
      .send({ email, password: PASSWORD, ...(mfaCode ? { mfaCode } : {}) });

  it('a password alone is not enough once TOTP is on; each code works once', async () => {
    const { email, code } = await enrolled();
    const bare = await login(email);
    expect(bare.status).toBe(401);
    expect(bare.body.error).toBe('MfaRequired');
    expect((await login(email, '000000')).body.error).toBe('InvalidMfaCode');
    a.clock.advance(30_000);
    const ok = await login(email, code());
    expect(ok.status).toBe(200);
    // the same code (same time step) again: refused
    expect((await login(email, code())).status).toBe(401);
  });

  it('a recovery code signs in once', async () => {
    const { email, recovery } = await enrolled();
    expect((await login(email, recovery[0])).status).toBe(200);
    expect((await login(email, recovery[0])).status).toBe(401);
    expect((await login(email, recovery[1]!.toUpperCase())).status).toBe(200);
  });

  it('sign-in forms refuse a post without their CSRF token, and pages carry a strict CSP', async () => {
    const page = await a.http.get('/account/login');
    expect(page.headers['content-security-policy']).toMatch(
      /default-src 'none'.*form-action 'self'.*frame-ancestors 'none'/,
    );
    expect(page.headers['content-security-policy']).not.toMatch(/unsafe-inline|script-src/);
    const cookie = (page.headers['set-cookie'] as unknown as string[]).map((c) => c.split(';')[0]).join('; ');
    const noToken = await a.http
      .post('/account/login')
      .set('cookie', cookie)
      .type('form')
      .send({ email: 'x@y.z', password: 'p' });
    expect(noToken.status).toBe(403);
    const withToken = await a.http
      .post('/account/login')
      .set('cookie', cookie)
      .type('form')
      .send({
        email: 'nobody@example.com',
        password: 'wrong password',
        csrf: csrfOf(page.text, '/account/login'),
      });
    expect(withToken.status).toBe(401);
    expect(withToken.text).toContain('Email or password is incorrect');
  });

  it("the sign-in page's code step spends the login budget: codes cannot be guessed without limit", async () => {
    const { email, code } = await enrolled();
    a.clock.advance(30_000);
    const address = randomAddress();
    const cookiesOf = (res: { headers: Record<string, unknown> }) =>
      ((res.headers['set-cookie'] as string[] | undefined) ?? []).map((c) => c.split(';')[0]!);
    const page = await a.http.get('/account/login').set('x-forwarded-for', address);
    let cookie = cookiesOf(page).join('; ');
    const password = await a.http
      .post('/account/login')
      .set({ cookie, 'x-forwarded-for': address })
      .type('form')
      .send({ email, password: PASSWORD, csrf: csrfOf(page.text, '/account/login') });
    expect(password.status).toBe(303);
    expect(password.headers.location).toMatch(/^\/account\/login\/mfa/);
    cookie = [cookie, ...cookiesOf(password)].join('; ');
    const step = await a.http.get('/account/login/mfa').set({ cookie, 'x-forwarded-for': address });
    const csrf = csrfOf(step.text, '/account/login/mfa');
    const tryCode = (value: string) =>
      a.http
        .post('/account/login/mfa')
        .set({ cookie, 'x-forwarded-for': address })
        .type('form')
        .send({ code: value, csrf });
    // the password took one point of the account's 10 (LOGIN_ACCOUNT_MAX_FAILURES); wrong codes take the rest
    const statuses: number[] = [];
    for (let i = 0; i < 10; i++) statuses.push((await tryCode('000000')).status);
    expect(statuses).toEqual([401, 401, 401, 401, 401, 401, 401, 401, 401, 429]);
    // locked: the right code too, as the right password would be
    const right = await tryCode(code());
    expect(right.status).toBe(429);
    expect(right.text).toContain('Too many failed sign-in attempts');
  });

  it('a right password asking for its code, and a right code, give their point of the login budget back: two-step sign-ins do not lock their address out', async () => {
    const b = await startAuth({
      env: { PASSWORD_SCRYPT_N: '1024', PASSWORD_SCRYPT_P: '1', LOGIN_ADDRESS_MAX_FAILURES: '3' },
    });
    try {
      const { email, code } = await enrolled(b);
      // an office behind one address: each sign-in on the page, its password and then its code
      const address = randomAddress();
      const cookiesOf = (res: { headers: Record<string, unknown> }) =>
        ((res.headers['set-cookie'] as string[] | undefined) ?? []).map((c) => c.split(';')[0]!);
      const signIn = async () => {
        b.clock.advance(30_000);
        const page = await b.http.get('/account/login').set('x-forwarded-for', address);
        let cookie = cookiesOf(page).join('; ');
        const password = await b.http
          .post('/account/login')
          .set({ cookie, 'x-forwarded-for': address })
          .type('form')
          .send({ email, password: PASSWORD, csrf: csrfOf(page.text, '/account/login') });
        if (password.status !== 303) return password.status;
        cookie = [cookie, ...cookiesOf(password)].join('; ');
        const step = await b.http.get('/account/login/mfa').set({ cookie, 'x-forwarded-for': address });
        const sent = await b.http
          .post('/account/login/mfa')
          .set({ cookie, 'x-forwarded-for': address })
          .type('form')
          .send({ code: code(), csrf: csrfOf(step.text, '/account/login/mfa') });
        return sent.status;
      };
      const statuses: number[] = [];
      for (let i = 0; i < 6; i++) statuses.push(await signIn());
      // before: [303, 303, 429, 429, 429, 429]: each sign-in kept one point of the address's 3
      expect(statuses).toEqual([303, 303, 303, 303, 303, 303]);
      // the API the same way: the password alone (401 MfaRequired), then with the code
      const other = randomAddress();
      const api = (mfaCode?: string) =>
        b.http
          .post('/v2/login')
          .set('x-forwarded-for', other)
          .send({ email, password: PASSWORD, ...(mfaCode ? { mfaCode } : {}) });
      const answers: string[] = [];
      for (let i = 0; i < 4; i++) {
        b.clock.advance(30_000);
        answers.push(`${(await api()).body.error} ${(await api(code())).status}`);
      }
      // before: "MfaRequired 429" and "RATE_LIMITED 429" for the last two: each password asking for its code kept a point
      expect(answers).toEqual(Array(4).fill('MfaRequired 200'));
    } finally {
      await b.stop();
    }
  });

  it('turning two-step verification off spends the login budget too: a stolen session cannot guess codes', async () => {
    const { code, headers } = await enrolled();
    a.clock.advance(30_000);
    const home = await a.http.get('/account').set(headers);
    const csrf = csrfOf(home.text, '/account/mfa/disable');
    const tryCode = (value: string) =>
      a.http.post('/account/mfa/disable').set(headers).type('form').send({ code: value, csrf });
    const statuses: number[] = [];
    for (let i = 0; i < 11; i++) statuses.push((await tryCode('000000')).status);
    expect(statuses).toEqual([...Array(10).fill(400), 429]);
    expect((await tryCode(code())).status).toBe(429);
  });

  it('an organization can require two-step verification of its members', async () => {
    const owner = await enrolled();
    a.clock.advance(30_000);
    const ownerLogin = await login(owner.email, owner.code());
    const ownerActor = {
      credential: {
        kind: 'session' as const,
        userId: ownerLogin.body.userId,
        sessionId: ownerLogin.body.sessionId,
      },
    };
    const slug = `mfa-org-${Date.now()}`;
    expect((await a.call(ownerActor, 'post', '/v2/orgs', { name: 'Strict', slug })).status).toBe(201);

    const memberEmail = `member-${Date.now()}@example.com`;
    const member = await a.http
      .post('/v2/signup')
      .set('x-forwarded-for', randomAddress())
      .send({ email: memberEmail, password: PASSWORD });
    const memberActor = {
      credential: { kind: 'session' as const, userId: member.body.userId, sessionId: member.body.sessionId },
    };
    expect(
      (
        await a.call(ownerActor, 'post', `/v2/orgs/${slug}/members`, {
          userId: member.body.userId,
          role: 'owner',
        })
      ).status,
    ).toBe(201);
    // The member has no second factor: it may not turn the rule on, and before the rule it may act.
    const refused = await a.call(memberActor, 'put', `/v2/orgs/${slug}/security`, { requireMfa: true });
    expect(refused.status).toBe(403);
    expect(refused.body.error).toBe('MfaRequired');
    expect((await a.call(memberActor, 'get', `/v2/orgs/${slug}`)).status).toBe(200);
    expect((await a.call(memberActor, 'put', '/v2/user/active-org', { orgSlug: slug })).status).toBe(200);
    const workspace = await a.call(memberActor, 'post', '/v2/workspaces', { name: 'Before the rule' });
    expect(workspace.status).toBe(201);
    // access tokens made now, by a session with and without a second factor
    const expiresAt = new Date(a.clock.now().getTime() + 86_400_000).toISOString();
    const tokenActor = async (actor: typeof memberActor | typeof ownerActor) => {
      const minted = await a.call(actor, 'post', '/v2/user/accessTokens', { name: 'ci', expiresAt });
      expect(minted.status).toBe(201);
      return a.accessToken(minted.body.token as string);
    };
    const memberToken = await tokenActor(memberActor);
    const ownerToken = await tokenActor(ownerActor);

    const on = await a.call(ownerActor, 'put', `/v2/orgs/${slug}/security`, { requireMfa: true });
    expect(on.status).toBe(200);
    expect(on.body).toEqual({ orgSlug: slug, requireMfa: true });
    const blocked = await a.call(memberActor, 'get', `/v2/orgs/${slug}`);
    expect(blocked.status).toBe(403);
    expect(blocked.body.error).toBe('MfaRequired');
    const principal = await a.service.context.introspection.resolve(memberActor.credential, slug, 't');
    expect(principal.principal.session.org).toBeNull();
    expect((await a.call(ownerActor, 'get', `/v2/orgs/${slug}`)).status).toBe(200);

    // the rule holds in the organization's workspaces, and for access tokens made without a second factor
    for (const [method, path] of [
      ['get', `/v2/workspaces/${workspace.body.id}`],
      ['get', '/v2/workspaces'],
      ['patch', `/v2/workspaces/${workspace.body.id}`],
    ] as const) {
      const answer = await a.call(memberActor, method, path, method === 'patch' ? { name: 'x' } : undefined);
      expect([path, answer.status, answer.body.error]).toEqual([path, 403, 'MfaRequired']);
    }
    const viaToken = await a.call(memberToken, 'get', `/v2/orgs/${slug}`);
    expect(viaToken.status).toBe(403);
    expect(viaToken.body.error).toBe('MfaRequired');
    expect((await a.call(ownerToken, 'get', `/v2/orgs/${slug}`)).status).toBe(200);
    expect((await a.call(ownerActor, 'get', `/v2/workspaces/${workspace.body.id}`)).status).toBe(200);
  });
});
