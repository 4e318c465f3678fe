import { hasPermission, ORG_API_KEY_PATTERN, Subjects } from '@platform/contracts';
import { waitFor } from '@platform/testkit';
import { sha256Hex } from '../src/domain/secrets';
import { type AuthHarness, recordEvents, startAuth, type UserActor } from './helpers';

describe('organization API keys (spec 2.7, 5.1, 5.2 rule 1)', () => {
  let h: AuthHarness;
  let owner: UserActor;
  beforeAll(async () => {
    h = await startAuth();
    owner = await h.newUser();
    await h.call(owner, 'post', '/v2/orgs', { slug: 'keys-org', name: 'Keys' });
    h.clock.advance(1000); // keys-org stays the owner's first membership
    await h.call(owner, 'post', '/v2/orgs', { slug: 'other-org', name: 'Other' });
  });
  afterAll(() => h.stop());

  const create = (body: Record<string, unknown>, org = 'keys-org', as: UserActor = owner) =>
    h.call(as, 'post', `/v2/orgs/${org}/apikeys`, { name: 'svc', ...body });

  it('returns iak_{orgSlug}_{uuid} once and stores only its hash', async () => {
    const res = await create({ permissions: ['models:read'], scopes: ['batch'] });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({
      _id: expect.any(String),
      apiKey: expect.stringMatching(ORG_API_KEY_PATTERN),
      name: 'svc',
      orgSlug: 'keys-org',
      permissions: ['models:read'],
      scopes: ['batch'],
      projectId: null,
      expiresAt: null,
    });
    expect(res.body.apiKey.startsWith('iak_keys-org_')).toBe(true);
    const stored = await h.service.context.collections.orgApiKeys.findOne({ _id: res.body._id });
    expect(stored!.keyHash).toBe(sha256Hex(res.body.apiKey));
    expect(JSON.stringify(stored)).not.toContain(res.body.apiKey);
    const listed = await h.call(owner, 'get', '/v2/orgs/keys-org/apikeys');
    expect(listed.body.find((k: { _id: string }) => k._id === res.body._id).apiKey).toBeUndefined();
  });

  it('its principal has no user; its organization and permissions come from the stored record', async () => {
    const { body } = await create({ permissions: ['models:read'], scopes: ['batch'] });
    const { principal, expiresAt } = await h.service.context.introspection.resolve(
      h.apiKey(body.apiKey).credential,
      null,
      'r',
    );
    expect(expiresAt).toBeNull();
    expect(principal).toMatchObject({
      credential: { kind: 'org_api_key', id: body._id, projectId: null },
      user: { id: null },
      session: {
        id: null,
        org: { slug: 'keys-org', role: { slug: 'api-key', permissions: ['models:read'], scopes: ['batch'] } },
      },
      run: { permissions: { llm: { models: { read: true } } }, scopes: ['batch'] },
    });
    expect(hasPermission(principal, 'models:read')).toBe(true);
    expect(hasPermission(principal, 'members:read')).toBe(false);
  });

  it('the slug inside the key is informative only: a key whose text names another org still acts in its own', async () => {
    const { body } = await create({ permissions: ['members:read'] });
    const forged = body.apiKey.replace('iak_keys-org_', 'iak_other-org_');
    expect((await h.call(h.apiKey(forged), 'get', '/v2/orgs/other-org/members')).status).toBe(401);
    const key = h.apiKey(body.apiKey);
    expect((await h.call(key, 'get', '/v2/orgs/keys-org/members')).status).toBe(200);
    expect((await h.call(key, 'get', '/v2/orgs/other-org/members')).status).toBe(403);
    const { principal } = await h.service.context.introspection.resolve(key.credential, 'other-org', 'r');
    expect(principal.session.org).toBeNull();
    expect(principal.run.permissions).toEqual({});
  });

  it('a key holds exactly its permissions on organization routes', async () => {
    const { body } = await create({ permissions: ['members:read'] });
    const key = h.apiKey(body.apiKey);
    expect((await h.call(key, 'get', '/v2/orgs/keys-org')).status).toBe(200);
    expect((await h.call(key, 'get', '/v2/orgs/keys-org/roles')).status).toBe(403);
    expect((await h.call(key, 'get', '/v2/me')).status).toBe(403);
    expect(
      (await h.call(key, 'post', '/v2/orgs/keys-org/apikeys', { name: 'child', permissions: [] })).status,
    ).toBe(403);
  });

  it('a project-restricted key is refused outside its project', async () => {
    const { body } = await create({ permissions: ['models:read', 'members:read'], projectId: 'proj-a' });
    expect(body.projectId).toBe('proj-a');
    const key = h.apiKey(body.apiKey);
    const res = await h.call(key, 'get', '/v2/orgs/keys-org/members');
    expect(res.status).toBe(403);
    expect(res.body.error).toBe('ProjectRestricted');
    const { principal } = await h.service.context.introspection.resolve(key.credential, null, 'r');
    expect(principal.credential.projectId).toBe('proj-a');
    expect(hasPermission(principal, 'models:read')).toBe(false);
    expect(hasPermission(principal, 'models:read', { projectId: 'proj-b' })).toBe(false);
    expect(hasPermission(principal, 'models:read', { projectId: 'proj-a' })).toBe(true);
  });

  it('only roles with apikeys:manage create keys, and never with more than they hold', async () => {
    const member = await h.newUser();
    const keyAdmin = await h.newUser();
    await h.call(owner, 'post', '/v2/orgs/keys-org/members', { userId: member.userId, role: 'member' });
    await h.call(owner, 'put', '/v2/orgs/keys-org/roles/key-admin', {
      permissions: ['apikeys:read', 'apikeys:manage', 'models:read'],
    });
    await h.call(owner, 'post', '/v2/orgs/keys-org/members', { userId: keyAdmin.userId, role: 'key-admin' });
    expect((await create({ permissions: ['models:read'] }, 'keys-org', member)).status).toBe(403);
    expect((await create({ permissions: ['models:read'] }, 'keys-org', keyAdmin)).status).toBe(201);
    const escalate = await create({ permissions: ['members:manage'] }, 'keys-org', keyAdmin);
    expect(escalate.status).toBe(403);
    expect(escalate.body.details.permissions).toEqual(['members:manage']);
  });

  it.each([
    [{ permissions: ['models:teleport'] }, 'permissions.0'],
    [{ permissions: ['models:read'], projectId: 'has space' }, 'projectId'],
    [{ permissions: ['models:read'], expiresAt: '2001-01-01T00:00:00Z' }, 'expiresAt'],
    [{ permissions: 'models:read' }, 'permissions'],
  ])('refuses %j with 400 naming %s', async (body, field) => {
    const res = await create(body);
    expect(res.status).toBe(400);
    expect(res.body.details.issues.map((i: { field: string }) => i.field)).toContain(field);
  });

  it('revokes: 204, then 401, and publishes the credential hash', async () => {
    const { body } = await create({ permissions: ['members:read'] });
    const events = recordEvents(h.bus, [Subjects.credentialRevoked]);
    expect((await h.call(owner, 'delete', `/v2/orgs/keys-org/apikeys/${body._id}`)).status).toBe(204);
    expect((await h.call(h.apiKey(body.apiKey), 'get', '/v2/orgs/keys-org')).status).toBe(401);
    await waitFor(() => events.seen.length === 1, { what: 'revocation event' });
    expect(events.seen[0]!.payload).toMatchObject({
      kind: 'org_api_key',
      id: body._id,
      credentialHash: sha256Hex(body.apiKey),
    });
    expect((await h.call(owner, 'delete', `/v2/orgs/keys-org/apikeys/${body._id}`)).status).toBe(404);
    events.stop();
  });

  it('expires at its expiresAt', async () => {
    const expiresAt = new Date(h.clock.now().getTime() + 60_000).toISOString();
    const { body } = await create({ permissions: ['members:read'], expiresAt });
    const key = h.apiKey(body.apiKey);
    expect((await h.call(key, 'get', '/v2/orgs/keys-org')).status).toBe(200);
    h.clock.advance(60_001);
    expect((await h.call(key, 'get', '/v2/orgs/keys-org')).status).toBe(401);
  });

  it('a key with workspaces:manage administers the organization’s workspaces', async () => {
    const ws = (await h.call(owner, 'post', '/v2/workspaces', { name: 'Keyed' })).body.id;
    const { body } = await create({ permissions: ['workspaces:manage'] });
    const key = h.apiKey(body.apiKey);
    expect((await h.call(key, 'get', `/v2/workspaces/${ws}`)).status).toBe(200);
    expect((await h.call(key, 'get', '/v2/workspaces')).body.map((w: { id: string }) => w.id)).toContain(ws);
    const plain = h.apiKey((await create({ permissions: ['members:read'] })).body.apiKey);
    expect((await h.call(plain, 'get', `/v2/workspaces/${ws}`)).status).toBe(403);
  });
});
