import { waitFor } from '@platform/testkit';
import { callJson, startTestPlatform, type TestPlatform } from '../harness';

/** Organizations, roles, the active organization and membership changes, through the edge. */

interface Reply {
  status: number;
  // biome-ignore lint/suspicious/noExplicitAny: asserted field by field
  body: any;
}
interface User {
  userId: string;
  token: string;
}

function client(p: TestPlatform) {
  return (method: string, path: string, as: User | null, body?: unknown): Promise<Reply> =>
    callJson(`${p.baseUrl}${path}`, method, { bearer: as?.token, body });
}

const ORG_LIMIT = 3;

describe('organizations through the edge', () => {
  let p: TestPlatform;
  let api: ReturnType<typeof client>;
  const users = {} as Record<'owner' | 'member' | 'guest' | 'outsider', User>;

  beforeAll(async () => {
    p = await startTestPlatform({ env: { ORGANIZATIONS_PER_USER_LIMIT: String(ORG_LIMIT) } });
    api = client(p);
    for (const name of ['owner', 'member', 'guest', 'outsider'] as const) {
      users[name] = (await api('POST', '/v2/login/anonymous', null)).body;
    }
    expect((await api('POST', '/v2/orgs', users.owner, { slug: 'edge-org', name: 'Edge Org' })).status).toBe(
      201,
    );
    await api('POST', '/v2/orgs/edge-org/members', users.owner, {
      userId: users.member.userId,
      role: 'member',
    });
    await api('POST', '/v2/orgs/edge-org/members', users.owner, {
      userId: users.guest.userId,
      role: 'guest',
    });
  });
  afterAll(() => p.stop());

  const matrix: Array<[string, string, string, unknown, Record<keyof typeof users, number>]> = [
    [
      'read the org',
      'GET',
      '/v2/orgs/edge-org',
      undefined,
      { owner: 200, member: 200, guest: 200, outsider: 403 },
    ],
    [
      'list members',
      'GET',
      '/v2/orgs/edge-org/members',
      undefined,
      { owner: 200, member: 200, guest: 403, outsider: 403 },
    ],
    [
      'list roles',
      'GET',
      '/v2/orgs/edge-org/roles',
      undefined,
      { owner: 200, member: 200, guest: 403, outsider: 403 },
    ],
    [
      'list API keys',
      'GET',
      '/v2/orgs/edge-org/apikeys',
      undefined,
      { owner: 200, member: 403, guest: 403, outsider: 403 },
    ],
    [
      'write a custom role',
      'PUT',
      '/v2/orgs/edge-org/roles/readers',
      { permissions: ['models:read'] },
      { owner: 201, member: 403, guest: 403, outsider: 403 },
    ],
  ];

  describe.each(matrix)('%s', (_name, method, path, body, expected) => {
    it.each(Object.entries(expected) as Array<[keyof typeof users, number]>)(
      'as %s → %i',
      async (who, status) => {
        expect((await api(method, path, users[who], body)).status).toBe(status);
      },
    );
  });

  it('takes /v2/orgs/ with a trailing slash as /v2/orgs, as every other route', async () => {
    const listed = await api('GET', '/v2/orgs/', users.owner);
    expect(listed.status).toBe(200);
    expect(listed.body.map((o: { slug: string }) => o.slug)).toContain('edge-org');
    const made = await api('POST', '/v2/orgs/', users.outsider, { slug: 'trailing-org', name: 'Trailing' });
    expect(made.status).toBe(201);
    expect((await api('GET', '/v2/orgs/trailing-org/', users.outsider)).status).toBe(200);
  });

  it('a method the path does not take is 405 with Allow, on the base and gateway roots alike', async () => {
    for (const [url, method, allow] of [
      [`${p.baseUrl}/v2/me`, 'POST', 'GET, HEAD, DELETE'],
      [`${p.baseUrl}/v2/orgs/edge-org`, 'PUT', 'GET, HEAD, PATCH, DELETE'],
      [`${p.gatewayUrl}/v1/quotas/usage`, 'POST', 'GET, HEAD'],
      [`${p.gatewayUrl}/v1/quotas/settings`, 'PUT', 'GET, HEAD, PATCH'],
    ] as const) {
      const res = await fetch(url, { method, headers: { authorization: `Bearer ${users.owner.token}` } });
      expect([method, url, res.status, res.headers.get('allow')]).toEqual([method, url, 405, allow]);
      expect(await res.json()).toMatchObject({ code: 'METHOD_NOT_ALLOWED', status: 405 });
    }
  });

  it('refuses a field it does not know, rather than ignoring what the caller thought it asked for', async () => {
    const expiresAt = new Date(Date.now() + 86_400_000).toISOString();
    for (const [path, body, field] of [
      ['/v2/user/accessTokens', { name: 'ci', expiresAt, scopes: ['models:read'] }, 'scopes'],
      ['/v2/workspaces', { name: 'w', orgSlug: 'other-org' }, 'orgSlug'],
      ['/v2/orgs', { slug: 'extra-org', name: 'Extra', plan: 'enterprise' }, 'plan'],
    ] as const) {
      const res = await api('POST', path, users.owner, body);
      expect([path, res.status, res.body.code]).toEqual([path, 400, 'INVALID_BODY']);
      expect(res.body.message).toContain(field);
    }
    expect((await api('GET', '/v2/orgs/extra-org', users.owner)).status).toBe(404);
  });

  it('refuses a name that is not text (a control character, a lone surrogate), naming the field', async () => {
    const expiresAt = new Date(Date.now() + 86_400_000).toISOString();
    for (const name of ['Acme\u0000', 'line\nbreak', 'half \ud83d pair']) {
      for (const [path, body] of [
        ['/v2/orgs', { slug: 'text-org', name }],
        ['/v2/user/accessTokens', { name, expiresAt }],
        ['/v2/workspaces', { name }],
      ] as const) {
        const res = await api('POST', path, users.owner, body);
        expect([path, res.status, res.body.details?.issues?.[0]?.field]).toEqual([path, 400, 'name']);
      }
    }
    // text of any script, emoji included, is a name
    expect(
      (await api('POST', '/v2/orgs', users.owner, { slug: 'text-org', name: 'Café 東京 😀' })).status,
    ).toBe(201);
  });

  it('refuses a name that shows nothing or reorders the text after it, and a role description that is not text', async () => {
    const expiresAt = new Date(Date.now() + 86_400_000).toISOString();
    // zero-width characters, a Hangul filler, a bidirectional override and isolate (what follows would read reversed)
    for (const name of ['\u200b', '\u3164\u200d', 'Acme\u202e', '\u2066Acme']) {
      for (const [method, path, body] of [
        ['POST', '/v2/orgs', { slug: 'blank-org', name }],
        ['PATCH', '/v2/orgs/edge-org', { name }],
        ['POST', '/v2/user/accessTokens', { name, expiresAt }],
        ['POST', '/v2/workspaces', { name }],
      ] as const) {
        const res = await api(method, path, users.owner, body);
        expect([method, path, res.status, res.body.details?.issues?.[0]?.field]).toEqual([
          method,
          path,
          400,
          'name',
        ]);
      }
    }
    const role = await api('PUT', '/v2/orgs/edge-org/roles/described', users.owner, {
      permissions: [],
      description: 'reads \u202eall',
    });
    expect([role.status, role.body.details?.issues?.[0]?.field]).toEqual([400, 'description']);
    // nothing stored
    expect((await api('GET', '/v2/orgs/blank-org', users.owner)).status).toBe(404);
    expect((await api('GET', '/v2/orgs/edge-org', users.owner)).body.name).toBe('Edge Org');
    const roles = (await api('GET', '/v2/orgs/edge-org/roles', users.owner)).body as Array<{ slug: string }>;
    expect(roles.map((r) => r.slug)).not.toContain('described');
  });

  it('keeps a name in composed form (NFC): an accent typed as its own character is the same name', async () => {
    const made = await api('POST', '/v2/workspaces', users.owner, { name: 'Cafe\u0301' });
    expect([made.status, made.body.name]).toEqual([201, 'Caf\u00e9']);
    expect((await api('GET', `/v2/workspaces/${made.body.id}`, users.owner)).body.name).toBe('Caf\u00e9');
  });

  it('a taken slug is 409', async () => {
    expect((await api('POST', '/v2/orgs', users.outsider, { slug: 'edge-org', name: 'Mine' })).status).toBe(
      409,
    );
  });

  it('an anonymous user creates organizations, at most ORGANIZATIONS_PER_USER_LIMIT even when creations race (409)', async () => {
    const user = (await api('POST', '/v2/login/anonymous', null)).body as User;
    const raced = await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        api('POST', '/v2/orgs', user, { slug: `racer-${i}`, name: 'Racer' }),
      ),
    );
    const made = raced.filter((r) => r.status === 201).length;
    expect(made).toBeLessThanOrEqual(ORG_LIMIT);
    for (const refused of raced.filter((r) => r.status !== 201)) {
      expect(refused.body).toMatchObject({
        error: 'TooManyOrganizations',
        status: 409,
        details: { limit: ORG_LIMIT },
      });
    }
    // a refused creation keeps no organization and no slug: the places left are taken one by one, then no more
    for (let i = made; i < ORG_LIMIT; i++) {
      expect((await api('POST', '/v2/orgs', user, { slug: `settler-${i}`, name: 'Settler' })).status).toBe(
        201,
      );
    }
    const over = await api('POST', '/v2/orgs', user, { slug: 'one-too-many', name: 'Over' });
    expect(over.status).toBe(409);
    expect(over.body).toMatchObject({ error: 'TooManyOrganizations', status: 409 });
    expect((await api('GET', '/v2/orgs', user)).body).toHaveLength(ORG_LIMIT);
    expect((await api('GET', '/v2/orgs/one-too-many', users.outsider)).status).toBe(404);
    // another user is not counted against: it takes a slug the refused racers let go
    const freed = raced.findIndex((r) => r.status !== 201);
    expect(
      (await api('POST', '/v2/orgs', users.member, { slug: `racer-${freed}`, name: 'Mine' })).status,
    ).toBe(201);
  });

  it('active organization: first membership, then the switch, then the path', async () => {
    const user = (await api('POST', '/v2/login/anonymous', null)).body as User;
    await api('POST', '/v2/orgs', user, { slug: 'alpha-co', name: 'Alpha' });
    await api('POST', '/v2/orgs', user, { slug: 'beta-co', name: 'Beta' });
    const first = (await api('GET', '/v2/me', user)).body.activeOrgSlug;
    expect(['alpha-co', 'beta-co']).toContain(first);
    const other = first === 'alpha-co' ? 'beta-co' : 'alpha-co';
    expect((await api('GET', '/v2/me', user)).body.activeOrgSource).toBe('first_membership');

    const switched = await api('PUT', '/v2/user/active-org', user, { orgSlug: other });
    expect(switched.status).toBe(200);
    expect((await api('GET', '/v2/me', user)).body).toMatchObject({
      activeOrgSlug: other,
      activeOrgSource: 'session',
    });
    // A workspace goes to the active organization.
    expect((await api('POST', '/v2/workspaces', user, { name: 'Here' })).body.orgSlug).toBe(other);
    // The path names the organization for its routes, whatever the persisted choice.
    expect((await api('GET', `/v2/orgs/${first}`, user)).body.slug).toBe(first);
    expect((await api('PUT', '/v2/user/active-org', user, { orgSlug: 'edge-org' })).status).toBe(403);
  });

  it('a member removed from the organization loses access at once (edge cache dropped by the event)', async () => {
    const leaver = (await api('POST', '/v2/login/anonymous', null)).body as User;
    await api('POST', '/v2/orgs/edge-org/members', users.owner, { userId: leaver.userId, role: 'member' });
    expect((await api('GET', '/v2/orgs/edge-org/members', leaver)).status).toBe(200);
    expect((await api('DELETE', `/v2/orgs/edge-org/members/${leaver.userId}`, users.owner)).status).toBe(204);
    await waitFor(async () => (await api('GET', '/v2/orgs/edge-org/members', leaver)).status === 403, {
      timeoutMs: 10_000, // the change reaches the edge by an event: a loaded machine may take seconds
      intervalMs: 100,
      what: 'the removed member to be refused',
    });
    expect((await api('GET', '/v2/me', leaver)).body.memberships).toEqual([]);
  });

  it("an at: token is its person's: it loses what their role loses, at once; an organization key is the organization's", async () => {
    const admin = (await api('POST', '/v2/login/anonymous', null)).body as User;
    const role = { description: 'keys', permissions: ['apikeys:manage', 'apikeys:read', 'members:read'] };
    expect((await api('PUT', '/v2/orgs/edge-org/roles/key-admins', users.owner, role)).status).toBe(201);
    await api('POST', '/v2/orgs/edge-org/members', users.owner, { userId: admin.userId, role: 'key-admins' });
    const expiresAt = new Date(Date.now() + 86_400_000).toISOString();
    const made = await api('POST', '/v2/user/accessTokens', admin, { name: 'script', expiresAt });
    const token = { userId: admin.userId, token: made.body.token as string };
    const key = await api('POST', '/v2/orgs/edge-org/apikeys', admin, {
      name: 'ci',
      permissions: ['apikeys:read'],
    });
    expect(key.status).toBe(201);
    const listKeys = async (as: User | { apiKey: string }) =>
      (
        await callJson(`${p.baseUrl}/v2/orgs/edge-org/apikeys`, 'GET', {
          ...('apiKey' in as ? { apiKey: as.apiKey } : { bearer: as.token }),
        })
      ).status;
    expect(await listKeys(token)).toBe(200);

    const demoted = { userId: admin.userId, role: 'guest' };
    expect((await api('POST', '/v2/orgs/edge-org/members', users.owner, demoted)).status).toBe(200);
    await waitFor(async () => (await listKeys(token)) === 403, {
      timeoutMs: 10_000, // the change reaches the edge by an event: a loaded machine may take seconds
      intervalMs: 100,
      what: 'the token to lose it',
    });
    expect((await api('DELETE', `/v2/orgs/edge-org/apikeys/${key.body._id}`, token)).status).toBe(403);
    expect((await api('DELETE', `/v2/orgs/edge-org/members/${admin.userId}`, users.owner)).status).toBe(204);
    for (const as of [token, admin]) {
      expect(await listKeys(as)).toBe(403);
      expect((await api('DELETE', `/v2/orgs/edge-org/apikeys/${key.body._id}`, as)).status).toBe(403);
    }
    // the key its maker made while allowed stays the organization's (spec 2.7: no user identity), listed with its maker
    expect(await listKeys({ apiKey: key.body.apiKey })).toBe(200);
    const listed = await api('GET', '/v2/orgs/edge-org/apikeys', users.owner);
    expect(listed.body).toContainEqual(
      expect.objectContaining({ _id: key.body._id, createdBy: admin.userId }),
    );
  });

  it('a member who is the last owner of a workspace others belong to stays until it is handed over (409 LastOwner)', async () => {
    const [owner, keeper, colleague] = await Promise.all(
      [1, 2, 3].map(async () => (await api('POST', '/v2/login/anonymous', null)).body as User),
    );
    expect((await api('POST', '/v2/orgs', owner, { slug: 'ws-owners', name: 'WS' })).status).toBe(201);
    for (const u of [keeper, colleague])
      await api('POST', '/v2/orgs/ws-owners/members', owner, { userId: u.userId, role: 'member' });
    /** a workspace the owner made and handed to `keeper`, with `others` in it */
    const handedOver = async (name: string, others: Array<[User, string]>) => {
      const id = (await api('POST', '/v2/workspaces', owner, { name })).body.id as string;
      for (const [u, role] of [[keeper, 'owner'] as [User, string], ...others])
        expect((await api('PUT', `/v2/workspaces/${id}/members/${u.userId}`, owner, { role })).status).toBe(
          201,
        );
      expect((await api('DELETE', `/v2/workspaces/${id}/members/${owner.userId}`, owner)).status).toBe(204);
      return id;
    };
    const shared = await handedOver('Shared', [[colleague, 'editor']]);
    const alone = await handedOver('Alone', []);
    type Member = { userId: string; role: string };
    const membersOf = async (id: string) => {
      const members: Member[] = (await api('GET', `/v2/workspaces/${id}/members`, owner)).body;
      return members.map((m) => `${m.userId}:${m.role}`).sort();
    };

    for (const as of [owner, keeper]) {
      const refused = await api('DELETE', `/v2/orgs/ws-owners/members/${keeper.userId}`, as);
      expect(refused.status).toBe(409);
      expect(refused.body).toMatchObject({
        error: 'LastOwner',
        details: { workspaces: [{ id: shared, name: 'Shared', members: 2 }] },
      });
      expect(refused.body.message).toContain('Shared');
    }
    // nothing was taken: the membership and both workspace roles are there
    expect(
      (await api('GET', '/v2/orgs/ws-owners/members', owner)).body.map((m: { userId: string }) => m.userId),
    ).toContain(keeper.userId);
    expect(await membersOf(shared)).toEqual([`${colleague.userId}:editor`, `${keeper.userId}:owner`].sort());
    expect(await membersOf(alone)).toEqual([`${keeper.userId}:owner`]);

    // handed over: the member goes, and with them their workspace roles; the workspace they were alone in stays
    await api('PUT', `/v2/workspaces/${shared}/members/${colleague.userId}`, owner, { role: 'owner' });
    expect((await api('DELETE', `/v2/orgs/ws-owners/members/${keeper.userId}`, owner)).status).toBe(204);
    expect(await membersOf(shared)).toEqual([`${colleague.userId}:owner`]);
    expect(await membersOf(alone)).toEqual([]);
    expect((await api('GET', `/v2/workspaces/${alone}`, owner)).status).toBe(200);
  });
});
