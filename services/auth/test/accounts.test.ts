import { Subjects } from '@platform/contracts';
import { ManualClock, sealPrincipal } from '@platform/kernel';
import { createEmbeddedStore, type Filter, type IndexSpec, type Store } from '@platform/store';
import { tempDir, waitFor } from '@platform/testkit';
import * as OTPAuth from 'otpauth';
import { passwordAccountOf } from '../src/accounts/accounts';
import { Mfa } from '../src/accounts/mfa';
import { hashPassword } from '../src/accounts/passwords';
import { openCollections } from '../src/data/collections';
import { deleteAccount } from '../src/domain/account-deletion';
import { sha256Hex } from '../src/domain/secrets';
import { openSsoCollections, SsoClients } from '../src/sso/providers';
import { userForIdentity } from '../src/sso/sign-in';
import { type AuthHarness, INTERNAL_SECRET, randomAddress, recordEvents, startAuth } from './helpers';
import { startMailCatcher } from './mail-catcher';
import { storeWithInsertGate } from './store-gate';

/** Password accounts at the service: signup, login, throttling, mail links, refresh. */

const FAST_HASH = { PASSWORD_SCRYPT_N: '1024', PASSWORD_SCRYPT_P: '1' };
const PASSWORD = 'correct horse battery';
let emailCounter = 0;
const newEmail = () => `person${++emailCounter}-${Date.now()}@example.com`;

function login(a: AuthHarness, email: string, password: string, address = randomAddress()) {
  return a.http.post('/v2/login').set('x-forwarded-for', address).send({ email, password });
}

function signup(a: AuthHarness, body: Record<string, unknown>) {
  return a.http.post('/v2/signup').set('x-forwarded-for', randomAddress()).send(body);
}

