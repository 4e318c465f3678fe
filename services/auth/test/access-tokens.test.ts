import { ACCESS_TOKEN_PATTERN, Subjects } from '@platform/contracts';
import { ManualClock } from '@platform/kernel';
import { createEmbeddedStore } from '@platform/store';
import { tempDir, waitFor } from '@platform/testkit';
import { sha256Hex } from '../src/domain/secrets';
import { type AuthHarness, recordEvents, startAuth, type UserActor } from './helpers';

const inDays = (h: AuthHarness, days: number) =>
  new Date(h.clock.now().getTime() + days * 86_400_000).toISOString();

describe('user access tokens (spec 2.6)', () => {
  let h: AuthHarness;
  let user: UserActor;
  beforeAll(async () => {
    h = await startAuth();
    user = await h.newUser();
  });
  afterAll(() => h.stop());

  it('creates {name, expiresAt, userId, token, _id}; the token is at: + 256 random bits, stored only as a hash', async () => {
    const expiresAt = inDays(h, 30);
    const res = await h.call(user, 'post', '/v2/user/accessTokens', { name: 'ci', expiresAt });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      name: 'ci',
      expiresAt,
      userId: user.userId,
      token: expect.any(String),
      _id: expect.any(String),
    });
    expect(res.body.token).toMatch(ACCESS_TOKEN_PATTERN);
    const stored = await h.service.context.collections.accessTokens.findOne({ _id: res.body._id });
    expect(stored!.tokenHash).toBe(sha256Hex(res.body.token));
    expect(JSON.stringify(stored)).not.toContain(res.body.token.slice(3));
  });

  it('works wherever a session does (Bearer at:...)', async () => {
    const { body } = await h.call(user, 'post', '/v2/user/accessTokens', {
      name: 'cli',
      expiresAt: inDays(h, 1),
    });
    const me = await h.call(h.accessToken(body.token), 'get', '/v2/me');
    expect(me.status).toBe(200);
    expect(me.body).toMatchObject({ id: user.userId, credential: { kind: 'access_token', id: body._id } });
  });

  it('lists tokens without secrets', async () => {
    const res = await h.call(user, 'get', '/v2/user/accessTokens');
    expect(res.status).toBe(200);
    expect(res.body.length).toBeGreaterThanOrEqual(2);
    for (const t of res.body) {
      expect(Object.keys(t).sort()).toEqual(['_id', 'createdAt', 'expiresAt', 'name', 'userId']);
    }
  });

  it('an access token may not create or list access tokens (403): that needs a session', async () => {
    const { body } = await h.call(user, 'post', '/v2/user/accessTokens', {
      name: 'x',
      expiresAt: inDays(h, 1),
    });
    const asToken = h.accessToken(body.token);
    const create = await h.call(asToken, 'post', '/v2/user/accessTokens', {
      name: 'y',
      expiresAt: inDays(h, 1),
    });
    expect(create.status).toBe(403);
    expect((await h.call(asToken, 'get', '/v2/user/accessTokens')).status).toBe(403);
  });

  it.each([
    [{ name: 'past', expiresAt: '2000-01-01T00:00:00Z' }, 'expiresAt', /future/],
    [{ name: 'bad', expiresAt: 'next tuesday' }, 'expiresAt', /./],
    [{ name: 'no offset', expiresAt: '2030-01-01T00:00:00' }, 'expiresAt', /./],
    [{ expiresAt: '2030-01-01T00:00:00Z' }, 'name', /./],
    [{ name: 'too far', expiresAt: '2099-01-01T00:00:00Z' }, 'expiresAt', /days from now/],
  ])('refuses %j with 400 naming the field', async (body, field, message) => {
    const res = await h.call(user, 'post', '/v2/user/accessTokens', body);
    expect(res.status).toBe(400);
    expect(res.body.details.issues).toEqual(
      expect.arrayContaining([expect.objectContaining({ field, message: expect.stringMatching(message) })]),
    );
  });

  it('expires: 401 once expiresAt has passed', async () => {
    const { body } = await h.call(user, 'post', '/v2/user/accessTokens', {
      name: 'short',
      expiresAt: inDays(h, 1),
    });
    const asToken = h.accessToken(body.token);
    expect((await h.call(asToken, 'get', '/v2/me')).status).toBe(200);
    h.clock.advance(86_400_000 + 1000);
    expect((await h.call(asToken, 'get', '/v2/me')).status).toBe(401);
  });

  it('revokes: 204, then 401, and auth.credential.revoked carries the credential hash', async () => {
    const events = recordEvents(h.bus, [Subjects.credentialRevoked]);
    const { body } = await h.call(user, 'post', '/v2/user/accessTokens', {
      name: 'gone',
      expiresAt: inDays(h, 5),
    });
    const asToken = h.accessToken(body.token);
    expect((await h.call(user, 'delete', `/v2/user/accessTokens/${body._id}`)).status).toBe(204);
    expect((await h.call(asToken, 'get', '/v2/me')).status).toBe(401);
    await waitFor(() => events.seen.length === 1, { what: 'revocation event' });
    expect(events.seen[0]!.payload).toEqual({
      version: 1,
      kind: 'access_token',
      id: body._id,
      credentialHash: sha256Hex(body.token),
      at: expect.any(String),
    });
    expect((await h.call(user, 'delete', `/v2/user/accessTokens/${body._id}`)).status).toBe(404);
    expect(
      (await h.call(user, 'get', '/v2/user/accessTokens')).body.map((t: { _id: string }) => t._id),
    ).not.toContain(body._id);
    events.stop();
  });

  it('a token may revoke itself but not its siblings; nobody revokes another user’s token', async () => {
    const one = (
      await h.call(user, 'post', '/v2/user/accessTokens', { name: 'one', expiresAt: inDays(h, 5) })
    ).body;
    const two = (
      await h.call(user, 'post', '/v2/user/accessTokens', { name: 'two', expiresAt: inDays(h, 5) })
    ).body;
    const stranger = await h.newUser();
    expect((await h.call(stranger, 'delete', `/v2/user/accessTokens/${one._id}`)).status).toBe(404);
    expect(
      (await h.call(h.accessToken(one.token), 'delete', `/v2/user/accessTokens/${two._id}`)).status,
    ).toBe(403);
    expect(
      (await h.call(h.accessToken(one.token), 'delete', `/v2/user/accessTokens/${one._id}`)).status,
    ).toBe(204);
    expect((await h.call(h.accessToken(one.token), 'get', '/v2/me')).status).toBe(401);
    expect((await h.call(h.accessToken(two.token), 'get', '/v2/me')).status).toBe(200);
  });

  it('an unknown or malformed token is 401', async () => {
    expect((await h.call(h.accessToken(`at:${'A'.repeat(43)}`), 'get', '/v2/me')).status).toBe(401);
    expect((await h.call(h.accessToken('at:short'), 'get', '/v2/me')).status).toBe(401);
  });
});

