import { ManualClock } from '@platform/kernel';
import { waitFor } from '@platform/testkit';
import { signup, uniqueName } from './support/fixtures';
import { type LegacyTestApp, startLegacyApp } from './support/legacy-app';

describe('legacy accounts and access tokens', () => {
  let app: LegacyTestApp;
  let clock: ManualClock;

  beforeAll(async () => {
    clock = new ManualClock('2026-11-23T10:00:00Z');
    app = await startLegacyApp({
      clock,
      env: { LEGACY_LOGIN_MAX_FAILURES: '3', LEGACY_LOGIN_FAILURE_WINDOW_SECONDS: '60' },
    });
  });
  afterAll(() => app.close());

  const expiresIn = (days: number) => new Date(clock.now().getTime() + days * 86_400_000).toISOString();

  describe('signup and login', () => {
    it('signs up and logs in with the same password, each time answering a user id and a session token', async () => {
      const account = await signup(app.http);
      expect(account.userId).toEqual(expect.any(String));
      expect(account.sessionToken).toMatch(/^lst_[A-Za-z0-9_-]{43}$/);
      const login = await app.http
        .post('/v2/auth/login')
        .send({ username: account.username.toUpperCase(), password: account.password })
        .expect(200);
      expect(login.body).toEqual({ userId: account.userId, sessionToken: expect.stringMatching(/^lst_/) });
      expect(login.body.sessionToken).not.toBe(account.sessionToken);
    });

    it('refuses a taken username with 409, whatever its letter case', async () => {
      const account = await signup(app.http);
      const res = await app.http
        .post('/v2/auth/signup')
        .send({ username: account.username.toUpperCase(), password: 'another password' })
        .expect(409);
      expect(res.body).toMatchObject({ error: 'UsernameTaken', status: 409 });
    });

    it('refuses wrong credentials with 401, the same for an unknown username', async () => {
      const account = await signup(app.http);
      const wrong = await app.http
        .post('/v2/auth/login')
        .send({ username: account.username, password: 'nope nope' });
      const unknown = await app.http
        .post('/v2/auth/login')
        .send({ username: uniqueName(), password: 'nope nope' });
      expect(wrong.status).toBe(401);
      expect(unknown.status).toBe(401);
      expect(wrong.body.message).toBe(unknown.body.message);
    });

    it('answers 400 naming the offending fields', async () => {
      const res = await app.http
        .post('/v2/auth/signup')
        .send({ username: 'a', password: 'short' })
        .expect(400);
      const fields = res.body.details.issues.map((i: { field: string }) => i.field);
      expect(fields).toEqual(expect.arrayContaining(['username', 'password']));
    });

    it('stores passwords as salted scrypt hashes and session tokens as hashes', async () => {
      const account = await signup(app.http);
      const stored = await app.store
        .collection<{ _id: string; password: Record<string, unknown> }>('legacy_accounts')
        .findOne({ _id: account.userId });
      expect(JSON.stringify(stored)).not.toContain(account.password);
      expect(stored?.password).toMatchObject({
        algorithm: 'scrypt',
        N: 1024,
        r: 8,
        p: 1,
        salt: expect.any(String),
      });
      const sessions = await app.store.collection('legacy_sessions').find({ userId: account.userId });
      expect(sessions).toHaveLength(1);
      expect(JSON.stringify(sessions)).not.toContain(account.sessionToken);
    });

    it('throttles a username after repeated failed logins, until the window passes', async () => {
      const account = await signup(app.http);
      for (let i = 0; i < 3; i++)
        await app.http
          .post('/v2/auth/login')
          .send({ username: account.username, password: 'wrong guess' })
          .expect(401);
      const throttled = await app.http
        .post('/v2/auth/login')
        .send({ username: account.username, password: account.password })
        .expect(429);
      expect(Number(throttled.headers['retry-after'])).toBeGreaterThan(0);
      clock.advance(61_000);
      await app.http
        .post('/v2/auth/login')
        .send({ username: account.username, password: account.password })
        .expect(200);
    });

    it('counts concurrent attempts before their passwords are checked: a burst gets no more guesses', async () => {
      const account = await signup(app.http);
      const statuses = await Promise.all(
        Array.from({ length: 20 }, (_, i) =>
          app.http
            .post('/v2/auth/login')
            .send({ username: account.username, password: i === 19 ? account.password : `guess ${i}` })
            .then((res) => res.status),
        ),
      );
      // 3 checked (LEGACY_LOGIN_MAX_FAILURES), the rest refused unchecked, the right password among them
      expect(statuses.filter((s) => s === 429)).toHaveLength(17);
      expect(statuses.filter((s) => s === 401 || s === 200)).toHaveLength(3);
      clock.advance(61_000);
    });

    it('forgets the failed logins of a username once their window has passed', async () => {
      const username = uniqueName('nobody');
      await app.http.post('/v2/auth/login').send({ username, password: 'wrong guess' }).expect(401);
      const failures = app.store.collection('legacy_login_failures');
      expect(await failures.count({})).toBeGreaterThan(0);
      clock.advance(61_000);
      await waitFor(async () => (await failures.count({})) === 0, { what: 'the failed logins removed' });
    });

    it('logs out: the session token stops working', async () => {
      const account = await signup(app.http);
      await app.http.post('/v2/auth/logout').set('X-Legacy-Session-Token', account.sessionToken).expect(200);
      await app.http
        .get('/v2/auth/accessToken')
        .set('X-Legacy-Session-Token', account.sessionToken)
        .expect(401);
    });
  });

  describe('access tokens (spec 4.5, 2.8)', () => {
    it('creates a record of spec 2.8 whose token authenticates like the account', async () => {
      const account = await signup(app.http);
      const expiresAt = expiresIn(30);
      const res = await app.http
        .post('/v2/auth/accessToken')
        .set('X-Legacy-Session-Token', account.sessionToken)
        .send({ expiresAt })
        .expect(200);
      expect(res.body).toEqual({
        _id: expect.any(String),
        _session_token: expect.stringMatching(/^lat_[A-Za-z0-9_-]{43}$/),
        _p_user: account.userId,
        createdWith: { action: 'create', authProvider: 'session' },
        restricted: false,
        expiresAt: new Date(expiresAt).toISOString(),
        _created_at: clock.now().toISOString(),
        _updated_at: clock.now().toISOString(),
      });
      // Another access token, made with this one, through either header.
      const token = res.body._session_token;
      const second = await app.http
        .post('/v2/auth/accessToken')
        .set('X-Legacy-Session-Token', token)
        .send({ expiresAt })
        .expect(200);
      expect(second.body.createdWith).toEqual({ action: 'create', authProvider: 'access_token' });
      // ...never one that outlives it
      const longer = await app.http
        .post('/v2/auth/accessToken')
        .set('X-Legacy-Session-Token', token)
        .send({ expiresAt: expiresIn(31) })
        .expect(400);
      expect(longer.body.details.issues[0].field).toBe('expiresAt');
      await app.http.get('/v2/auth/accessToken').set('Authorization', `Bearer ${token}`).expect(200);
      // ...and it creates assistants, like the account.
      await app.http
        .post('/v2/bots')
        .set('Authorization', `Bearer ${token}`)
        .send({ name: 'By token', lang: 'en' })
        .expect(200);
    });

    it('lists the account’s tokens without their values, and stores only hashes', async () => {
      const account = await signup(app.http);
      const created = await app.http
        .post('/v2/auth/accessToken')
        .set('X-Legacy-Session-Token', account.sessionToken)
        .send({ expiresAt: expiresIn(1) })
        .expect(200);
      const list = await app.http
        .get('/v2/auth/accessToken')
        .set('X-Legacy-Session-Token', account.sessionToken)
        .expect(200);
      expect(list.body).toHaveLength(1);
      expect(list.body[0]._id).toBe(created.body._id);
      expect(created.body._session_token.startsWith(list.body[0]._session_token.replace('…', ''))).toBe(true);
      expect(JSON.stringify(list.body)).not.toContain(created.body._session_token);
      const stored = await app.store.collection('legacy_sessions').find({ userId: account.userId });
      expect(JSON.stringify(stored)).not.toContain(created.body._session_token);
    });

    it('refuses a revoked token at once, and revokes by value or by record id', async () => {
      const account = await signup(app.http);
      const make = async () =>
        (
          await app.http
            .post('/v2/auth/accessToken')
            .set('X-Legacy-Session-Token', account.sessionToken)
            .send({ expiresAt: expiresIn(1) })
            .expect(200)
        ).body;
      const [a, b] = [await make(), await make()];
      await app.http.get('/v2/auth/accessToken').set('X-Legacy-Session-Token', a._session_token).expect(200);
      await app.http
        .delete(`/v2/auth/accessToken/${a._session_token}`)
        .set('X-Legacy-Session-Token', account.sessionToken)
        .expect(200, { _id: a._id, revoked: true });
      await app.http.get('/v2/auth/accessToken').set('X-Legacy-Session-Token', a._session_token).expect(401);
      await app.http
        .delete(`/v2/auth/accessToken/${b._id}`)
        .set('X-Legacy-Session-Token', account.sessionToken)
        .expect(200);
      await app.http.get('/v2/auth/accessToken').set('X-Legacy-Session-Token', b._session_token).expect(401);
      await app.http
        .delete(`/v2/auth/accessToken/${b._id}`)
        .set('X-Legacy-Session-Token', account.sessionToken)
        .expect(404);
    });

    it('refuses an expired token at once', async () => {
      const account = await signup(app.http);
      const res = await app.http
        .post('/v2/auth/accessToken')
        .set('X-Legacy-Session-Token', account.sessionToken)
        .send({ expiresAt: new Date(clock.now().getTime() + 60_000).toISOString() })
        .expect(200);
      await app.http
        .get('/v2/auth/accessToken')
        .set('X-Legacy-Session-Token', res.body._session_token)
        .expect(200);
      clock.advance(60_000);
      await app.http
        .get('/v2/auth/accessToken')
        .set('X-Legacy-Session-Token', res.body._session_token)
        .expect(401);
      // and the store lets it go once its time has passed (TTL index on expiresAt)
      clock.advance(1_000);
      const sessions = app.store.collection<{ _id: string; userId: string; kind: string }>('legacy_sessions');
      await waitFor(
        async () => (await sessions.find({ userId: account.userId, kind: 'access_token' })).length === 0,
        { what: 'the expired access token removed' },
      );
    });

    it('does not let one account revoke another’s token', async () => {
      const owner = await signup(app.http);
      const other = await signup(app.http);
      const res = await app.http
        .post('/v2/auth/accessToken')
        .set('X-Legacy-Session-Token', owner.sessionToken)
        .send({ expiresAt: expiresIn(1) })
        .expect(200);
      await app.http
        .delete(`/v2/auth/accessToken/${res.body._session_token}`)
        .set('X-Legacy-Session-Token', other.sessionToken)
        .expect(404);
      await app.http
        .get('/v2/auth/accessToken')
        .set('X-Legacy-Session-Token', res.body._session_token)
        .expect(200);
    });

    it('refuses an expiry in the past or too far away, and a missing credential', async () => {
      const account = await signup(app.http);
      const past = await app.http
        .post('/v2/auth/accessToken')
        .set('X-Legacy-Session-Token', account.sessionToken)
        .send({ expiresAt: expiresIn(-1) })
        .expect(400);
      expect(past.body.details.issues[0].field).toBe('expiresAt');
      await app.http
        .post('/v2/auth/accessToken')
        .set('X-Legacy-Session-Token', account.sessionToken)
        .send({ expiresAt: expiresIn(3650) })
        .expect(400);
      await app.http
        .post('/v2/auth/accessToken')
        .set('X-Legacy-Session-Token', account.sessionToken)
        .send({ expiresAt: 'tomorrow' })
        .expect(400);
      await app.http
        .post('/v2/auth/accessToken')
        .send({ expiresAt: expiresIn(1) })
        .expect(401);
      await app.http.get('/v2/auth/accessToken').set('X-Legacy-Session-Token', 'lst_forged').expect(401);
    });

    it('keeps a restricted token from minting or revoking tokens', async () => {
      const account = await signup(app.http);
      const res = await app.http
        .post('/v2/auth/accessToken')
        .set('X-Legacy-Session-Token', account.sessionToken)
        .send({ expiresAt: expiresIn(1), restricted: true })
        .expect(200);
      expect(res.body.restricted).toBe(true);
      await app.http
        .post('/v2/auth/accessToken')
        .set('X-Legacy-Session-Token', res.body._session_token)
        .send({ expiresAt: expiresIn(1) })
        .expect(403);
      await app.http
        .get('/v2/auth/accessToken')
        .set('X-Legacy-Session-Token', res.body._session_token)
        .expect(200);
    });
  });
});
