import { ManualClock } from '@platform/kernel';
import { waitFor } from '@platform/testkit';
import { callJson, startTestPlatform, type TestPlatform } from '../harness';

/** Workspace and organization API keys as clients send them: `x-platform-api-key`, through the edge. */

interface Reply {
  status: number;
  // biome-ignore lint/suspicious/noExplicitAny: asserted field by field
  body: any;
}
type Credential = { bearer: string } | { apiKey: string } | null;

function client(p: TestPlatform) {
  return (method: string, path: string, as: Credential, body?: unknown): Promise<Reply> =>
    callJson(`${p.baseUrl}${path}`, method, {
      bearer: as && 'bearer' in as ? as.bearer : undefined,
      apiKey: as && 'apiKey' in as ? as.apiKey : undefined,
      body,
    });
}

describe('API keys through the edge', () => {
  let p: TestPlatform;
  let api: ReturnType<typeof client>;
  let owner: Credential;
  let ws: string;
  let otherWs: string;
  const clock = new ManualClock('2025-05-01T00:00:00Z');

  beforeAll(async () => {
    p = await startTestPlatform({ clock });
    api = client(p);
    owner = { bearer: (await api('POST', '/v2/login/anonymous', null)).body.token };
    expect((await api('POST', '/v2/orgs', owner, { slug: 'keyco', name: 'KeyCo' })).status).toBe(201);
    ws = (await api('POST', '/v2/workspaces', owner, { name: 'Main' })).body.id;
    otherWs = (await api('POST', '/v2/workspaces', owner, { name: 'Other' })).body.id;
  });
  afterAll(() => p.stop());

  /** an anonymous person made a member of keyco with `role`: their session and an `at:` token of theirs */
  const person = async (role: string) => {
    const user = (await api('POST', '/v2/login/anonymous', null)).body;
    expect((await api('POST', '/v2/orgs/keyco/members', owner, { userId: user.userId, role })).status).toBe(
      201,
    );
    const expiresAt = new Date(clock.now().getTime() + 86_400_000).toISOString();
    const made = await api(
      'POST',
      '/v2/user/accessTokens',
      { bearer: user.token },
      { name: 'script', expiresAt },
    );
    expect(made.status).toBe(201);
    return {
      userId: user.userId as string,
      session: { bearer: user.token },
      token: { bearer: made.body.token },
    };
  };

  describe('workspace API keys', () => {
    const mint = async (rules: unknown, extra: Record<string, unknown> = {}) => {
      const res = await api('POST', `/v2/workspaces/${ws}/security/apikeys`, owner, {
        name: 'bot',
        rules,
        ...extra,
      });
      expect(res.status).toBe(201);
      return res.body as {
        apiKey: string;
        _id: string;
        rules: unknown[];
        subjectId: string;
        subjectType: string;
      };
    };

    it('a key with {read, workspace} reads its own workspace and nothing else', async () => {
      const key = await mint([{ action: 'read', subject: 'workspace' }]);
      expect(key).toMatchObject({
        subjectId: ws,
        subjectType: 'workspaces',
        rules: [{ action: ['read'], subject: 'workspace', conditions: { id: ws } }],
      });
      const as = { apiKey: key.apiKey };
      expect((await api('GET', `/v2/workspaces/${ws}`, as)).status).toBe(200);
      expect((await api('GET', `/v2/workspaces/${otherWs}`, as)).status).toBe(403);
      expect((await api('PATCH', `/v2/workspaces/${ws}`, as, { name: 'x' })).status).toBe(403);
      expect((await api('GET', '/v2/orgs/keyco', as)).status).toBe(403);
      expect((await api('GET', '/v2/me', as)).status).toBe(403);
      // no organization, no permission: the quota endpoint refuses it (the edge checks the org first)
      expect([400, 403]).toContain((await api('GET', '/llm/v1/quotas/usage', as)).status);
    });

    it('a rule member the service does not know is 400, never dropped (an inverted rule would have granted)', async () => {
      for (const [member, value] of [
        ['inverted', true],
        ['fields', ['name']],
        ['reason', 'read only'],
      ] as const) {
        const res = await api('POST', `/v2/workspaces/${ws}/security/apikeys`, owner, {
          name: 'bot',
          rules: [{ action: 'update', subject: 'workspace', [member]: value }],
        });
        expect([member, res.status, res.body.code]).toEqual([member, 400, 'INVALID_BODY']);
        expect(res.body.message).toContain(member);
      }
      const keys = await api('GET', `/v2/workspaces/${ws}/security/apikeys`, owner);
      expect(
        keys.body.filter((k: { rules: Array<{ action: string[] }> }) =>
          k.rules[0]!.action.includes('update'),
        ),
      ).toEqual([]);
    });

    it('revoked: 401 at the edge', async () => {
      const key = await mint([{ action: 'read', subject: 'workspace' }]);
      expect((await api('GET', `/v2/workspaces/${ws}`, { apiKey: key.apiKey })).status).toBe(200);
      expect((await api('DELETE', `/v2/workspaces/${ws}/security/apikeys/${key._id}`, owner)).status).toBe(
        204,
      );
      await waitFor(
        async () => (await api('GET', `/v2/workspaces/${ws}`, { apiKey: key.apiKey })).status === 401,
        {
          timeoutMs: 10_000, // the change reaches the edge by an event: a loaded machine may take seconds
          intervalMs: 100,
          what: 'the revoked key to be refused',
        },
      );
    });

    it('expired: 401 at the edge', async () => {
      const key = await mint([{ action: 'read', subject: 'workspace' }], {
        expiresAt: new Date(clock.now().getTime() + 60_000).toISOString(),
      });
      expect((await api('GET', `/v2/workspaces/${ws}`, { apiKey: key.apiKey })).status).toBe(200);
      clock.advance(60_001);
      expect((await api('GET', `/v2/workspaces/${ws}`, { apiKey: key.apiKey })).status).toBe(401);
    });

    it('a key or an at: token revokes only keys within its own rights (403 PermissionEscalation); a session, any it may', async () => {
      const manager = await mint([{ action: ['read', 'delete'], subject: 'apikey' }]);
      const strong = await mint([{ action: 'delete', subject: 'workspace' }]);
      const revoke = (key: { _id: string }, as: Credential) =>
        api('DELETE', `/v2/workspaces/${ws}/security/apikeys/${key._id}`, as);

      const refused = await revoke(strong, { apiKey: manager.apiKey });
      expect(refused.status).toBe(403);
      expect(refused.body).toMatchObject({
        error: 'PermissionEscalation',
        status: 403,
        details: { rules: [{ action: 'delete', subject: 'workspace' }] },
      });
      expect(
        (await api('GET', `/v2/workspaces/${ws}/security/apikeys`, owner)).body.map(
          (k: { _id: string }) => k._id,
        ),
      ).toContain(strong._id);
      const weaker = await mint([{ action: 'read', subject: 'apikey' }]);
      expect((await revoke(weaker, { apiKey: manager.apiKey })).status).toBe(204);

      // a workspace admin may revoke keys but not delete the workspace: their access token is held to that
      const admin = await person('member');
      expect(
        (await api('PUT', `/v2/workspaces/${ws}/members/${admin.userId}`, owner, { role: 'admin' })).status,
      ).toBe(201);
      expect((await revoke(strong, admin.token)).body).toMatchObject({
        error: 'PermissionEscalation',
        status: 403,
      });
      expect((await revoke(strong, admin.session)).status).toBe(204);
      expect((await revoke(manager, { apiKey: manager.apiKey })).status).toBe(204);
    });

    it('a key that manages members gives, changes or takes no role holding rights it lacks (403 PermissionEscalation)', async () => {
      const reads = ['workspace', 'page', 'file', 'automation'].map((subject) => ({
        action: 'read',
        subject,
      }));
      const hr = await mint([{ action: 'manage', subject: 'member' }, ...reads]);
      const as = { apiKey: hr.apiKey };
      const someone = await person('member');
      const put = (role: string) =>
        api('PUT', `/v2/workspaces/${ws}/members/${someone.userId}`, as, { role });

      const admin = await put('admin');
      expect(admin.status).toBe(403);
      expect(admin.body).toMatchObject({ error: 'PermissionEscalation', status: 403 });
      expect((await put('viewer')).status).toBe(201);
      // made an admin by the owner, they are neither demoted nor removed by the key
      expect(
        (await api('PUT', `/v2/workspaces/${ws}/members/${someone.userId}`, owner, { role: 'admin' })).status,
      ).toBe(200);
      expect((await put('viewer')).body).toMatchObject({ error: 'PermissionEscalation', status: 403 });
      const removed = await api('DELETE', `/v2/workspaces/${ws}/members/${someone.userId}`, as);
      expect(removed.body).toMatchObject({ error: 'PermissionEscalation', status: 403 });
      const members = await api('GET', `/v2/workspaces/${ws}/members`, owner);
      expect(members.body).toContainEqual(expect.objectContaining({ userId: someone.userId, role: 'admin' }));
    });

    it('only workspace administrators mint keys', async () => {
      const member = (await api('POST', '/v2/login/anonymous', null)).body;
      await api('POST', '/v2/orgs/keyco/members', owner, { userId: member.userId, role: 'member' });
      await api('PUT', `/v2/workspaces/${ws}/members/${member.userId}`, owner, { role: 'editor' });
      const res = await api(
        'POST',
        `/v2/workspaces/${ws}/security/apikeys`,
        { bearer: member.token },
        {
          name: 'nope',
          rules: [{ action: 'read', subject: 'workspace' }],
        },
      );
      expect(res.status).toBe(403);
    });
  });

  describe('organization API keys', () => {
    const mint = async (body: Record<string, unknown>) => {
      const res = await api('POST', '/v2/orgs/keyco/apikeys', owner, { name: 'svc', ...body });
      expect(res.status).toBe(201);
      return res.body as { apiKey: string; _id: string };
    };

    it('iak_ keys act in their organization with exactly their permissions', async () => {
      const key = await mint({ permissions: ['members:read'] });
      expect(key.apiKey).toMatch(/^iak_keyco_[0-9a-f-]{36}$/);
      const as = { apiKey: key.apiKey };
      expect((await api('GET', '/v2/orgs/keyco/members', as)).status).toBe(200);
      expect((await api('GET', '/v2/orgs/keyco/roles', as)).status).toBe(403);
      expect((await api('GET', '/v2/me', as)).status).toBe(403);
    });

    it('are refused as Bearer credentials (they carry no user), with where they go', async () => {
      const key = await mint({ permissions: ['members:read'] });
      const alone = await api('GET', '/v2/orgs/keyco/members', { bearer: key.apiKey });
      expect(alone.status).toBe(401);
      expect(alone.body.message).toMatch(/^Organization API keys go in the x-platform-api-key header/);
    });

    it('a project-restricted key is refused outside its project', async () => {
      const key = await mint({ permissions: ['members:read', 'models:read'], projectId: 'proj-1' });
      expect((await api('GET', '/v2/orgs/keyco/members', { apiKey: key.apiKey })).status).toBe(403);
    });

    it('a key or an at: token revokes only keys within its own permissions (403 PermissionEscalation); a session, any it may', async () => {
      const manager = await mint({ permissions: ['apikeys:manage'] });
      const strong = await mint({ permissions: ['apikeys:manage', 'members:manage'] });
      const revoke = (key: { _id: string }, as: Credential) =>
        api('DELETE', `/v2/orgs/keyco/apikeys/${key._id}`, as);

      const refused = await revoke(strong, { apiKey: manager.apiKey });
      expect(refused.status).toBe(403);
      expect(refused.body).toMatchObject({
        error: 'PermissionEscalation',
        status: 403,
        details: { permissions: ['members:manage'] },
      });
      const listed = await api('GET', '/v2/orgs/keyco/apikeys', owner);
      expect(listed.body.map((k: { _id: string }) => k._id)).toContain(strong._id);
      const same = await mint({ permissions: ['apikeys:manage'] });
      expect((await revoke(same, { apiKey: manager.apiKey })).status).toBe(204);

      // a member whose role manages keys only: their access token is held to it, their session is not
      expect(
        (await api('PUT', '/v2/orgs/keyco/roles/keymaster', owner, { permissions: ['apikeys:manage'] }))
          .status,
      ).toBe(201);
      const keymaster = await person('keymaster');
      expect((await revoke(strong, keymaster.token)).body).toMatchObject({
        error: 'PermissionEscalation',
        status: 403,
      });
      expect((await revoke(strong, keymaster.session)).status).toBe(204);
    });

    it('revoked: 401 at the edge', async () => {
      const key = await mint({ permissions: ['members:read'] });
      expect((await api('GET', '/v2/orgs/keyco/members', { apiKey: key.apiKey })).status).toBe(200);
      expect((await api('DELETE', `/v2/orgs/keyco/apikeys/${key._id}`, owner)).status).toBe(204);
      await waitFor(
        async () => (await api('GET', '/v2/orgs/keyco/members', { apiKey: key.apiKey })).status === 401,
        {
          timeoutMs: 10_000, // the change reaches the edge by an event: a loaded machine may take seconds
          intervalMs: 100,
          what: 'the revoked key to be refused',
        },
      );
    });
  });
});