describe('ACCESS_TOKENS_PER_USER_LIMIT, with several instances on one store', () => {
  const env = { ACCESS_TOKENS_PER_USER_LIMIT: '5' };
  const folder = tempDir('auth-token-limit-');
  const store = createEmbeddedStore({ dataDir: folder.dir, compactionIntervalMs: 0 });
  const clock = new ManualClock('2025-03-01T00:00:00Z');
  let a: AuthHarness;
  let b: AuthHarness;
  beforeAll(async () => {
    a = await startAuth({ store, clock, env });
    b = await startAuth({ store, clock, env });
  });
  afterAll(async () => {
    await a.stop();
    await b.stop();
    await store.close();
    folder.remove();
  });

  it('accepts exactly the limit when creations race on both instances', async () => {
    const user = await a.newUser();
    const replies = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        (i % 2 ? a : b).call(user, 'post', '/v2/user/accessTokens', {
          name: `racer ${i}`,
          expiresAt: inDays(a, 5),
        }),
      ),
    );
    expect(replies.filter((r) => r.status === 201)).toHaveLength(5);
    expect(
      new Set(replies.filter((r) => r.status !== 201).map((r) => `${r.status} ${r.body.error}`)),
    ).toEqual(new Set(['409 TooManyAccessTokens']));
    expect((await b.call(user, 'get', '/v2/user/accessTokens')).body).toHaveLength(5);
  });

  it('counts the live tokens a user made before places were kept, not the revoked or expired ones', async () => {
    const user = await a.newUser();
    const tokens = a.service.context.collections.accessTokens;
    const now = clock.now();
    const made = (i: number, expiresAt: Date, revokedAt: Date | null) => ({
      _id: `earlier-${user.userId}-${i}`,
      userId: user.userId,
      name: `earlier ${i}`,
      tokenHash: sha256Hex(`earlier-${user.userId}-${i}`),
      activeOrgSlug: null,
      createdAt: now,
      expiresAt,
      revokedAt,
    });
    for (let i = 0; i < 4; i++) await tokens.insertOne(made(i, new Date(inDays(a, 10)), null));
    await tokens.insertOne(made(4, new Date(inDays(a, 10)), now));
    await tokens.insertOne(made(5, new Date(now.getTime() - 1000), null));

    const create = (h: AuthHarness, name: string) =>
      h.call(user, 'post', '/v2/user/accessTokens', { name, expiresAt: inDays(h, 10) });
    const replies = await Promise.all([create(a, 'fifth'), create(b, 'sixth'), create(a, 'seventh')]);
    expect(replies.map((r) => r.status).sort()).toEqual([201, 409, 409]);
    expect((await b.call(user, 'delete', `/v2/user/accessTokens/earlier-${user.userId}-0`)).status).toBe(204);
    expect((await create(b, 'after a revocation')).status).toBe(201);
    expect((await create(a, 'one too many')).status).toBe(409);
  });
});