describe('password accounts', () => {
  let mail: Awaited<ReturnType<typeof startMailCatcher>>;
  let a: AuthHarness;
  beforeAll(async () => {
    mail = await startMailCatcher();
    a = await startAuth({ env: { ...FAST_HASH, SMTP_URL: mail.url } });
  });
  afterAll(async () => {
    await a.stop();
    await mail.close();
  });

  it('signup answers a session with a refresh token and sets the session and CSRF cookies', async () => {
    const email = newEmail();
    const res = await signup(a, { email: email.toUpperCase(), password: PASSWORD, firstName: 'Ada' });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({
      userId: expect.any(String),
      sessionId: expect.any(String),
      token: expect.any(String),
      refreshToken: expect.stringMatching(/^rt:/),
      user: { email, emailVerified: false, firstName: 'Ada', lastName: null },
    });
    const cookies = res.headers['set-cookie'] as unknown as string[];
    const session = cookies.find((c) => c.startsWith('access-token='))!;
    const csrf = cookies.find((c) => c.startsWith('csrf-token='))!;
    expect(session).toMatch(/HttpOnly/);
    expect(session).toMatch(/SameSite=Lax/);
    expect(session).not.toMatch(/Secure/); // loopback base URL
    expect(csrf).not.toMatch(/HttpOnly/);
    expect(csrf).toMatch(/SameSite=Lax/);
    expect(csrf).toMatch(/csrf-token=[A-Za-z0-9_-]{40,}/);
  });

  it('refuses a short password, a bad email and a second account on the same email (any case)', async () => {
    expect((await signup(a, { email: newEmail(), password: 'short' })).status).toBe(400);
    expect((await signup(a, { email: 'not-an-email', password: PASSWORD })).status).toBe(400);
    const email = newEmail();
    expect((await signup(a, { email, password: PASSWORD })).status).toBe(201);
    const again = await signup(a, { email: ` ${email.toUpperCase()} `, password: PASSWORD });
    expect(again.status).toBe(409);
    expect(again.body.error).toBe('SignupRefused');
  });

  it('the verification link in the mail confirms the email', async () => {
    const email = newEmail();
    await signup(a, { email, password: PASSWORD });
    const link = await mail.linkFor(email, '/account/verify-email');
    const page = await a.http.get(new URL(link).pathname + new URL(link).search);
    expect(page.status).toBe(200);
    expect(page.headers['content-security-policy']).toMatch(/default-src 'none'/);
    expect(page.text).toContain('Email confirmed');
    const res = await login(a, email, PASSWORD);
    expect(res.body.user.emailVerified).toBe(true);
    // single use; opened again (a mail scanner got there first, say), it says the confirmation is done
    const reused = await a.http.get(new URL(link).pathname + new URL(link).search);
    expect(reused.status).toBe(400);
    expect(reused.text).toContain('If it was used to confirm your email, that is done');
    expect(reused.text).not.toContain('expired');
  });

  it('a wrong password and an unknown email get the same answer', async () => {
    const email = newEmail();
    await signup(a, { email, password: PASSWORD });
    const wrong = await login(a, email, 'wrong password!');
    const unknown = await login(a, newEmail(), 'wrong password!');
    expect(wrong.status).toBe(401);
    expect(unknown.status).toBe(401);
    const strip = (b: Record<string, unknown>) => ({ ...b, requestId: undefined });
    expect(strip(wrong.body)).toEqual(strip(unknown.body));
    expect(wrong.body.error).toBe('InvalidCredentials');
  });

  it('an anonymous user who signs up keeps its user id and organizations', async () => {
    const anon = await a.newUser();
    const slug = `keepers-${Date.now()}`;
    const org = await a.call(anon, 'post', '/v2/orgs', { name: 'Keepers', slug });
    expect(org.status).toBe(201);
    const email = newEmail();
    const res = await a.call(anon, 'post', '/v2/signup', { email, password: PASSWORD });
    expect(res.status).toBe(201);
    expect(res.body.userId).toBe(anon.userId);
    // the anonymous session ended; the account's session sees the org
    expect((await a.call(anon, 'get', '/v2/me')).status).toBe(401);
    const signedIn = await login(a, email, PASSWORD);
    const me = await a.call(
      { credential: { kind: 'session', userId: signedIn.body.userId, sessionId: signedIn.body.sessionId } },
      'get',
      '/v2/me',
    );
    expect(me.body).toMatchObject({ id: anon.userId, anonymous: false, email });
    expect(me.body.memberships.map((m: { orgSlug: string }) => m.orgSlug)).toEqual([slug]);
  });

  it('password reset by mail: the same answer for unknown emails, old sessions end, the new password works', async () => {
    const email = newEmail();
    const first = await signup(a, { email, password: PASSWORD });
    const owner = {
      credential: { kind: 'session' as const, userId: first.body.userId, sessionId: first.body.sessionId },
    };
    const expiresAt = new Date(a.clock.now().getTime() + 86_400_000).toISOString();
    const minted = await a.call(owner, 'post', '/v2/user/accessTokens', { name: 'ci', expiresAt });
    expect(minted.status).toBe(201);
    const events = recordEvents(a.bus, [Subjects.credentialRevoked]);
    const unknown = await a.http.post('/v2/password/forgot').send({ email: newEmail() });
    const known = await a.http.post('/v2/password/forgot').send({ email });
    expect(unknown.status).toBe(202);
    expect(known.status).toBe(202);
    expect(known.body).toEqual(unknown.body);
    const link = new URL(await mail.linkFor(email, '/account/reset-password'));
    const form = await a.http.get(link.pathname + link.search);
    expect(form.text).toContain('name="token"');
    const token = link.searchParams.get('token')!;
    expect((await a.http.post('/v2/password/reset').send({ token, password: 'x' })).status).toBe(400);
    expect(
      (await a.http.post('/v2/password/reset').send({ token, password: 'a brand new secret' })).status,
    ).toBe(204);
    expect(
      (await a.http.post('/v2/password/reset').send({ token, password: 'another new secret' })).status,
    ).toBe(400);
    // whoever held the account may have minted access tokens: they end with the sessions
    expect(events.seen.map((e) => (e.payload as { id: string }).id)).toEqual(
      expect.arrayContaining([first.body.sessionId, minted.body._id]),
    );
    const mintedDoc = await a.service.context.collections.accessTokens.findOne({ _id: minted.body._id });
    expect(mintedDoc?.revokedAt).toBeInstanceOf(Date);
    events.stop();
    expect((await login(a, email, PASSWORD)).status).toBe(401);
    expect((await login(a, email, 'a brand new secret')).status).toBe(200);
  });

  it('a new password spends every reset link mailed before it, not only the one used', async () => {
    const email = newEmail();
    await signup(a, { email, password: PASSWORD });
    const tokenOf = (link: string) => new URL(link).searchParams.get('token')!;
    await a.http.post('/v2/password/forgot').send({ email });
    const older = tokenOf(await mail.linkFor(email, '/account/reset-password'));
    await a.http.post('/v2/password/forgot').send({ email });
    const newer = await waitFor(async () => {
      const token = tokenOf(await mail.linkFor(email, '/account/reset-password'));
      return token === older ? null : token;
    });
    expect(
      (await a.http.post('/v2/password/reset').send({ token: newer, password: 'a brand new secret' })).status,
    ).toBe(204);
    // before: 204, and whoever had the older mail set the password again after its owner chose a new one
    const again = await a.http
      .post('/v2/password/reset')
      .send({ token: older, password: 'someone elses secret' });
    expect(again.body).toMatchObject({ status: 400, error: 'InvalidToken' });
    expect((await login(a, email, 'a brand new secret')).status).toBe(200);
  });

  it('refresh rotates the refresh token; reusing a spent one revokes the session', async () => {
    const email = newEmail();
    const s = await signup(a, { email, password: PASSWORD });
    const r1 = await a.http.post('/v2/login/refresh').send({ refreshToken: s.body.refreshToken });
    expect(r1.status).toBe(200);
    expect(r1.body.sessionId).toBe(s.body.sessionId);
    expect(r1.body.refreshToken).not.toBe(s.body.refreshToken);
    const r2 = await a.http.post('/v2/login/refresh').send({ refreshToken: r1.body.refreshToken });
    expect(r2.status).toBe(200);
    const reuse = await a.http.post('/v2/login/refresh').send({ refreshToken: s.body.refreshToken });
    expect(reuse.status).toBe(401);
    expect(reuse.body.error).toBe('InvalidRefreshToken');
    // the family is revoked: the newest refresh token and the session are dead
    expect((await a.http.post('/v2/login/refresh').send({ refreshToken: r2.body.refreshToken })).status).toBe(
      401,
    );
    const me = await a.call(
      { credential: { kind: 'session', userId: s.body.userId, sessionId: s.body.sessionId } },
      'get',
      '/v2/me',
    );
    expect(me.status).toBe(401);
  });

  it('cookies are Secure when the public base URL is not loopback', async () => {
    const b = await startAuth({ env: { ...FAST_HASH, PUBLIC_BASE_URL: 'https://api.example.com' } });
    try {
      const res = await signup(b, { email: newEmail(), password: PASSWORD });
      const cookies = res.headers['set-cookie'] as unknown as string[];
      for (const c of cookies) expect(c).toMatch(/; Secure/);
    } finally {
      await b.stop();
    }
  });
});

