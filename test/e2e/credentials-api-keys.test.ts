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
          timeoutMs: 2000,
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

    it('revoked: 401 at the edge', async () => {
      const key = await mint({ permissions: ['members:read'] });
      expect((await api('GET', '/v2/orgs/keyco/members', { apiKey: key.apiKey })).status).toBe(200);
      expect((await api('DELETE', `/v2/orgs/keyco/apikeys/${key._id}`, owner)).status).toBe(204);
      await waitFor(
        async () => (await api('GET', '/v2/orgs/keyco/members', { apiKey: key.apiKey })).status === 401,
        {
          timeoutMs: 2000,
          what: 'the revoked key to be refused',
        },
      );
    });
  });
});
