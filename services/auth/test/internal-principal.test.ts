import { type AuthHarness, INTERNAL_SECRET, startAuth, type UserActor } from './helpers';

describe('POST /internal/principal (docs/internal-api.md)', () => {
  let h: AuthHarness;
  let user: UserActor;
  beforeAll(async () => {
    h = await startAuth({ env: { PRINCIPAL_CACHE_TTL_SECONDS: '20' } });
    user = await h.newUser();
    await h.call(user, 'post', '/v2/orgs', { slug: 'intern', name: 'Intern' });
  });
  afterAll(() => h.stop());

  const ask = (body: unknown, secret: string | null = INTERNAL_SECRET) => {
    const req = h.http.post('/internal/principal');
    return (secret === null ? req : req.set('x-platform-internal-secret', secret)).send(body as object);
  };

  it('needs the internal secret (401 otherwise)', async () => {
    const body = { credential: { kind: 'session', userId: user.userId, sessionId: user.sessionId } };
    expect((await ask(body, null)).status).toBe(401);
    expect((await ask(body, 'wrong')).status).toBe(401);
    expect((await ask(body, `${INTERNAL_SECRET}x`)).status).toBe(401);
    expect((await ask(body)).status).toBe(200);
  });

  it('answers a session with the principal, its expiry and the cache TTL', async () => {
    const res = await ask({
      credential: { kind: 'session', userId: user.userId, sessionId: user.sessionId },
      orgSlug: 'intern',
    });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      principal: expect.objectContaining({
        credential: { kind: 'session', id: user.sessionId },
        session: expect.objectContaining({
          id: user.sessionId,
          org: expect.objectContaining({ slug: 'intern' }),
        }),
      }),
      expiresAt: new Date(h.clock.now().getTime() + 2_592_000_000).toISOString(),
      cacheTtlSeconds: 20,
    });
    expect(res.body.principal.run.correlationId).toBe(res.headers['x-request-id']);
  });

  it('refuses a session whose user id does not match, an unknown session, and garbage (401 / 400)', async () => {
    expect(
      (await ask({ credential: { kind: 'session', userId: 'someone-else', sessionId: user.sessionId } }))
        .status,
    ).toBe(401);
    expect(
      (await ask({ credential: { kind: 'session', userId: user.userId, sessionId: 'nope' } })).status,
    ).toBe(401);
    expect((await ask({ credential: { kind: 'api_key', key: 'wak_unknown' } })).status).toBe(401);
    expect((await ask({ credential: { kind: 'access_token', token: 'at:unknown' } })).status).toBe(401);
    const bad = await ask({ credential: { kind: 'password', value: 'x' } });
    expect(bad.status).toBe(400);
  });

  it('answers access tokens and API keys, with the credential’s own expiry', async () => {
    const expiresAt = new Date(h.clock.now().getTime() + 3_600_000).toISOString();
    const token = (await h.call(user, 'post', '/v2/user/accessTokens', { name: 't', expiresAt })).body.token;
    const tokenAnswer = await ask({ credential: { kind: 'access_token', token } });
    expect(tokenAnswer.status).toBe(200);
    expect(tokenAnswer.body.expiresAt).toBe(expiresAt);
    expect(tokenAnswer.body.principal.user.id).toBe(user.userId);

    const key = (
      await h.call(user, 'post', '/v2/orgs/intern/apikeys', { name: 'k', permissions: ['models:read'] })
    ).body.apiKey;
    const keyAnswer = await ask({ credential: { kind: 'api_key', key } });
    expect(keyAnswer.status).toBe(200);
    expect(keyAnswer.body.expiresAt).toBeNull();
    expect(keyAnswer.body.principal).toMatchObject({
      credential: { kind: 'org_api_key' },
      user: { id: null },
    });
  });
});

describe('GET /internal/orgs/:orgSlug (operators: does the organization exist?)', () => {
  let h: AuthHarness;
  beforeAll(async () => {
    h = await startAuth();
    const owner = await h.newUser();
    expect((await h.call(owner, 'post', '/v2/orgs', { slug: 'known-org', name: 'Known' })).status).toBe(201);
  });
  afterAll(() => h.stop());

  const ask = (slug: string, secret: string | null = INTERNAL_SECRET) => {
    const req = h.http.get(`/internal/orgs/${slug}`);
    return secret === null ? req : req.set('x-platform-internal-secret', secret);
  };

  it('answers the organization, 404 OrgNotFound for an unknown slug, and 401 without the secret', async () => {
    const known = await ask('known-org');
    expect(known.status).toBe(200);
    expect(known.body).toEqual({
      id: expect.any(String),
      slug: 'known-org',
      name: 'Known',
      createdAt: expect.any(String),
    });
    const ghost = await ask('ghost-org');
    expect(ghost.status).toBe(404);
    expect(ghost.body.error).toBe('OrgNotFound');
    expect((await ask('known-org', null)).status).toBe(401);
    expect((await ask('known-org', 'wrong')).status).toBe(401);
  });
});