describe('one account per email, whether it signs in with a password or an identity provider', () => {
  const folder = tempDir('auth-one-account-per-email-');
  const gated = storeWithInsertGate(createEmbeddedStore({ dataDir: folder.dir, compactionIntervalMs: 0 }));
  let a: AuthHarness;
  let sso: SsoClients;
  beforeAll(async () => {
    a = await startAuth({ store: gated.store, env: FAST_HASH });
    sso = new SsoClients(
      openSsoCollections(a.service.context.store),
      'unused: this provider is never discovered',
    );
  });
  afterAll(async () => {
    await a.stop();
    await gated.store.close();
    folder.remove();
  });

  let subs = 0;
  /** the first sign-in of a new person at the platform's own provider, which confirms `email` */
  const ssoSignIn = (email: string) => {
    const now = a.clock.now();
    const provider = {
      _id: `idp-${++subs}`,
      name: 'Acme SSO',
      issuer: 'https://sso.example.com',
      clientId: 'platform',
      clientSecret: null,
      orgSlug: null,
      createdAt: now,
      updatedAt: now,
    };
    return userForIdentity(a.service.context, sso, provider, {
      sub: `sub-${subs}`,
      email,
      email_verified: true,
    }).then(
      (user) => user._id,
      (err) => err.error as string,
    );
  };
  const usersWith = (email: string) => a.service.context.collections.users.find({ email });

  it('a password sign-up with the address of a user an SSO sign-in made is 409 SignupRefused (any case)', async () => {
    const email = newEmail();
    const ssoUser = await ssoSignIn(email);
    expect(await usersWith(email)).toEqual([expect.objectContaining({ _id: ssoUser })]);

    const again = await signup(a, { email: ` ${email.toUpperCase()} `, password: PASSWORD });
    expect(again.status).toBe(409);
    expect(again.body).toMatchObject({ error: 'SignupRefused', status: 409 });
    // an anonymous user signing up with it stays the anonymous user it was
    const anon = await a.newUser();
    expect((await a.call(anon, 'post', '/v2/signup', { email, password: PASSWORD })).body.error).toBe(
      'SignupRefused',
    );
    expect((await a.call(anon, 'get', '/v2/me')).body).toMatchObject({ anonymous: true, email: null });
    expect(await usersWith(email)).toHaveLength(1);
    expect(await a.service.context.collections.accounts.findOne({ _id: email })).toBeNull();
  });

  it('an SSO sign-in racing a password sign-up for one address: one account, never two', async () => {
    // the sign-up stored its password and is about to write its user when the SSO sign-in comes
    const first = newEmail();
    const held = gated.gate('users', (doc) => (doc as { email?: string }).email === first);
    // supertest sends when awaited: `then` starts it
    const signingUp = signup(a, { email: first, password: PASSWORD }).then((res) => res);
    await held.arrived;
    expect(await ssoSignIn(first)).toBe('SignupRefused');
    held.release();
    expect((await signingUp).status).toBe(201);
    expect(await usersWith(first)).toHaveLength(1);

    // the SSO sign-in is about to write its user when the sign-up comes: the sign-up wins, the sign-in takes it back
    const second = newEmail();
    const ssoHeld = gated.gate('users', (doc) => (doc as { email?: string }).email === second);
    const signingIn = ssoSignIn(second);
    await ssoHeld.arrived;
    const signedUp = await signup(a, { email: second, password: PASSWORD });
    expect(signedUp.status).toBe(201);
    ssoHeld.release();
    expect(await signingIn).toBe('SignupRefused');
    expect(await usersWith(second)).toEqual([expect.objectContaining({ _id: signedUp.body.userId })]);
  });

  it("the address look-up of every sign-up is served by a sparse index on users' email", () => {
    const declared: Record<string, IndexSpec[]> = {};
    const recording = { collection: (name: string, indexes: IndexSpec[] = []) => (declared[name] = indexes) };
    openCollections(recording as unknown as Store);
    // sparse: anonymous users, who store no address, stay out of it
    expect(declared.users).toContainEqual({ fields: { email: 1 }, sparse: true });
  });

  it('a password record a sign-up cut short left locks nobody out once its grace is over', async () => {
    const { collections } = a.service.context;
    /** the record a sign-up stored before dying, its user never written (or never claimed) */
    const strayRecord = (email: string, userId: string, minutesAgo: number) => {
      const at = new Date(a.clock.now().getTime() - minutesAgo * 60_000);
      return collections.accounts.insertOne({
        _id: email,
        userId,
        passwordHash: 'scrypt$1024$8$1$c2FsdA$aGFzaA',
        createdAt: at,
        passwordChangedAt: at,
      });
    };
    // a sign-up may still be writing its user: the address stays held
    const fresh = newEmail();
    await strayRecord(fresh, 'not-written-yet', 1);
    expect((await signup(a, { email: fresh, password: PASSWORD })).body.error).toBe('SignupRefused');
    expect(await ssoSignIn(fresh)).toBe('SignupRefused');

    // past the grace: the next sign-up replaces it, and signs in with its own password
    const viaSignup = newEmail();
    await strayRecord(viaSignup, 'never-written', 20);
    const signedUp = await signup(a, { email: viaSignup, password: PASSWORD });
    expect(signedUp.status).toBe(201);
    expect(await collections.accounts.findOne({ _id: viaSignup })).toMatchObject({
      userId: signedUp.body.userId,
    });
    expect((await login(a, viaSignup, PASSWORD)).status).toBe(200);

    // an SSO sign-in takes the address too, and a record whose anonymous user was never claimed is as harmless
    const viaSso = newEmail();
    await strayRecord(viaSso, 'never-written', 20);
    expect(await usersWith(viaSso)).toEqual([]);
    const ssoUser = await ssoSignIn(viaSso);
    expect(await usersWith(viaSso)).toEqual([expect.objectContaining({ _id: ssoUser })]);
    expect(await collections.accounts.findOne({ _id: viaSso })).toBeNull();
    const anon = await a.newUser();
    const unclaimed = newEmail();
    await strayRecord(unclaimed, anon.userId, 20);
    expect((await signup(a, { email: unclaimed, password: PASSWORD })).status).toBe(201);
    // nor is a reset link mailed for it: it is removed as an unknown address
    const forgotten = newEmail();
    await strayRecord(forgotten, 'never-written', 20);
    expect((await a.http.post('/v2/password/forgot').send({ email: forgotten })).status).toBe(202);
    expect(await collections.accounts.findOne({ _id: forgotten })).toBeNull();
  });

  it('a stray password record is removed only as it was read: one the same person stored meanwhile stays', async () => {
    const { collections } = a.service.context;
    const anon = await a.newUser();
    const email = newEmail();
    const record = (minutesAgo: number) => {
      const at = new Date(a.clock.now().getTime() - minutesAgo * 60_000);
      return {
        _id: email,
        userId: anon.userId,
        passwordHash: 'scrypt$1024$8$1$c2FsdA$aGFzaA',
        createdAt: at,
        passwordChangedAt: at,
      };
    };
    // a sign-up of this anonymous user cut short, 20 minutes ago
    await collections.accounts.insertOne(record(20));
    // while a look-up reads the stray record's user, the person's sign-up (a second tab) removes the stray record
    // and stores its own
    const stored = record(0);
    const users = new Proxy(collections.users, {
      get(target, prop) {
        if (prop === 'findOne')
          return async (filter: Filter) => {
            await collections.accounts.deleteOne({ _id: email });
            await collections.accounts.insertOne(stored);
            return target.findOne(filter);
          };
        const value = Reflect.get(target, prop, target);
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
    const racing = { ...a.service.context, collections: { ...collections, users } };
    expect(await passwordAccountOf(racing, email)).toEqual(stored);
    expect(await collections.accounts.findOne({ _id: email })).toEqual(stored);
  });

  it("a password record whose user never took its address signs nobody in (401, not the anonymous user's session)", async () => {
    const { collections } = a.service.context;
    const anon = await a.newUser();
    const email = newEmail();
    // the sign-up of this anonymous user stored its password, then stopped before claiming the user
    const at = a.clock.now();
    const passwordHash = await hashPassword(PASSWORD, { N: 1024, r: 8, p: 1 });
    await collections.accounts.insertOne({
      _id: email,
      userId: anon.userId,
      passwordHash,
      createdAt: at,
      passwordChangedAt: at,
    });
    const refused = await login(a, email, PASSWORD);
    expect(refused.body).toMatchObject({ status: 401, error: 'InvalidCredentials' });
    expect((await a.call(anon, 'get', '/v2/me')).body).toMatchObject({ anonymous: true, email: null });
  });

  it('an account being deleted keeps its address until it is gone: a deletion put back leaves one account', async () => {
    const { collections } = a.service.context;
    const email = newEmail();
    const ssoUser = await ssoSignIn(email);
    // the last owner of an organization another person belongs to: its deletion is put back (409 LastOwner)
    const now = a.clock.now();
    const orgId = `org-${ssoUser}`;
    const orgSlug = `kept-${emailCounter}`;
    const org = { _id: orgId, slug: orgSlug, name: 'Kept', createdAt: now, createdBy: ssoUser };
    await collections.orgs.insertOne({ ...org, settings: {}, subscription: null });
    for (const [userId, role] of [
      [ssoUser, 'owner'],
      ['someone-else', 'member'],
    ])
      await collections.memberships.insertOne({
        _id: `${orgId}-${userId}`,
        orgId,
        orgSlug,
        userId,
        role,
        createdAt: now,
      });

    // held as it puts the membership back, its mark still on the user
    const puttingBack = gated.gate('memberships', (doc) => (doc as { userId?: string }).userId === ssoUser);
    const deleting = deleteAccount(a.service.context, ssoUser).catch((err) => err.error as string);
    await puttingBack.arrived;
    try {
      const signedUp = await signup(a, { email, password: PASSWORD });
      expect(signedUp.body).toMatchObject({ error: 'SignupRefused', status: 409 });
      expect(await ssoSignIn(email)).toBe('SignupRefused'); // through another provider
    } finally {
      puttingBack.release();
    }
    expect(await deleting).toBe('LastOwner');
    expect(await usersWith(email)).toEqual([expect.objectContaining({ _id: ssoUser })]);
  });
});

describe('a new password and a credential being made at that moment', () => {
  const folder = tempDir('auth-reset-race-');
  const gated = storeWithInsertGate(createEmbeddedStore({ dataDir: folder.dir, compactionIntervalMs: 0 }));
  let mail: Awaited<ReturnType<typeof startMailCatcher>>;
  let a: AuthHarness;
  beforeAll(async () => {
    mail = await startMailCatcher();
    a = await startAuth({ store: gated.store, env: { ...FAST_HASH, SMTP_URL: mail.url } });
  });
  afterAll(async () => {
    await a.stop();
    await mail.close();
    await gated.store.close();
    folder.remove();
  });

  it('a token minted by a session the reset signs out does not outlive the reset', async () => {
    const email = newEmail();
    const first = await signup(a, { email, password: PASSWORD });
    const stolen = {
      credential: { kind: 'session' as const, userId: first.body.userId, sessionId: first.body.sessionId },
    };
    await a.http.post('/v2/password/forgot').send({ email });
    const token = new URL(await mail.linkFor(email, '/account/reset-password')).searchParams.get('token')!;
    // whoever holds the session has been let in and is about to write the token when its owner sets a new password
    const held = gated.gate(
      'access_tokens',
      (doc) => (doc as { userId?: string }).userId === first.body.userId,
    );
    const expiresAt = new Date(a.clock.now().getTime() + 86_400_000).toISOString();
    const minting = a.call(stolen, 'post', '/v2/user/accessTokens', { name: 'kept', expiresAt });
    await held.arrived;
    expect(
      (await a.http.post('/v2/password/reset').send({ token, password: 'a brand new secret' })).status,
    ).toBe(204);
    held.release();
    // before: 201, and that token went on working after "a new password revokes your access tokens"
    expect((await minting).status).toBe(401);
    const col = a.service.context.collections;
    expect(await col.accessTokens.find({ userId: first.body.userId, revokedAt: null })).toEqual([]);
  });

  it('a sign-in with the old password, checked before the reset and finished after it, opens no session', async () => {
    const email = newEmail();
    const first = await signup(a, { email, password: PASSWORD });
    await a.http.post('/v2/password/forgot').send({ email });
    const token = new URL(await mail.linkFor(email, '/account/reset-password')).searchParams.get('token')!;
    // whoever knows the old password is let in and about to store the session when its owner sets a new one
    const held = gated.gate('sessions', (doc) => (doc as { userId?: string }).userId === first.body.userId);
    const signingIn = login(a, email, PASSWORD).then((res) => res);
    await held.arrived;
    expect(
      (await a.http.post('/v2/password/reset').send({ token, password: 'a brand new secret' })).status,
    ).toBe(204);
    held.release();
    // before: 200, and a session (and its refresh token) that outlived "a new password signs you out everywhere"
    expect((await signingIn).body).toMatchObject({ status: 401, error: 'InvalidCredentials' });
    const col = a.service.context.collections;
    expect(await col.sessions.find({ userId: first.body.userId, revokedAt: null })).toEqual([]);
    expect(await col.refreshTokens.find({ userId: first.body.userId })).toEqual([]);
    // the new password signs in
    expect((await login(a, email, 'a brand new secret')).status).toBe(200);
  });

  it('two reset links used at once: the first new password holds, the other link is refused', async () => {
    const email = newEmail();
    await signup(a, { email, password: PASSWORD });
    const tokenOf = (link: string) => new URL(link).searchParams.get('token')!;
    await a.http.post('/v2/password/forgot').send({ email });
    const older = tokenOf(await mail.linkFor(email, '/account/reset-password'));
    await a.http.post('/v2/password/forgot').send({ email });
    const newer = await waitFor(async () => {
      const token = tokenOf(await mail.linkFor(email, '/account/reset-password'));
      return token === older ? null : token;
    });
    a.clock.advance(1000);
    // the owner's reset has spent its link and hashed the new password; the older mail is opened at that moment
    const held = gated.gate('accounts', (filter) => filter._id === email, ['updateOne']);
    const owner = a.http
      .post('/v2/password/reset')
      .send({ token: newer, password: 'the owners secret' })
      .then((res) => res);
    await held.arrived;
    expect(
      (await a.http.post('/v2/password/reset').send({ token: older, password: 'someone elses secret' }))
        .status,
    ).toBe(204);
    held.release();
    // before: 204 too, and the owner, told the new password is set, could not sign in with it
    expect((await owner).body).toMatchObject({ status: 400, error: 'InvalidToken' });
    expect((await login(a, email, 'someone elses secret')).status).toBe(200);
  });

  it('a right password asking for its code gives back only its own point: a sign-in ending meanwhile leaves no credit', async () => {
    const email = newEmail();
    const first = await signup(a, { email, password: PASSWORD });
    const { principal } = await a.service.context.introspection.resolve(
      { kind: 'session', userId: first.body.userId, sessionId: first.body.sessionId },
      null,
      't',
    );
    const asOwner = {
      'x-platform-principal': sealPrincipal(principal, INTERNAL_SECRET, a.clock),
      'x-platform-user-id': first.body.userId,
    };
    const setup = await a.http.get('/account/mfa').set(asOwner);
    const secret = /id="totp-secret">([A-Z2-7]+)</.exec(setup.text)![1]!;
    const totp = new OTPAuth.TOTP({ secret: OTPAuth.Secret.fromBase32(secret) });
    const code = () => totp.generate({ timestamp: a.clock.now().getTime() });
    const csrf = /action="\/account\/mfa"[\s\S]*?name="csrf" value="([^"]+)"/.exec(setup.text)![1]!;
    await a.http.post('/account/mfa').set(asOwner).type('form').send({ code: code(), csrf });
    // the password alone is right (401 MfaRequired); its point is about to be given back when the owner signs in
    const key = `login-account:${sha256Hex(email)}`;
    let writes = 0;
    const held = gated.gate('rate_counters', (filter) => filter._id === key && ++writes === 2, [
      'findOneAndUpdate',
      'updateOne',
    ]);
    const asking = login(a, email, PASSWORD).then((res) => res);
    await held.arrived;
    a.clock.advance(30_000);
    const signedIn = await a.http
      .post('/v2/login')
      .set('x-forwarded-for', randomAddress())
      .send({ email, password: PASSWORD, mfaCode: code() });
    expect(signedIn.status).toBe(200);
    held.release();
    expect((await asking).body).toMatchObject({ error: 'MfaRequired' });
    const max = a.service.context.config.LOGIN_ACCOUNT_MAX_FAILURES;
    for (let i = 0; i < max; i++) expect((await login(a, email, `guess ${i}`)).status).toBe(401);
    // before: 401, the point given back after the sign-in had forgotten the failures was one guess more
    expect((await login(a, email, 'one guess too many')).status).toBe(429);
  });

  it("a sign-in the reset refuses leaves the account's failed attempts counted: it does not reset the login throttle", async () => {
    const email = newEmail();
    const first = await signup(a, { email, password: PASSWORD });
    const { principal } = await a.service.context.introspection.resolve(
      { kind: 'session', userId: first.body.userId, sessionId: first.body.sessionId },
      null,
      't',
    );
    const asOwner = {
      'x-platform-principal': sealPrincipal(principal, INTERNAL_SECRET, a.clock),
      'x-platform-user-id': first.body.userId,
    };
    const csrfOf = (html: string) =>
      /action="\/account\/mfa"[\s\S]*?name="csrf" value="([^"]+)"/.exec(html)![1]!;
    const setup = await a.http.get('/account/mfa').set(asOwner);
    const secret = /id="totp-secret">([A-Z2-7]+)</.exec(setup.text)![1]!;
    const totp = new OTPAuth.TOTP({ secret: OTPAuth.Secret.fromBase32(secret) });
    const on = await a.http
      .post('/account/mfa')
      .set(asOwner)
      .type('form')
      .send({ code: totp.generate({ timestamp: a.clock.now().getTime() }), csrf: csrfOf(setup.text) });
    const recovery = /<li><code>([0-9a-f]{5}-[0-9a-f]{5})<\/code><\/li>/.exec(on.text)![1]!;
    await a.http.post('/v2/password/forgot').send({ email });
    const token = new URL(await mail.linkFor(email, '/account/reset-password')).searchParams.get('token')!;
    // the old password is checked, and the sign-in is held at its second factor while its owner sets a new password
    const held = gated.gate('mfa', (filter) => filter._id === first.body.userId, ['updateOne']);
    const signingIn = a.http
      .post('/v2/login')
      .set('x-forwarded-for', randomAddress())
      .send({ email, password: PASSWORD, mfaCode: recovery })
      .then((res) => res);
    await held.arrived;
    expect(
      (await a.http.post('/v2/password/reset').send({ token, password: 'a brand new secret' })).status,
    ).toBe(204);
    // someone guesses at the new password: all but one of the account's failures are spent
    const max = a.service.context.config.LOGIN_ACCOUNT_MAX_FAILURES;
    for (let i = 1; i < max; i++) expect((await login(a, email, `guess ${i}`)).status).toBe(401);
    held.release();
    expect((await signingIn).body).toMatchObject({ status: 401, error: 'InvalidCredentials' });
    expect((await login(a, email, 'last guess')).status).toBe(401);
    // before: 401, the refused sign-in had forgotten those failures and given the guesser a fresh budget
    expect((await login(a, email, 'one guess too many')).status).toBe(429);
  });

  it('so does the sign-in page: no session cookie outlives the reset', async () => {
    const email = newEmail();
    const first = await signup(a, { email, password: PASSWORD });
    await a.http.post('/v2/password/forgot').send({ email });
    const token = new URL(await mail.linkFor(email, '/account/reset-password')).searchParams.get('token')!;
    const page = await a.http.get('/account/login');
    const cookie = (page.headers['set-cookie'] as unknown as string[]).map((c) => c.split(';')[0]).join('; ');
    const csrf = /action="\/account\/login"[\s\S]*?name="csrf" value="([^"]+)"/.exec(page.text)![1]!;
    const held = gated.gate('sessions', (doc) => (doc as { userId?: string }).userId === first.body.userId);
    const signingIn = a.http
      .post('/account/login')
      .set('cookie', cookie)
      .type('form')
      .send({ email, password: PASSWORD, csrf })
      .then((res) => res);
    await held.arrived;
    expect(
      (await a.http.post('/v2/password/reset').send({ token, password: 'a brand new secret' })).status,
    ).toBe(204);
    held.release();
    // before: 303 with the session's cookies
    const answered = await signingIn;
    expect(answered.status).toBe(401);
    expect(answered.headers['set-cookie']).toBeUndefined();
    // the sign-in page again, as after a wrong password (before: the API's JSON error in the browser)
    expect(answered.headers['content-type']).toMatch(/^text\/html/);
    expect(answered.text).toContain('Email or password is incorrect');
    expect(answered.text).toMatch(/action="\/account\/login"[\s\S]*?name="csrf" value="[^"]+"/);
    const col = a.service.context.collections;
    expect(await col.sessions.find({ userId: first.body.userId, revokedAt: null })).toEqual([]);
  });

  const csrfOf = (html: string, action: string) =>
    new RegExp(`action="${action}"[\\s\\S]*?name="csrf" value="([^"]+)"`).exec(html)![1]!;

  /**
   * An account with an authenticator signs in on the page with its password, reaching the code step, and its owner
   * sets a new password meanwhile: the cookies of that code step, the authenticator and the recovery codes.
   */
  async function codeStepOvertakenByReset() {
    const email = newEmail();
    const first = await signup(a, { email, password: PASSWORD });
    const { principal } = await a.service.context.introspection.resolve(
      { kind: 'session', userId: first.body.userId, sessionId: first.body.sessionId },
      null,
      't',
    );
    const asOwner = {
      'x-platform-principal': sealPrincipal(principal, INTERNAL_SECRET, a.clock),
      'x-platform-user-id': first.body.userId,
    };
    const setup = await a.http.get('/account/mfa').set(asOwner);
    const secret = /id="totp-secret">([A-Z2-7]+)</.exec(setup.text)![1]!;
    const totp = new OTPAuth.TOTP({ secret: OTPAuth.Secret.fromBase32(secret) });
    const code = () => totp.generate({ timestamp: a.clock.now().getTime() });
    const on = await a.http
      .post('/account/mfa')
      .set(asOwner)
      .type('form')
      .send({ code: code(), csrf: csrfOf(setup.text, '/account/mfa') });
    expect(on.status).toBe(200);
    const recovery = [...on.text.matchAll(/<li><code>([0-9a-f]{5}-[0-9a-f]{5})<\/code><\/li>/g)].map(
      (m) => m[1]!,
    );
    expect(recovery).toHaveLength(10);
    a.clock.advance(30_000); // the enrolment's code is spent
    // the old password, right: the page asks for the code
    const page = await a.http.get('/account/login');
    let cookie = (page.headers['set-cookie'] as unknown as string[]).map((c) => c.split(';')[0]).join('; ');
    const password = await a.http
      .post('/account/login')
      .set('cookie', cookie)
      .type('form')
      .send({ email, password: PASSWORD, csrf: csrfOf(page.text, '/account/login') });
    expect(password.headers.location).toMatch(/^\/account\/login\/mfa/);
    cookie = [
      cookie,
      ...(password.headers['set-cookie'] as unknown as string[]).map((c) => c.split(';')[0]),
    ].join('; ');
    // its owner sets a new password meanwhile
    await a.http.post('/v2/password/forgot').send({ email });
    const token = new URL(await mail.linkFor(email, '/account/reset-password')).searchParams.get('token')!;
    expect(
      (await a.http.post('/v2/password/reset').send({ token, password: 'a brand new secret' })).status,
    ).toBe(204);
    return { email, userId: first.body.userId as string, cookie, code, recovery };
  }

  /** the code step's form sent with `code` */
  async function sendCode(cookie: string, code: string) {
    const step = await a.http.get('/account/login/mfa').set('cookie', cookie);
    return a.http
      .post('/account/login/mfa')
      .set('cookie', cookie)
      .type('form')
      .send({ code, csrf: csrfOf(step.text, '/account/login/mfa') });
  }

  it("and the sign-in page's code step: a password checked before the reset opens no session after it", async () => {
    const { userId, cookie, code } = await codeStepOvertakenByReset();
    const sent = await sendCode(cookie, code());
    // before: 303 with the session's cookies, up to five minutes after "a new password signs you out everywhere"
    expect(sent.status).toBe(401);
    // the sign-in page, to sign in with the new password (before: the API's JSON error in the browser)
    expect(sent.headers['content-type']).toMatch(/^text\/html/);
    expect(sent.text).toContain('Email or password is incorrect');
    expect(sent.text).toMatch(/action="\/account\/login"[\s\S]*?name="csrf" value="[^"]+"/);
    const col = a.service.context.collections;
    expect(await col.sessions.find({ userId, revokedAt: null })).toEqual([]);
  });

  it('the code step after a reset spends no recovery code and no sign-in attempt: it asks for the password again', async () => {
    const { email, userId, cookie, recovery } = await codeStepOvertakenByReset();
    const sent = await sendCode(cookie, recovery[0]!);
    expect(sent.status).toBe(401);
    expect(sent.text).toContain('Email or password is incorrect');
    // before: the recovery code was spent on a sign-in refused anyway
    expect(await new Mfa(a.service.context).remainingRecoveryCodes(userId)).toBe(10);
    // and the pending step is over: no more codes to try on it (each would take a point of the owner's sign-in budget)
    expect(
      (sent.headers['set-cookie'] as unknown as string[]).some((c) => c.startsWith('mfa-pending=;')),
    ).toBe(true);
    const again = { email, password: 'a brand new secret', mfaCode: recovery[0] };
    expect((await a.http.post('/v2/login').set('x-forwarded-for', randomAddress()).send(again)).status).toBe(
      200,
    );
  });
});

