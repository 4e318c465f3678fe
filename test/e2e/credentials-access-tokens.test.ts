import { ManualClock } from '@platform/kernel';
import { waitFor } from '@platform/testkit';
import { callJson, startTestPlatform, type TestPlatform } from '../harness';

/** User access tokens as a client uses them: through the edge, as `Authorization: Bearer at:...`. */

interface Reply {
  status: number;
  // biome-ignore lint/suspicious/noExplicitAny: asserted field by field
  body: any;
}

function client(p: TestPlatform) {
  return (method: string, path: string, bearer?: string, body?: unknown): Promise<Reply> =>
    callJson(`${p.baseUrl}${path}`, method, { bearer, body });
}

describe('user access tokens through the edge', () => {
  let p: TestPlatform;
  let api: ReturnType<typeof client>;
  let session: string;
  let userId: string;
  const clock = new ManualClock('2025-05-01T00:00:00Z');
  const inHours = (h: number) => new Date(clock.now().getTime() + h * 3_600_000).toISOString();

  beforeAll(async () => {
    p = await startTestPlatform({ clock });
    api = client(p);
    const login = await api('POST', '/v2/login/anonymous');
    session = login.body.token;
    userId = login.body.userId;
  });
  afterAll(() => p.stop());

  it('a session creates a token; the token works as Bearer where a session does', async () => {
    const created = await api('POST', '/v2/user/accessTokens', session, {
      name: 'ci',
      expiresAt: inHours(24),
    });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({
      name: 'ci',
      userId,
      token: expect.stringMatching(/^at:/),
      _id: expect.any(String),
    });
    const me = await api('GET', '/v2/me', created.body.token);
    expect(me.status).toBe(200);
    expect(me.body).toMatchObject({ id: userId, credential: { kind: 'access_token' } });
    const list = await api('GET', '/v2/user/accessTokens', session);
    expect(list.body.some((t: { token?: string }) => t.token)).toBe(false);
  });

  it('used in the wrong place: an access token cannot create or list access tokens (403)', async () => {
    const { body } = await api('POST', '/v2/user/accessTokens', session, {
      name: 'x',
      expiresAt: inHours(24),
    });
    expect(
      (await api('POST', '/v2/user/accessTokens', body.token, { name: 'y', expiresAt: inHours(24) })).status,
    ).toBe(403);
    expect((await api('GET', '/v2/user/accessTokens', body.token)).status).toBe(403);
  });

  it('a past or malformed expiresAt is 400 with details', async () => {
    const past = await api('POST', '/v2/user/accessTokens', session, {
      name: 'x',
      expiresAt: '2001-01-01T00:00:00Z',
    });
    expect(past.status).toBe(400);
    expect(past.body.details.issues[0]).toMatchObject({ field: 'expiresAt' });
    expect(
      (await api('POST', '/v2/user/accessTokens', session, { name: 'x', expiresAt: 'soon' })).status,
    ).toBe(400);
  });

  it('revocation is enforced by the edge (401), also for an answer it had cached', async () => {
    const { body } = await api('POST', '/v2/user/accessTokens', session, {
      name: 'gone',
      expiresAt: inHours(24),
    });
    expect((await api('GET', '/v2/me', body.token)).status).toBe(200); // now cached at the edge
    expect((await api('DELETE', `/v2/user/accessTokens/${body._id}`, session)).status).toBe(204);
    await waitFor(async () => (await api('GET', '/v2/me', body.token)).status === 401, {
      timeoutMs: 10_000, // the change reaches the edge by an event: a loaded machine may take seconds
      intervalMs: 100,
      what: 'the revoked token to be refused',
    });
  });

  it('expiry is enforced by the edge (401) once expiresAt passes', async () => {
    const { body } = await api('POST', '/v2/user/accessTokens', session, {
      name: 'short',
      expiresAt: inHours(1),
    });
    expect((await api('GET', '/v2/me', body.token)).status).toBe(200);
    clock.advance(3_600_000 + 1000);
    expect((await api('GET', '/v2/me', body.token)).status).toBe(401);
  });

  it('an unknown token is 401', async () => {
    expect((await api('GET', '/v2/me', `at:${'x'.repeat(43)}`)).status).toBe(401);
  });
});
