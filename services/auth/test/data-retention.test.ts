import { INTERNAL_SECRET_HEADER } from '@platform/kernel';
import type { Collection, Doc, Store } from '@platform/store';
import { createEmbeddedStore } from '@platform/store';
import { tempDir, waitFor } from '@platform/testkit';
import { removeAbandonedAnonymousUsers } from '../src/domain/abandoned-anonymous-users';
import { giveRemovalTimesToOlderRecords } from '../src/domain/removal-time-backfill';
import { sha256Hex } from '../src/domain/secrets';
import { type AuthHarness, INTERNAL_SECRET, randomAddress, startAuth, type UserActor } from './helpers';

/**
 * Decision 0094: what auth stores for a client is removed once nothing can use it any more, and never before.
 * The harness's store applies its TTL indexes by the harness's clock every 20 ms; tests move that clock.
 */

const SECOND = 1000;
const DAY = 86_400 * SECOND;
/** ACCESS_TOKENS_MAX_AGE and RETENTION_GRACE_SECONDS by default */
const SESSION = 30 * DAY;
const GRACE = DAY;
const FAST_HASH = { PASSWORD_SCRYPT_N: '1024', PASSWORD_SCRYPT_P: '1' };
const PASSWORD = 'correct horse battery';
let emails = 0;
const newEmail = () => `retained${++emails}-${Date.now()}@example.com`;

// biome-ignore lint/suspicious/noExplicitAny: stored documents of any collection, asserted field by field
type AnyCollection = Collection<any>;

/**
 * Waits for one TTL sweep of `collection` at the clock's present time: a record whose time has passed is
 * written and seen to go, so whatever is still there after it was not due (no sleeping, no guessing).
 */
async function afterASweep(collection: AnyCollection): Promise<void> {
  const _id = `sweep-probe-${Math.random()}`;
  await collection.insertOne({ _id, removeAt: new Date(0) });
  await waitFor(async () => (await collection.count({ _id })) === 0, {
    what: `a TTL sweep of ${collection.name}`,
  });
}

const gone = (collection: AnyCollection, filter: Record<string, unknown>, what: string) =>
  waitFor(async () => (await collection.count(filter)) === 0, { what });

const retention = (h: AuthHarness) => h.service.retention;

