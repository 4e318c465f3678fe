import { type AuthHarness, type Reply, startAuth, type UserActor } from './helpers';

/**
 * Every organization and workspace route against each built-in organization role and a non-member,
 * then every workspace route against each workspace role. Each row makes its own targets, so a row's
 * outcome never depends on another's.
 */
type OrgActor = 'owner' | 'member' | 'guest' | 'outsider';
type WsActor = 'wsOwner' | 'wsAdmin' | 'wsEditor' | 'wsViewer' | 'noWsRole';

describe('authorization matrix', () => {
  let h: AuthHarness;
  let org: string;
  let workspaceId: string;
  const actors = {} as Record<OrgActor | WsActor, UserActor>;
  let n = 0;
  const fresh = (p: string) => `${p}-${++n}`;

  beforeAll(async () => {
    h = await startAuth();
    for (const name of [
      'owner',
      'member',
      'guest',
      'outsider',
      'wsOwner',
      'wsAdmin',
      'wsEditor',
      'wsViewer',
      'noWsRole',
    ] as const) {
      actors[name] = await h.newUser();
    }
    org = 'matrix-org';
    expect((await h.call(actors.owner, 'post', '/v2/orgs', { slug: org, name: 'Matrix' })).status).toBe(201);
    const add = async (user: UserActor, role: string) =>
      expect(
        (await h.call(actors.owner, 'post', `/v2/orgs/${org}/members`, { userId: user.userId, role })).status,
      ).toBe(201);
    await add(actors.member, 'member');
    await add(actors.guest, 'guest');
    for (const name of ['wsOwner', 'wsAdmin', 'wsEditor', 'wsViewer', 'noWsRole'] as const)
      await add(actors[name], 'member');
    workspaceId = (await h.call(actors.owner, 'post', '/v2/workspaces', { name: 'Matrix WS' })).body.id;
    const wsRole = async (user: UserActor, role: string) =>
      expect(
        (await h.call(actors.owner, 'put', `/v2/workspaces/${workspaceId}/members/${user.userId}`, { role }))
          .status,
      ).toBe(201);
    await wsRole(actors.wsOwner, 'owner');
    await wsRole(actors.wsAdmin, 'admin');
    await wsRole(actors.wsEditor, 'editor');
    await wsRole(actors.wsViewer, 'viewer');
  });
  afterAll(() => h.stop());

  const asOwner = (method: Parameters<AuthHarness['call']>[1], path: string, body?: unknown) =>
    h.call(actors.owner, method, path, body);
  const newOrgMember = async (role = 'guest') => {
    const user = await h.newUser();
    await asOwner('post', `/v2/orgs/${org}/members`, { userId: user.userId, role });
    return user;
  };

  type Row<A extends string> = [string, (actor: UserActor) => Promise<Reply>, Record<A, number>];

  const orgRows: Row<OrgActor>[] = [
    [
      'GET /v2/orgs/:orgSlug',
      (a) => h.call(a, 'get', `/v2/orgs/${org}`),
      { owner: 200, member: 200, guest: 200, outsider: 403 },
    ],
    [
      'GET members',
      (a) => h.call(a, 'get', `/v2/orgs/${org}/members`),
      { owner: 200, member: 200, guest: 403, outsider: 403 },
    ],
    [
      'POST members',
      async (a) =>
        h.call(a, 'post', `/v2/orgs/${org}/members`, { userId: (await h.newUser()).userId, role: 'guest' }),
      { owner: 201, member: 403, guest: 403, outsider: 403 },
    ],
    [
      'DELETE members/:userId',
      async (a) => h.call(a, 'delete', `/v2/orgs/${org}/members/${(await newOrgMember()).userId}`),
      { owner: 204, member: 403, guest: 403, outsider: 403 },
    ],
    [
      'GET roles',
      (a) => h.call(a, 'get', `/v2/orgs/${org}/roles`),
      { owner: 200, member: 200, guest: 403, outsider: 403 },
    ],
    [
      'PUT roles/:role',
      (a) => h.call(a, 'put', `/v2/orgs/${org}/roles/${fresh('role')}`, { permissions: ['models:read'] }),
      { owner: 201, member: 403, guest: 403, outsider: 403 },
    ],
    [
      'DELETE roles/:role',
      async (a) => {
        const role = fresh('role');
        await asOwner('put', `/v2/orgs/${org}/roles/${role}`, { permissions: [] });
        return h.call(a, 'delete', `/v2/orgs/${org}/roles/${role}`);
      },
      { owner: 204, member: 403, guest: 403, outsider: 403 },
    ],
    [
      'GET apikeys',
      (a) => h.call(a, 'get', `/v2/orgs/${org}/apikeys`),
      { owner: 200, member: 403, guest: 403, outsider: 403 },
    ],
    [
      'POST apikeys',
      (a) => h.call(a, 'post', `/v2/orgs/${org}/apikeys`, { name: 'k', permissions: ['models:read'] }),
      { owner: 201, member: 403, guest: 403, outsider: 403 },
    ],
    [
      'DELETE apikeys/:id',
      async (a) => {
        const key = await asOwner('post', `/v2/orgs/${org}/apikeys`, { name: 'k', permissions: [] });
        return h.call(a, 'delete', `/v2/orgs/${org}/apikeys/${key.body._id}`);
      },
      { owner: 204, member: 403, guest: 403, outsider: 403 },
    ],
    [
      'PUT /v2/user/active-org',
      (a) => h.call(a, 'put', '/v2/user/active-org', { orgSlug: org }),
      { owner: 200, member: 200, guest: 200, outsider: 403 },
    ],
    [
      'POST /v2/workspaces (in the active org)',
      (a) => h.call(a, 'post', '/v2/workspaces', { name: fresh('ws') }),
      // the outsider has no organization at all: no context to create in
      { owner: 201, member: 201, guest: 403, outsider: 400 },
    ],
    [
      'GET /v2/workspaces/:id',
      (a) => h.call(a, 'get', `/v2/workspaces/${workspaceId}`),
      { owner: 200, member: 403, guest: 403, outsider: 403 },
    ],
    [
      'PATCH /v2/workspaces/:id',
      (a) => h.call(a, 'patch', `/v2/workspaces/${workspaceId}`, { name: 'Matrix WS' }),
      { owner: 200, member: 403, guest: 403, outsider: 403 },
    ],
    [
      'DELETE /v2/workspaces/:id',
      async (a) => {
        const ws = await asOwner('post', '/v2/workspaces', { name: fresh('ws') });
        return h.call(a, 'delete', `/v2/workspaces/${ws.body.id}`);
      },
      { owner: 204, member: 403, guest: 403, outsider: 403 },
    ],
    [
      'GET workspace members',
      (a) => h.call(a, 'get', `/v2/workspaces/${workspaceId}/members`),
      { owner: 200, member: 403, guest: 403, outsider: 403 },
    ],
    [
      'PUT workspace members/:userId',
      async (a) =>
        h.call(a, 'put', `/v2/workspaces/${workspaceId}/members/${(await newOrgMember()).userId}`, {
          role: 'viewer',
        }),
      { owner: 201, member: 403, guest: 403, outsider: 403 },
    ],
    [
      'DELETE workspace members/:userId',
      async (a) => {
        const user = await newOrgMember();
        await asOwner('put', `/v2/workspaces/${workspaceId}/members/${user.userId}`, { role: 'viewer' });
        return h.call(a, 'delete', `/v2/workspaces/${workspaceId}/members/${user.userId}`);
      },
      { owner: 204, member: 403, guest: 403, outsider: 403 },
    ],
    [
      'GET workspace apikeys',
      (a) => h.call(a, 'get', `/v2/workspaces/${workspaceId}/security/apikeys`),
      { owner: 200, member: 403, guest: 403, outsider: 403 },
    ],
    [
      'POST workspace apikeys',
      (a) =>
        h.call(a, 'post', `/v2/workspaces/${workspaceId}/security/apikeys`, {
          name: 'k',
          rules: [{ action: 'read', subject: 'workspace' }],
        }),
      { owner: 201, member: 403, guest: 403, outsider: 403 },
    ],
    [
      'DELETE workspace apikeys/:id',
      async (a) => {
        const key = await asOwner('post', `/v2/workspaces/${workspaceId}/security/apikeys`, {
          name: 'k',
          rules: [{ action: 'read', subject: 'workspace' }],
        });
        return h.call(a, 'delete', `/v2/workspaces/${workspaceId}/security/apikeys/${key.body._id}`);
      },
      { owner: 204, member: 403, guest: 403, outsider: 403 },
    ],
  ];

  describe.each(orgRows)('%s', (_name, run, expected) => {
    it.each(Object.entries(expected) as Array<[OrgActor, number]>)('as %s → %i', async (actor, status) => {
      const res = await run(actors[actor]);
      expect({ status: res.status, error: res.status >= 400 ? res.body.error : undefined }).toMatchObject({
        status,
      });
      if (status >= 400) expect(res.body).toMatchObject({ status, message: expect.any(String) });
    });
  });

  it('GET /v2/workspaces lists only what each role may read', async () => {
    const ids = async (actor: UserActor) =>
      (await h.call(actor, 'get', '/v2/workspaces')).body.map((w: { id: string }) => w.id);
    expect(await ids(actors.owner)).toContain(workspaceId);
    expect(await ids(actors.wsViewer)).toEqual([workspaceId]);
    expect(await ids(actors.member)).not.toContain(workspaceId);
    expect(await ids(actors.guest)).toEqual([]);
    expect(await ids(actors.outsider)).toEqual([]);
  });

  const wsRows: Row<WsActor>[] = [
    [
      'GET /v2/workspaces/:id',
      (a) => h.call(a, 'get', `/v2/workspaces/${workspaceId}`),
      { wsOwner: 200, wsAdmin: 200, wsEditor: 200, wsViewer: 200, noWsRole: 403 },
    ],
    [
      'PATCH /v2/workspaces/:id',
      (a) => h.call(a, 'patch', `/v2/workspaces/${workspaceId}`, { name: 'Matrix WS' }),
      { wsOwner: 200, wsAdmin: 200, wsEditor: 200, wsViewer: 403, noWsRole: 403 },
    ],
    [
      'GET members',
      (a) => h.call(a, 'get', `/v2/workspaces/${workspaceId}/members`),
      { wsOwner: 200, wsAdmin: 200, wsEditor: 200, wsViewer: 200, noWsRole: 403 },
    ],
    [
      'PUT members/:userId (viewer)',
      async (a) =>
        h.call(a, 'put', `/v2/workspaces/${workspaceId}/members/${(await newOrgMember()).userId}`, {
          role: 'viewer',
        }),
      { wsOwner: 201, wsAdmin: 201, wsEditor: 403, wsViewer: 403, noWsRole: 403 },
    ],
    [
      'PUT members/:userId (owner)',
      async (a) =>
        h.call(a, 'put', `/v2/workspaces/${workspaceId}/members/${(await newOrgMember()).userId}`, {
          role: 'owner',
        }),
      { wsOwner: 201, wsAdmin: 403, wsEditor: 403, wsViewer: 403, noWsRole: 403 },
    ],
    [
      'DELETE members/:userId',
      async (a) => {
        const user = await newOrgMember();
        await asOwner('put', `/v2/workspaces/${workspaceId}/members/${user.userId}`, { role: 'viewer' });
        return h.call(a, 'delete', `/v2/workspaces/${workspaceId}/members/${user.userId}`);
      },
      { wsOwner: 204, wsAdmin: 204, wsEditor: 403, wsViewer: 403, noWsRole: 403 },
    ],
    [
      'GET apikeys',
      (a) => h.call(a, 'get', `/v2/workspaces/${workspaceId}/security/apikeys`),
      { wsOwner: 200, wsAdmin: 200, wsEditor: 403, wsViewer: 403, noWsRole: 403 },
    ],
    [
      'POST apikeys',
      (a) =>
        h.call(a, 'post', `/v2/workspaces/${workspaceId}/security/apikeys`, {
          name: 'k',
          rules: [{ action: ['read', 'update'], subject: 'workspace' }],
        }),
      { wsOwner: 201, wsAdmin: 201, wsEditor: 403, wsViewer: 403, noWsRole: 403 },
    ],
    [
      'DELETE /v2/workspaces/:id',
      async (a) => {
        // A fresh workspace where the actor holds the same workspace role as in the shared one.
        const ws = (await asOwner('post', '/v2/workspaces', { name: fresh('ws') })).body.id;
        const role = (await h.call(actors.owner, 'get', `/v2/workspaces/${workspaceId}/members`)).body.find(
          (m: { userId: string }) => m.userId === a.userId,
        )?.role;
        if (role) await asOwner('put', `/v2/workspaces/${ws}/members/${a.userId}`, { role });
        return h.call(a, 'delete', `/v2/workspaces/${ws}`);
      },
      { wsOwner: 204, wsAdmin: 403, wsEditor: 403, wsViewer: 403, noWsRole: 403 },
    ],
  ];

  describe.each(wsRows)('workspace role: %s', (_name, run, expected) => {
    it.each(Object.entries(expected) as Array<[WsActor, number]>)('as %s → %i', async (actor, status) => {
      expect((await run(actors[actor])).status).toBe(status);
    });
  });

  it('an admin cannot mint a key with rights the admin lacks (deleting the workspace)', async () => {
    const res = await h.call(actors.wsAdmin, 'post', `/v2/workspaces/${workspaceId}/security/apikeys`, {
      name: 'too much',
      rules: [{ action: 'delete', subject: 'workspace' }],
    });
    expect(res.status).toBe(403);
    expect(res.body).toMatchObject({
      error: 'PermissionEscalation',
      details: { rules: [{ action: 'delete', subject: 'workspace' }] },
    });
  });
});
