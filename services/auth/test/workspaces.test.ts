import { Subjects, WORKSPACE_API_KEY_PATTERN } from '@platform/contracts';
import { waitFor } from '@platform/testkit';
import { sha256Hex } from '../src/domain/secrets';
import { type AuthHarness, recordEvents, startAuth, type UserActor } from './helpers';

describe('workspaces and workspace API keys (spec 2.7)', () => {
  let h: AuthHarness;
  let owner: UserActor;
  let workspaceId: string;
  let otherWorkspaceId: string;
  beforeAll(async () => {
    h = await startAuth();
    owner = await h.newUser();
    await h.call(owner, 'post', '/v2/orgs', { slug: 'ws-org', name: 'WS Org' });
    workspaceId = (await h.call(owner, 'post', '/v2/workspaces', { name: 'Main' })).body.id;
    otherWorkspaceId = (await h.call(owner, 'post', '/v2/workspaces', { name: 'Other' })).body.id;
  });
  afterAll(() => h.stop());

  const createKey = (rules: unknown, extra: Record<string, unknown> = {}, ws = workspaceId) =>
    h.call(owner, 'post', `/v2/workspaces/${ws}/security/apikeys`, { name: 'robot', rules, ...extra });

  it('a workspace belongs to the creator’s active organization; the creator is its owner', async () => {
    const res = await h.call(owner, 'get', `/v2/workspaces/${workspaceId}`);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      id: workspaceId,
      name: 'Main',
      orgSlug: 'ws-org',
      role: 'owner',
      createdBy: owner.userId,
    });
    const members = await h.call(owner, 'get', `/v2/workspaces/${workspaceId}/members`);
    expect(members.body).toEqual([{ userId: owner.userId, role: 'owner', joinedAt: expect.any(String) }]);
  });

  it('without an active organization a workspace cannot be created (400 NO_ORG_CONTEXT)', async () => {
    const loner = await h.newUser();
    const res = await h.call(loner, 'post', '/v2/workspaces', { name: 'Nowhere' });
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ error: 'NO_ORG_CONTEXT' });
  });

  it('an unknown workspace is 404; a bad name is 400', async () => {
    expect((await h.call(owner, 'get', '/v2/workspaces/nope')).status).toBe(404);
    expect((await h.call(owner, 'post', '/v2/workspaces', { name: '' })).status).toBe(400);
  });

  it('creates a key: {apiKey, name, rules (action arrays, service-set conditions), subjectId, subjectType}', async () => {
    const res = await createKey([
      { action: 'read', subject: 'workspace' },
      { action: ['read', 'create'], subject: 'page' },
    ]);
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({
      apiKey: expect.stringMatching(WORKSPACE_API_KEY_PATTERN),
      name: 'robot',
      rules: [
        { action: ['read'], subject: 'workspace', conditions: { id: workspaceId } },
        { action: ['read', 'create'], subject: 'page', conditions: { workspaceId } },
      ],
      subjectId: workspaceId,
      subjectType: 'workspaces',
    });
    const stored = await h.service.context.collections.workspaceApiKeys.findOne({ _id: res.body._id });
    expect(stored!.keyHash).toBe(sha256Hex(res.body.apiKey));
    expect(JSON.stringify(stored)).not.toContain(res.body.apiKey);
  });

  it('a key grants exactly its rules: read its own workspace and nothing else', async () => {
    const { body } = await createKey([{ action: 'read', subject: 'workspace' }]);
    const key = h.apiKey(body.apiKey);
    expect((await h.call(key, 'get', `/v2/workspaces/${workspaceId}`)).status).toBe(200);
    expect((await h.call(key, 'get', `/v2/workspaces/${otherWorkspaceId}`)).status).toBe(403);
    expect((await h.call(key, 'patch', `/v2/workspaces/${workspaceId}`, { name: 'renamed' })).status).toBe(
      403,
    );
    expect((await h.call(key, 'get', `/v2/workspaces/${workspaceId}/members`)).status).toBe(403);
    expect((await h.call(key, 'get', `/v2/workspaces/${workspaceId}/security/apikeys`)).status).toBe(403);
    expect((await h.call(key, 'get', '/v2/orgs/ws-org')).status).toBe(403);
    expect((await h.call(key, 'get', '/v2/me')).status).toBe(403);
    expect(
      (await h.call(key, 'post', '/v2/user/accessTokens', { name: 'x', expiresAt: '2030-01-01T00:00:00Z' }))
        .status,
    ).toBe(403);
    const listed = await h.call(key, 'get', '/v2/workspaces');
    expect(listed.body.map((w: { id: string }) => w.id)).toEqual([workspaceId]);
    // Its principal carries no user, no organization and no permission: only its rules.
    const { principal } = await h.service.context.introspection.resolve(key.credential, null, 'r');
    expect(principal).toMatchObject({
      credential: { kind: 'workspace_api_key', workspaceId, rules: body.rules },
      user: { id: null },
      session: { id: null, org: null },
      run: { permissions: {} },
    });
  });

  it('accepts the plural subject names clients send, and stores and answers the singular ones', async () => {
    const res = await createKey([
      { action: ['read', 'update'], subject: 'workspaces' },
      { action: 'read', subject: 'pages' },
      { action: 'read', subject: 'files' },
      { action: 'read', subject: 'apps' },
      { action: 'read', subject: 'events' },
      { action: 'manage', subject: 'automations' },
    ]);
    expect(res.status).toBe(201);
    const subjects = ['workspace', 'page', 'file', 'app', 'event', 'automation'];
    expect(res.body.rules.map((r: { subject: string }) => r.subject)).toEqual(subjects);
    const listed = await h.call(owner, 'get', `/v2/workspaces/${workspaceId}/security/apikeys`);
    const stored = listed.body.find((k: { _id: string }) => k._id === res.body._id);
    expect(stored.rules.map((r: { subject: string }) => r.subject)).toEqual(subjects);
    // the plural rule grants what the singular one does
    const key = h.apiKey(res.body.apiKey);
    expect((await h.call(key, 'patch', `/v2/workspaces/${workspaceId}`, { name: 'Main' })).status).toBe(200);
    expect((await createKey([{ action: 'read', subject: 'widgets' }])).status).toBe(400);
  });

  it('a key with update rights may rename, and one with member rights may read members', async () => {
    const { body } = await createKey([
      { action: ['read', 'update'], subject: 'workspace' },
      { action: 'read', subject: 'member' },
    ]);
    const key = h.apiKey(body.apiKey);
    expect((await h.call(key, 'patch', `/v2/workspaces/${workspaceId}`, { name: 'Main' })).status).toBe(200);
    expect((await h.call(key, 'get', `/v2/workspaces/${workspaceId}/members`)).status).toBe(200);
    expect((await h.call(key, 'delete', `/v2/workspaces/${workspaceId}`)).status).toBe(403);
  });

  it('keys never mint keys', async () => {
    const { body } = await createKey([{ action: 'manage', subject: 'apikey' }]);
    const res = await h.call(
      h.apiKey(body.apiKey),
      'post',
      `/v2/workspaces/${workspaceId}/security/apikeys`,
      {
        name: 'child',
        rules: [{ action: 'read', subject: 'workspace' }],
      },
    );
    expect(res.status).toBe(403);
  });

  it.each([
    [[], 'rules'],
    [[{ action: 'fly', subject: 'workspace' }], 'rules.0.action'],
    [[{ action: 'read', subject: 'galaxy' }], 'rules.0.subject'],
    [[{ action: 'read', subject: 'workspace', conditions: { id: 'elsewhere' } }], 'rules.0.conditions'],
  ])('refuses rules %j with 400 naming %s', async (rules, field) => {
    const res = await createKey(rules);
    expect(res.status).toBe(400);
    expect(res.body.details.issues.map((i: { field: string }) => i.field)).toContain(field);
  });

  it('lists keys without secrets; revokes (204 → 401) and publishes the credential hash', async () => {
    const { body } = await createKey([{ action: 'read', subject: 'workspace' }]);
    const listed = await h.call(owner, 'get', `/v2/workspaces/${workspaceId}/security/apikeys`);
    expect(listed.status).toBe(200);
    for (const k of listed.body) expect(k.apiKey).toBeUndefined();
    expect(listed.body.map((k: { _id: string }) => k._id)).toContain(body._id);

    const events = recordEvents(h.bus, [Subjects.credentialRevoked]);
    expect(
      (await h.call(owner, 'delete', `/v2/workspaces/${workspaceId}/security/apikeys/${body._id}`)).status,
    ).toBe(204);
    expect((await h.call(h.apiKey(body.apiKey), 'get', `/v2/workspaces/${workspaceId}`)).status).toBe(401);
    await waitFor(() => events.seen.length === 1, { what: 'revocation event' });
    expect(events.seen[0]!.payload).toMatchObject({
      kind: 'workspace_api_key',
      id: body._id,
      credentialHash: sha256Hex(body.apiKey),
    });
    events.stop();
  });

  it('expires when its expiresAt passes', async () => {
    const expiresAt = new Date(h.clock.now().getTime() + 3_600_000).toISOString();
    const { body } = await createKey([{ action: 'read', subject: 'workspace' }], { expiresAt });
    expect(body.expiresAt).toBe(expiresAt);
    expect((await h.call(h.apiKey(body.apiKey), 'get', `/v2/workspaces/${workspaceId}`)).status).toBe(200);
    h.clock.advance(3_600_000 + 1);
    expect((await h.call(h.apiKey(body.apiKey), 'get', `/v2/workspaces/${workspaceId}`)).status).toBe(401);
    const past = await createKey([{ action: 'read', subject: 'workspace' }], {
      expiresAt: '2001-01-01T00:00:00Z',
    });
    expect(past.status).toBe(400);
  });

  it('deleting a workspace revokes its keys', async () => {
    const ws = (await h.call(owner, 'post', '/v2/workspaces', { name: 'Doomed' })).body.id;
    const { body } = await createKey([{ action: 'read', subject: 'workspace' }], {}, ws);
    expect((await h.call(owner, 'delete', `/v2/workspaces/${ws}`)).status).toBe(204);
    expect((await h.call(h.apiKey(body.apiKey), 'get', '/v2/workspaces')).status).toBe(401);
    expect((await h.call(owner, 'get', `/v2/workspaces/${ws}`)).status).toBe(404);
  });

  it('workspace members must belong to the organization; the last workspace owner stays', async () => {
    const stranger = await h.newUser();
    const res = await h.call(owner, 'put', `/v2/workspaces/${workspaceId}/members/${stranger.userId}`, {
      role: 'viewer',
    });
    expect(res.status).toBe(400);
    expect(
      (await h.call(owner, 'delete', `/v2/workspaces/${workspaceId}/members/${owner.userId}`)).status,
    ).toBe(409);
    expect(
      (await h.call(owner, 'put', `/v2/workspaces/${workspaceId}/members/${owner.userId}`, { role: 'admin' }))
        .status,
    ).toBe(409);
  });

  it('leaving the organization removes the user’s workspace roles there', async () => {
    const user = await h.newUser();
    await h.call(owner, 'post', '/v2/orgs/ws-org/members', { userId: user.userId, role: 'member' });
    await h.call(owner, 'put', `/v2/workspaces/${workspaceId}/members/${user.userId}`, { role: 'editor' });
    expect((await h.call(user, 'get', `/v2/workspaces/${workspaceId}`)).status).toBe(200);
    expect((await h.call(user, 'delete', `/v2/orgs/ws-org/members/${user.userId}`)).status).toBe(204);
    const members = (await h.call(owner, 'get', `/v2/workspaces/${workspaceId}/members`)).body;
    expect(members.map((m: { userId: string }) => m.userId)).not.toContain(user.userId);
    expect((await h.call(user, 'get', `/v2/workspaces/${workspaceId}`)).status).toBe(403);
  });
});