describe('login throttling shared by every auth instance', () => {
  it('1,000 wrong passwords from 20 addresses across two instances: only the configured failures are checked, then the lock ends', async () => {
    const dir = tempDir('auth-throttle-');
    const store = createEmbeddedStore({ dataDir: dir.dir, compactionIntervalMs: 0 });
    const clock = new ManualClock('2025-03-01T00:00:00Z');
    const env = {
      ...FAST_HASH,
      LOGIN_ACCOUNT_MAX_FAILURES: '10',
      LOGIN_ADDRESS_MAX_FAILURES: '500',
      LOGIN_FAILURE_WINDOW_SECONDS: '900',
      LOGIN_LOCK_SECONDS: '600',
    };
    const one = await startAuth({ env, store, clock });
    const two = await startAuth({ env, store, clock });
    try {
      const email = newEmail();
      expect((await signup(one, { email, password: PASSWORD })).status).toBe(201);
      const addresses = Array.from({ length: 20 }, (_, i) => `198.51.100.${i + 1}`);
      const statuses: number[] = [];
      for (let batch = 0; batch < 20; batch++) {
        const replies = await Promise.all(
          Array.from({ length: 50 }, (_, i) => {
            const n = batch * 50 + i;
            return login(n % 2 ? one : two, email, `guess-${n}`, addresses[n % 20]);
          }),
        );
        statuses.push(...replies.map((r) => r.status));
        for (const r of replies)
          if (r.status === 429) expect(Number(r.headers['retry-after'])).toBeGreaterThan(0);
      }
      const count = (s: number) => statuses.filter((x) => x === s).length;
      expect(statuses).toHaveLength(1000);
      expect(count(401)).toBe(10);
      expect(count(429)).toBe(990);

      // Locked: the right password too, on either instance.
      const locked = await login(two, email, PASSWORD, addresses[3]);
      expect(locked.status).toBe(429);
      expect(locked.body.retryAfter).toBeGreaterThan(0);
      expect(locked.body.retryAfter).toBeLessThanOrEqual(600);

      clock.advance(601_000);
      expect((await login(one, email, PASSWORD, addresses[3])).status).toBe(200);
    } finally {
      await one.stop();
      await two.stop();
      await store.close();
      dir.remove();
    }
  });

  it('one address that guesses at many accounts is locked for all of them', async () => {
    const a = await startAuth({
      env: { ...FAST_HASH, LOGIN_ADDRESS_MAX_FAILURES: '5', LOGIN_ACCOUNT_MAX_FAILURES: '100' },
    });
    try {
      const victims = [newEmail(), newEmail()];
      for (const email of victims) await signup(a, { email, password: PASSWORD });
      const address = '192.0.2.77';
      const statuses: number[] = [];
      for (let i = 0; i < 8; i++)
        statuses.push((await login(a, victims[i % 2]!, 'nope nope nope', address)).status);
      expect(statuses).toEqual([401, 401, 401, 401, 401, 429, 429, 429]);
      expect((await login(a, victims[0]!, PASSWORD, address)).status).toBe(429);
      expect((await login(a, victims[0]!, PASSWORD, '192.0.2.78')).status).toBe(200);
    } finally {
      await a.stop();
    }
  });
});