async function signup(h: AuthHarness, actor: UserActor | null = null) {
  const body = { email: newEmail(), password: PASSWORD };
  const res = actor
    ? await h.call(actor, 'post', '/v2/signup', body)
    : await h.http.post('/v2/signup').set('x-forwarded-for', randomAddress()).send(body);
  if (res.status !== 201) throw new Error(`signup failed: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body as { userId: string; sessionId: string; refreshToken: string };
}

const refresh = (h: AuthHarness, refreshToken: string) =>
  h.http.post('/v2/login/refresh').send({ refreshToken });

describe('auth keeps what is live and removes what nothing can use any more', () => {
  let h: AuthHarness;
  beforeEach(async () => {
    h = await startAuth({ env: FAST_HASH, ttlSweepIntervalMs: 20 });
  });
  afterEach(async () => {
    await h.stop();
  });

  it('an anonymous login leaves nothing once its session has expired and a grace has passed, and not before', async () => {
    const { sessions, users } = h.service.context.collections;
    const user = await h.newUser();
    h.clock.advance(SESSION + GRACE - SECOND);
    await afterASweep(sessions);
    expect(await sessions.count({ _id: user.sessionId })).toBe(1);
    expect(await retention(h).run()).toMatchObject({ anonymousUsersRemoved: 0 });
    expect(await users.count({ _id: user.userId })).toBe(1);

    h.clock.advance(2 * SECOND);
    await gone(sessions, { _id: user.sessionId }, 'the expired anonymous session removed');
    const fresh = await h.newUser();
    expect(await retention(h).run()).toMatchObject({ anonymousUsersRemoved: 1 });
    expect(await users.count({ _id: user.userId })).toBe(0);
    expect((await h.call(user, 'get', '/v2/me')).status).toBe(401);
    // one made a moment ago is not touched
    expect((await h.call(fresh, 'get', '/v2/me')).status).toBe(200);
  });

  it('keeps an anonymous user who holds anything, or became an account, until what it holds is gone', async () => {
    const { users, accessTokenPlaces } = h.service.context.collections;
    const withOrg = await h.newUser();
    expect((await h.call(withOrg, 'post', '/v2/orgs', { slug: 'kept-org', name: 'Kept' })).status).toBe(201);
    // made an organization, handed it to someone else and left: its name stays on what it made
    const maker = await h.newUser();
    expect((await h.call(maker, 'post', '/v2/orgs', { slug: 'made-org', name: 'Made' })).status).toBe(201);
    await h.call(maker, 'post', '/v2/orgs/made-org/members', { userId: withOrg.userId, role: 'owner' });
    expect((await h.call(maker, 'delete', `/v2/orgs/made-org/members/${maker.userId}`)).status).toBe(204);
    const withToken = await h.newUser();
    const token = await h.call(withToken, 'post', '/v2/user/accessTokens', {
      name: 'ci',
      expiresAt: new Date(h.clock.now().getTime() + 60 * DAY).toISOString(),
    });
    expect(token.status).toBe(201);
    const admin = await h.newUser();
    const granted = await h.http
      .put(`/internal/users/${admin.userId}/platform-admin`)
      .set(INTERNAL_SECRET_HEADER, INTERNAL_SECRET)
      .send({ granted: true });
    expect(granted.status).toBe(200);
    const signedUp = await h.newUser();
    const account = await signup(h, signedUp);
    expect(account.userId).toBe(signedUp.userId);
    const abandoned = await h.newUser();

    h.clock.advance(SESSION + GRACE + SECOND);
    await gone(h.service.context.collections.sessions, { userId: abandoned.userId }, 'sessions removed');
    expect(await retention(h).run()).toMatchObject({ anonymousUsersRemoved: 1 });
    const left = async () => (await users.find({})).map((u) => u._id);
    expect(await left()).toEqual(
      expect.arrayContaining([withOrg.userId, maker.userId, withToken.userId, admin.userId, signedUp.userId]),
    );
    expect(await left()).not.toContain(abandoned.userId);
    // the account's password session is still there to be refreshed (its refresh token lasts 90 days)
    expect((await refresh(h, account.refreshToken)).status).toBe(200);

    // the access token expires at day 60 and goes a grace later; then its owner has nothing left
    h.clock.advance(30 * DAY);
    await gone(h.service.context.collections.accessTokens, { userId: withToken.userId }, 'the token removed');
    expect(await accessTokenPlaces.count({ _id: withToken.userId })).toBe(1);
    expect(await retention(h).run()).toMatchObject({ anonymousUsersRemoved: 1 });
    expect(await users.count({ _id: withToken.userId })).toBe(0);
    expect(await accessTokenPlaces.count({ _id: withToken.userId })).toBe(0);
  });

  it('a password session stays while its refresh token may renew it, and goes a grace after the last one expires', async () => {
    const { sessions, refreshTokens } = h.service.context.collections;
    const account = await signup(h);
    h.clock.advance(60 * DAY); // the JWT expired at day 30; the refresh token lasts 90 days
    await afterASweep(sessions);
    const renewed = await refresh(h, account.refreshToken);
    expect(renewed.status).toBe(200);
    expect(renewed.body.sessionId).toBe(account.sessionId);

    h.clock.advance(90 * DAY + GRACE - SECOND);
    await afterASweep(sessions);
    expect(await sessions.count({ _id: account.sessionId })).toBe(1);
    h.clock.advance(2 * SECOND);
    await gone(sessions, { _id: account.sessionId }, 'the session past its refresh window removed');
    await gone(refreshTokens, { sessionId: account.sessionId }, 'its refresh tokens removed');
  });

  it('a revoked session goes a grace after its revocation; a reused refresh token revokes it first', async () => {
    const { sessions, refreshTokens } = h.service.context.collections;
    const account = await signup(h);
    const first = await refresh(h, account.refreshToken);
    expect(first.status).toBe(200);
    // the spent token again: it leaked, the whole session is revoked
    expect((await refresh(h, account.refreshToken)).status).toBe(401);
    expect((await refresh(h, first.body.refreshToken)).status).toBe(401);
    const revoked = await sessions.findOne({ _id: account.sessionId });
    expect(revoked?.revokedAt).toEqual(h.clock.now());
    expect(await refreshTokens.count({ sessionId: account.sessionId })).toBe(0);

    h.clock.advance(GRACE - SECOND);
    await afterASweep(sessions);
    expect(await sessions.count({ _id: account.sessionId })).toBe(1);
    h.clock.advance(2 * SECOND);
    await gone(sessions, { _id: account.sessionId }, 'the revoked session removed');

    // logging out is a revocation too
    const other = await h.newUser();
    expect((await h.call(other, 'post', '/v2/logout')).status).toBe(204);
    h.clock.advance(GRACE + SECOND);
    await gone(sessions, { _id: other.sessionId }, 'the logged-out session removed');
  });

  it('access tokens go a grace after they expire or are revoked, and their places stay right', async () => {
    await h.stop();
    h = await startAuth({ env: { ...FAST_HASH, ACCESS_TOKENS_PER_USER_LIMIT: '2' }, ttlSweepIntervalMs: 20 });
    const { accessTokens } = h.service.context.collections;
    const user = await h.newUser();
    const create = (days: number) =>
      h.call(user, 'post', '/v2/user/accessTokens', {
        name: `${days} days`,
        expiresAt: new Date(h.clock.now().getTime() + days * DAY).toISOString(),
      });
    const short = (await create(10)).body;
    const long = (await create(100)).body;
    expect((await create(100)).status).toBe(409); // two places, both taken
    expect((await h.call(user, 'delete', `/v2/user/accessTokens/${long._id}`)).status).toBe(204);

    h.clock.advance(GRACE - SECOND);
    await afterASweep(accessTokens);
    expect(await accessTokens.count({ _id: long._id })).toBe(1);
    h.clock.advance(2 * SECOND);
    await gone(accessTokens, { _id: long._id }, 'the revoked token removed');
    expect(await accessTokens.count({ _id: short._id })).toBe(1);

    h.clock.advance(10 * DAY - 2 * SECOND); // the short one expired a day ago, less a second
    await afterASweep(accessTokens);
    const listed = await h.call(user, 'get', '/v2/user/accessTokens');
    expect(listed.body.map((t: { _id: string }) => t._id)).toEqual([short._id]);
    h.clock.advance(2 * SECOND);
    await gone(accessTokens, { _id: short._id }, 'the expired token removed');
    expect((await h.call(user, 'get', '/v2/user/accessTokens')).body).toEqual([]);
    // every place is free again: two new tokens fit, a third does not
    expect((await create(5)).status).toBe(201);
    expect((await create(5)).status).toBe(201);
    expect((await create(5)).status).toBe(409);
  });

  it('API keys are listed until a grace after they expire, go a grace after a revocation, and stay while they never expire', async () => {
    const { orgApiKeys, workspaceApiKeys } = h.service.context.collections;
    const owner = await h.newUser();
    expect((await h.call(owner, 'post', '/v2/orgs', { slug: 'kept-keys', name: 'Kept keys' })).status).toBe(
      201,
    );
    const workspace = (await h.call(owner, 'post', '/v2/workspaces', { name: 'Kept keys' })).body.id;
    const orgKeys = '/v2/orgs/kept-keys/apikeys';
    const workspaceKeys = `/v2/workspaces/${workspace}/security/apikeys`;
    const mint = async (expiresAt: Date | null) => {
      const expiry = { expiresAt: expiresAt?.toISOString() ?? null };
      const permissions = ['models:read'];
      const org = await h.call(owner, 'post', orgKeys, { name: 'org key', permissions, ...expiry });
      const rules = [{ action: 'read', subject: 'page' }];
      const ws = await h.call(owner, 'post', workspaceKeys, { name: 'workspace key', rules, ...expiry });
      expect([org.status, ws.status]).toEqual([201, 201]);
      return {
        org: org.body as { _id: string; apiKey: string },
        ws: ws.body as { _id: string; apiKey: string },
      };
    };
    const in10Days = new Date(h.clock.now().getTime() + 10 * DAY);
    const expiring = await mint(in10Days);
    const expiringDeleted = await mint(in10Days);
    const forever = await mint(null);
    const revoked = await mint(null);
    expect((await h.call(owner, 'delete', `${orgKeys}/${revoked.org._id}`)).status).toBe(204);
    expect((await h.call(owner, 'delete', `${workspaceKeys}/${revoked.ws._id}`)).status).toBe(204);
    const listed = async () => ({
      org: (await h.call(owner, 'get', orgKeys)).body.map((k: { _id: string }) => k._id).sort(),
      ws: (await h.call(owner, 'get', workspaceKeys)).body.map((k: { _id: string }) => k._id).sort(),
    });
    const sweeps = () => Promise.all([afterASweep(orgApiKeys), afterASweep(workspaceApiKeys)]);

    h.clock.advance(GRACE - SECOND);
    await sweeps();
    expect(await orgApiKeys.count({ _id: revoked.org._id })).toBe(1);
    expect(await workspaceApiKeys.count({ _id: revoked.ws._id })).toBe(1);
    h.clock.advance(2 * SECOND);
    await gone(orgApiKeys, { _id: revoked.org._id }, 'the revoked organization key removed');
    await gone(workspaceApiKeys, { _id: revoked.ws._id }, 'the revoked workspace key removed');

    // the expiring keys expired a day ago, less a second: refused, and still listed, so their people see why and may
    // delete them
    h.clock.advance(10 * DAY - 2 * SECOND);
    await sweeps();
    for (const key of [expiring.org, expiring.ws])
      expect((await h.call(h.apiKey(key.apiKey), 'get', '/v2/orgs/kept-keys')).status).toBe(401);
    expect((await h.call(owner, 'delete', `${orgKeys}/${expiringDeleted.org._id}`)).status).toBe(204);
    expect((await h.call(owner, 'delete', `${workspaceKeys}/${expiringDeleted.ws._id}`)).status).toBe(204);
    expect(await listed()).toEqual({
      org: [expiring.org._id, forever.org._id].sort(),
      ws: [expiring.ws._id, forever.ws._id].sort(),
    });
    h.clock.advance(2 * SECOND);
    await gone(orgApiKeys, { _id: expiring.org._id }, 'the expired organization key removed');
    await gone(workspaceApiKeys, { _id: expiring.ws._id }, 'the expired workspace key removed');
    expect(await listed()).toEqual({ org: [forever.org._id], ws: [forever.ws._id] });
    for (const key of [forever.org, forever.ws]) {
      const { principal } = await h.service.context.introspection.resolve(
        h.apiKey(key.apiKey).credential,
        null,
        'r',
      );
      expect(principal.credential.id).toBe(key._id);
    }
  });

  it('mailed links and failed-login counters go once their time has passed', async () => {
    const { accountTokens, rateCounters } = h.service.context.collections;
    const account = await signup(h);
    expect(await accountTokens.count({ userId: account.userId })).toBe(1);
    const address = randomAddress();
    const failed = await h.http
      .post('/v2/login')
      .set('x-forwarded-for', address)
      .send({ email: `nobody-${Date.now()}@example.com`, password: PASSWORD });
    expect(failed.status).toBe(401);
    const counters = { _id: { $in: [`login-address:${address}`] } };
    expect(await rateCounters.count(counters)).toBe(1);

    // the failure window (900 s) and an hour
    h.clock.advance(900 * SECOND + 3600 * SECOND - SECOND);
    await afterASweep(rateCounters);
    expect(await rateCounters.count(counters)).toBe(1);
    h.clock.advance(2 * SECOND);
    await gone(rateCounters, counters, 'the failed-login counter removed');

    // the verification link lasts two days, then a grace
    h.clock.advance(3 * DAY);
    await gone(accountTokens, { userId: account.userId }, 'the expired verification link removed');
  });

  it('dates records written before removal times existed, and removes them when they are due', async () => {
    const c = h.service.context.collections;
    await retention(h).run(); // the pass of the start is over
    const now = h.clock.now().getTime();
    const at = (ms: number) => new Date(now + ms);
    const old = { _id: 'old-anonymous', anonymous: true, email: null, createdAt: at(-40 * DAY) };
    await c.users.insertOne(old);
    const session = {
      userId: old._id,
      activeOrgSlug: null,
      createdAt: at(-40 * DAY),
      revokedAt: null,
    };
    await c.sessions.insertOne({
      ...session,
      _id: 'old-anonymous-session',
      clientId: h.config.ANONYMOUS_CLIENT_ID,
      expiresAt: at(-10 * DAY),
    });
    await c.sessions.insertOne({
      ...session,
      _id: 'old-revoked-session',
      userId: 'someone',
      clientId: h.config.PASSWORD_CLIENT_ID,
      expiresAt: at(5 * DAY),
      revokedAt: at(-2 * DAY),
    });
    await c.sessions.insertOne({
      ...session,
      _id: 'old-refreshable-session',
      userId: 'someone',
      clientId: h.config.PASSWORD_CLIENT_ID,
      expiresAt: at(-DAY),
    });
    const token = { userId: 'someone', createdAt: at(-DAY), usedAt: null };
    await c.refreshTokens.insertOne({
      ...token,
      _id: 'old-live-refresh',
      sessionId: 'old-refreshable-session',
      expiresAt: at(50 * DAY),
    });
    await c.refreshTokens.insertOne({
      ...token,
      _id: 'old-expired-refresh',
      sessionId: 'gone',
      expiresAt: at(-2 * DAY),
    });
    const accessToken = { userId: 'someone', name: 'old', activeOrgSlug: null, createdAt: at(-DAY) };
    await c.accessTokens.insertOne({
      ...accessToken,
      _id: 'old-expired-token',
      tokenHash: sha256Hex('a'),
      expiresAt: at(-2 * DAY),
      revokedAt: null,
    });
    await c.accessTokens.insertOne({
      ...accessToken,
      _id: 'old-live-token',
      tokenHash: sha256Hex('b'),
      expiresAt: at(10 * DAY),
      revokedAt: null,
    });
    await c.accountTokens.insertOne({
      ...token,
      _id: 'old-link',
      kind: 'reset_password',
      email: 'x@example.com',
      expiresAt: at(-2 * DAY),
    });
    await c.rateCounters.insertOne({ _id: 'login-account:old', points: 3, expire: now - 2 * 3600 * SECOND });
    const key = {
      orgId: 'some-org',
      orgSlug: 'some-org',
      name: 'old',
      permissions: [],
      scopes: [],
      projectId: null,
      createdBy: 'someone',
      createdAt: at(-20 * DAY),
    };
    const orgKey = (_id: string, expiresAt: Date | null, revokedAt: Date | null) =>
      c.orgApiKeys.insertOne({ ...key, _id, keyHash: sha256Hex(_id), expiresAt, revokedAt });
    await orgKey('old-expired-key', at(-2 * DAY), null);
    await orgKey('old-revoked-key', null, at(-2 * DAY));
    await orgKey('old-lasting-key', null, null);
    await c.workspaceApiKeys.insertOne({
      ...key,
      _id: 'old-expiring-workspace-key',
      workspaceId: 'some-workspace',
      keyHash: sha256Hex('old-expiring-workspace-key'),
      rules: [],
      expiresAt: at(10 * DAY),
      revokedAt: null,
    });

    const pass = await retention(h).run();
    expect(pass?.dated).toEqual({
      sessions: 3,
      accessTokens: 2,
      refreshTokens: 2,
      accountTokens: 1,
      rateCounters: 1,
      orgApiKeys: 2,
      workspaceApiKeys: 1,
    });
    const due = ['old-anonymous-session', 'old-revoked-session'];
    await gone(c.sessions, { _id: { $in: due } }, 'older sessions that were due removed');
    await gone(c.refreshTokens, { _id: 'old-expired-refresh' }, 'an older expired refresh token removed');
    await gone(c.accessTokens, { _id: 'old-expired-token' }, 'an older expired access token removed');
    await gone(c.accountTokens, { _id: 'old-link' }, 'an older expired link removed');
    await gone(c.rateCounters, { _id: 'login-account:old' }, 'an older idle counter removed');
    await gone(
      c.orgApiKeys,
      { _id: { $in: ['old-expired-key', 'old-revoked-key'] } },
      'older ended keys removed',
    );
    expect(await c.sessions.count({ _id: 'old-refreshable-session' })).toBe(1);
    expect(await c.accessTokens.count({ _id: 'old-live-token' })).toBe(1);
    expect(await c.orgApiKeys.count({ _id: 'old-lasting-key', removeAt: { $exists: false } })).toBe(1);
    expect(await c.workspaceApiKeys.count({ _id: 'old-expiring-workspace-key' })).toBe(1);
    // its session gone, the older anonymous user goes (at the next pass, or at that one if the sweep came between)
    const next = await retention(h).run();
    expect(pass!.anonymousUsersRemoved + next!.anonymousUsersRemoved).toBe(1);
    expect(await c.users.count({ _id: old._id })).toBe(0);

    // the older password session lasts as long as its refresh token may renew it, and a grace
    h.clock.advance(50 * DAY + GRACE - SECOND);
    await afterASweep(c.sessions);
    expect(await c.sessions.count({ _id: 'old-refreshable-session' })).toBe(1);
    h.clock.advance(2 * SECOND);
    await gone(c.sessions, { _id: 'old-refreshable-session' }, 'the older refreshable session removed');
    await gone(
      c.workspaceApiKeys,
      { _id: 'old-expiring-workspace-key' },
      'the older expired workspace key removed',
    );
    expect(await c.orgApiKeys.count({ _id: 'old-lasting-key' })).toBe(1);
  });

  it('two passes at once date each older API key once, from its revocation or expiry, and the next finds none', async () => {
    const c = h.service.context.collections;
    await retention(h).run(); // the pass of the start is over
    const now = h.clock.now().getTime();
    const at = (ms: number) => new Date(now + ms);
    const key = (_id: string, expiresAt: Date | null, revokedAt: Date | null) =>
      c.orgApiKeys.insertOne({
        _id,
        orgId: 'some-org',
        orgSlug: 'some-org',
        name: 'old',
        keyHash: sha256Hex(_id),
        permissions: [],
        scopes: [],
        projectId: null,
        createdBy: 'someone',
        createdAt: at(-20 * DAY),
        expiresAt,
        revokedAt,
      });
    const expiring = Array.from({ length: 30 }, (_, i) => `expiring-${i}`);
    for (const _id of expiring) await key(_id, at(3 * DAY), null);
    await key('revoked-before-its-expiry', at(3 * DAY), at(-DAY / 2));
    await key('lasting', null, null);

    const passes = await Promise.all([
      giveRemovalTimesToOlderRecords(h.service.context),
      giveRemovalTimesToOlderRecords(h.service.context),
    ]);
    expect(passes[0]!.orgApiKeys + passes[1]!.orgApiKeys).toBe(31);
    expect((await giveRemovalTimesToOlderRecords(h.service.context)).orgApiKeys).toBe(0);
    const removalOf = async (_id: string) => (await c.orgApiKeys.findOne({ _id }))?.removeAt?.getTime();
    for (const _id of expiring) expect([_id, await removalOf(_id)]).toEqual([_id, now + 3 * DAY + GRACE]);
    expect(await removalOf('revoked-before-its-expiry')).toBe(now - DAY / 2 + GRACE);
    expect(await removalOf('lasting')).toBeUndefined();
  });

  it('anonymous users store no address: a pass removes the null that earlier versions stored', async () => {
    const { users } = h.service.context.collections;
    const fresh = await h.newUser();
    expect(await users.findOne({ _id: fresh.userId })).not.toHaveProperty('email');
    expect((await h.call(fresh, 'get', '/v2/me')).body).toMatchObject({ anonymous: true, email: null });

    const older = await h.newUser();
    await users.updateOne({ _id: older.userId }, { $set: { email: null } }); // as an earlier version made it
    const account = await signup(h);
    await retention(h).run();
    expect(await users.findOne({ _id: older.userId })).not.toHaveProperty('email');
    expect((await h.call(older, 'get', '/v2/me')).body).toMatchObject({ anonymous: true, email: null });
    expect((await users.findOne({ _id: account.userId }))?.email).toMatch(/@example\.com$/);
  });

  it('runs its passes on its own, at RETENTION_INTERVAL_MS', async () => {
    await h.stop();
    h = await startAuth({ env: { RETENTION_INTERVAL_MS: '20' }, ttlSweepIntervalMs: 20 });
    const user = await h.newUser();
    h.clock.advance(SESSION + GRACE + SECOND);
    await gone(h.service.context.collections.users, { _id: user.userId }, 'the abandoned user removed');
  });
});

/** A store whose `users.deleteOne` first lets `before` run: what another request does at that very moment. */
function storeWithHookBeforeUserDelete(store: Store) {
  let before: ((filter: Record<string, unknown>) => Promise<void>) | null = null;
  let users: Collection<Doc> | null = null;
  const hooked: Store = {
    ...store,
    collection<T extends Doc>(name: string, indexes?: Parameters<Store['collection']>[1]) {
      const inner = store.collection<T>(name, indexes);
      if (name !== 'users') return inner;
      users ??= new Proxy(inner as unknown as Collection<Doc>, {
        get(target, prop) {
          if (prop === 'deleteOne')
            return async (filter: Record<string, unknown>) => {
              await before?.(filter);
              return target.deleteOne(filter);
            };
          const value = Reflect.get(target, prop, target);
          return typeof value === 'function' ? value.bind(target) : value;
        },
      });
      return users as unknown as Collection<T>;
    },
  };
  return {
    store: hooked,
    beforeDelete(hook: (filter: Record<string, unknown>) => Promise<void>) {
      before = hook;
    },
  };
}

describe('removing abandoned anonymous users while others act', () => {
  const folder = tempDir('auth-retention-');
  afterAll(() => folder.remove());

  it('keeps a user that an owner adds to an organization while it is being removed', async () => {
    let now = 0;
    const hooked = storeWithHookBeforeUserDelete(
      createEmbeddedStore({ dataDir: `${folder.dir}/hooked`, compactionIntervalMs: 0, now: () => now }),
    );
    const h = await startAuth({ env: FAST_HASH, store: hooked.store });
    now = h.clock.now().getTime();
    try {
      const owner = await h.newUser();
      expect((await h.call(owner, 'post', '/v2/orgs', { slug: 'racing', name: 'Racing' })).status).toBe(201);
      const target = await h.newUser();
      const { sessions, users, memberships } = h.service.context.collections;
      await sessions.deleteMany({ userId: target.userId }); // as the store does once the session is due
      h.clock.advance(SESSION + GRACE + SECOND);
      // the owner's request found the user a moment ago, and adds it now
      hooked.beforeDelete(async (filter) => {
        if (filter._id !== target.userId) return;
        hooked.beforeDelete(async () => undefined);
        const org = await h.service.context.collections.orgs.findOne({ slug: 'racing' });
        await memberships.insertOne({
          _id: 'added-meanwhile',
          orgId: org!._id,
          orgSlug: 'racing',
          userId: target.userId,
          role: 'member',
          createdAt: h.clock.now(),
        });
      });
      expect(await h.service.retention.run()).toMatchObject({ anonymousUsersRemoved: 0 });
      expect(await users.findOne({ _id: target.userId })).toMatchObject({ anonymous: true });
    } finally {
      await h.stop();
      await hooked.store.close();
    }
  });

  it('several instances on one store: one pass at a time, each user removed once, the lease handed on at stop', async () => {
    const store = createEmbeddedStore({ dataDir: `${folder.dir}/shared`, compactionIntervalMs: 0 });
    const a = await startAuth({ env: FAST_HASH, store });
    const b = await startAuth({ env: FAST_HASH, store, clock: a.clock });
    let aRunning = true;
    try {
      // the passes each instance made at its start are over (they may take a while on a fresh store)
      await Promise.all([a.service.retention.run(), b.service.retention.run()]);
      const made = await Promise.all(Array.from({ length: 6 }, () => a.newUser()));
      const { sessions, users } = a.service.context.collections;
      await sessions.deleteMany({ userId: { $in: made.map((u) => u.userId) } });
      a.clock.advance(SESSION + GRACE + SECOND);
      const passes = await Promise.all([a.service.retention.run(), b.service.retention.run()]);
      expect(passes.filter((p) => p === null)).toHaveLength(1); // the other instance holds the lease
      expect(passes.find((p) => p !== null)).toMatchObject({ anonymousUsersRemoved: 6 });

      // and were two passes to run at once regardless (a lease taken over mid-pass), no user goes twice
      const more = await Promise.all(Array.from({ length: 6 }, () => a.newUser()));
      await sessions.deleteMany({ userId: { $in: more.map((u) => u.userId) } });
      a.clock.advance(SESSION + GRACE + SECOND);
      const removed = await Promise.all([
        removeAbandonedAnonymousUsers(a.service.context),
        removeAbandonedAnonymousUsers(b.service.context),
      ]);
      expect(removed[0]! + removed[1]!).toBe(6);
      expect(await users.count({ anonymous: true })).toBe(0);

      await a.stop();
      aRunning = false;
      expect(await b.service.retention.run()).not.toBeNull();
    } finally {
      if (aRunning) await a.stop();
      await b.stop();
      await store.close();
    }
  });
});
