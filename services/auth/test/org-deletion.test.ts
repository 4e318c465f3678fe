import { Subjects } from '@platform/contracts';
import { createEmbeddedStore } from '@platform/store';
import { tempDir, waitFor } from '@platform/testkit';
import type { OrgTombstoneDoc } from '../src/data/collections';
import { type AuthHarness, recordEvents, startAuth, type UserActor } from './helpers';
import { storeWithInsertGate } from './store-gate';

/** PATCH and DELETE /v2/orgs/:orgSlug at the service (test/e2e has them through the edge). */

let n = 0;
const unique = (prefix = 'org') => `${prefix}-${++n}-${Math.random().toString(36).slice(2, 7)}`;
const inADay = (h: AuthHarness) => new Date(h.clock.now().getTime() + 86_400_000).toISOString();

describe('renaming and deleting an organization', () => {
  const folder = tempDir('auth-org-deletion-');
  const gated = storeWithInsertGate(createEmbeddedStore({ dataDir: folder.dir, compactionIntervalMs: 0 }));
  let h: AuthHarness;
  let owner: UserActor;
  let member: UserActor;
  beforeAll(async () => {
    h = await startAuth({ store: gated.store });
    owner = await h.newUser();
    member = await h.newUser();
  });
  afterAll(async () => {
    await h.stop();
    await gated.store.close();
    folder.remove();
  });
  const col = () => h.service.context.collections;

  async function orgWithMember(role = 'member') {
    const slug = unique();
    expect((await h.call(owner, 'post', '/v2/orgs', { slug, name: 'Acme' })).status).toBe(201);
    expect(
      (await h.call(owner, 'post', `/v2/orgs/${slug}/members`, { userId: member.userId, role })).status,
    ).toBe(201);
    return slug;
  }

  it('owners rename it (the slug stays); members and keys may not', async () => {
    const slug = await orgWithMember();
    const key = await h.call(owner, 'post', `/v2/orgs/${slug}/apikeys`, {
      name: 'all',
      permissions: ['members:manage', 'apikeys:manage'],
    });
    const events = recordEvents(h.bus, [Subjects.membershipChanged]);
    const renamed = await h.call(owner, 'patch', `/v2/orgs/${slug}`, { name: '  Acme Robotics ' });
    expect(renamed.status).toBe(200);
    expect(renamed.body).toMatchObject({
      slug,
      name: 'Acme Robotics',
      role: 'owner',
      permissions: expect.any(Array),
    });
    expect((await h.call(member, 'get', `/v2/orgs/${slug}`)).body.name).toBe('Acme Robotics');
    // the principal carries the name: every edge drops the members' cached ones
    expect(events.seen.map((e) => e.payload)).toContainEqual(expect.objectContaining({ orgSlug: slug }));
    events.stop();
    expect((await h.call(member, 'patch', `/v2/orgs/${slug}`, { name: 'Mine' })).body).toMatchObject({
      status: 403,
      error: 'OwnerOnly',
    });
    expect(
      (await h.call(h.apiKey(key.body.apiKey), 'patch', `/v2/orgs/${slug}`, { name: 'Key' })).status,
    ).toBe(403);
    expect((await h.call(owner, 'patch', `/v2/orgs/${slug}`, { name: '' })).status).toBe(400);
    expect((await h.call(owner, 'patch', `/v2/orgs/${slug}`, { name: 'x', slug: 'other' })).status).toBe(400);
    expect((await h.call(owner, 'get', `/v2/orgs/${slug}`)).body.name).toBe('Acme Robotics');
  });

  it('owners delete it: keys revoked, workspaces, members and roles gone, active organization cleared, slug kept', async () => {
    const slug = await orgWithMember('member');
    const key = await h.call(owner, 'post', `/v2/orgs/${slug}/apikeys`, {
      name: 'ci',
      permissions: ['models:read'],
    });
    await h.call(owner, 'put', `/v2/orgs/${slug}/roles/readers`, { permissions: ['models:read'] });
    await h.call(member, 'put', '/v2/user/active-org', { orgSlug: slug });
    const token = await h.call(member, 'post', '/v2/user/accessTokens', { name: 't', expiresAt: inADay(h) });
    await h.call(h.accessToken(token.body.token), 'put', '/v2/user/active-org', { orgSlug: slug });
    const ws = await h.call(member, 'post', '/v2/workspaces', { name: 'Member docs' });
    expect(ws.status).toBe(201);
    const wsKey = await h.call(member, 'post', `/v2/workspaces/${ws.body.id}/security/apikeys`, {
      name: 'bot',
      rules: [{ action: 'read', subject: 'workspace' }],
    });

    expect((await h.call(member, 'delete', `/v2/orgs/${slug}`)).body).toMatchObject({
      status: 403,
      error: 'OwnerOnly',
    });
    expect((await h.call(h.apiKey(key.body.apiKey), 'delete', `/v2/orgs/${slug}`)).status).toBe(403);

    const orgId = (await col().orgs.findOne({ slug }))!._id;
    expect(await col().roles.find({ orgId })).toHaveLength(1);
    const events = recordEvents(h.bus, [
      Subjects.credentialRevoked,
      Subjects.membershipChanged,
      Subjects.orgDeleted,
    ]);
    expect((await h.call(owner, 'delete', `/v2/orgs/${slug}`)).status).toBe(204);
    events.stop();
    const payloads = events.seen.map((e) => e.payload);
    expect(payloads).toEqual(
      expect.arrayContaining([
        expect.objectContaining({
          kind: 'org_api_key',
          id: key.body._id,
          credentialHash: expect.any(String),
        }),
        expect.objectContaining({ kind: 'workspace_api_key', id: wsKey.body._id }),
        expect.objectContaining({ orgSlug: slug, orgId: expect.any(String) }),
      ]),
    );
    expect(events.seen.filter((e) => e.subject === Subjects.orgDeleted)).toHaveLength(1);

    const gone = await h.call(owner, 'get', `/v2/orgs/${slug}`);
    expect(gone.body).toMatchObject({
      status: 404,
      error: 'OrgNotFound',
      message: `Organization ${slug} was deleted`,
    });
    expect((await h.call(h.apiKey(key.body.apiKey), 'get', '/v2/workspaces')).status).toBe(401);
    expect((await h.call(h.apiKey(wsKey.body.apiKey), 'get', `/v2/workspaces/${ws.body.id}`)).status).toBe(
      401,
    );
    expect(await col().memberships.find({ orgSlug: slug })).toEqual([]);
    expect(await col().workspaces.find({ orgSlug: slug })).toEqual([]);
    expect(await col().roles.find({ orgId })).toEqual([]);
    expect(await col().orgTombstones.findOne({ _id: slug })).toMatchObject({
      orgId,
      deletedBy: owner.userId,
    });
    // the member's session and access token no longer name it
    expect(await col().sessions.findOne({ _id: member.sessionId })).toMatchObject({ activeOrgSlug: null });
    expect(await col().accessTokens.findOne({ _id: token.body._id })).toMatchObject({ activeOrgSlug: null });
    const me = (await h.call(member, 'get', '/v2/me')).body;
    expect(me.activeOrgSlug).not.toBe(slug);
    expect(me.memberships.map((m: { orgSlug: string }) => m.orgSlug)).not.toContain(slug);
    // nobody gets the slug again, and a second deletion finds nothing
    expect((await h.call(member, 'post', '/v2/orgs', { slug, name: 'Squatter' })).body).toMatchObject({
      status: 409,
      error: 'OrgSlugTaken',
      details: { slug, reason: 'deleted' },
    });
    expect((await h.call(owner, 'delete', `/v2/orgs/${slug}`)).status).toBe(404);
  });

  it('its tombstone keeps the slug, the id and when, never the name; older tombstones lose theirs', async () => {
    const slug = unique();
    expect((await h.call(owner, 'post', '/v2/orgs', { slug, name: 'Project Falcon' })).status).toBe(201);
    const orgId = (await col().orgs.findOne({ slug }))!._id;
    expect((await h.call(owner, 'delete', `/v2/orgs/${slug}`)).status).toBe(204);
    const tombstone = await col().orgTombstones.findOne({ _id: slug });
    expect(tombstone).toEqual({
      _id: slug,
      orgId,
      deletedAt: h.clock.now(),
      deletedBy: owner.userId,
      sweptAt: h.clock.now(),
    });
    // the reservation holds without the name
    expect((await h.call(member, 'post', '/v2/orgs', { slug, name: 'Falcon' })).body).toMatchObject({
      status: 409,
      details: { reason: 'deleted' },
    });
    expect((await h.call(owner, 'get', `/v2/orgs/${slug}`)).body.message).toBe(
      `Organization ${slug} was deleted`,
    );

    // one an earlier version wrote, with the organization's name and creation time: the retention pass drops them
    await h.service.retention.run(); // after the pass the service started with, which could trim it before ours
    const older = unique();
    const deletedAt = new Date(h.clock.now().getTime() - 86_400_000);
    await col().orgTombstones.insertOne({
      _id: older,
      orgId: 'an-older-org',
      name: 'Project Osprey',
      createdAt: new Date('2024-01-01T00:00:00Z'),
      deletedAt,
      deletedBy: owner.userId,
      sweptAt: deletedAt,
    } as OrgTombstoneDoc);
    expect((await h.service.retention.run())?.tombstonesTrimmed).toBeGreaterThanOrEqual(1);
    expect(await col().orgTombstones.findOne({ _id: older })).toEqual({
      _id: older,
      orgId: 'an-older-org',
      deletedAt,
      deletedBy: owner.userId,
      sweptAt: deletedAt,
    });
    expect((await h.call(member, 'post', '/v2/orgs', { slug: older, name: 'Osprey' })).status).toBe(409);
  });

  it.each([
    [
      'an API key',
      'org_api_keys',
      (slug: string) =>
        h.call(owner, 'post', `/v2/orgs/${slug}/apikeys`, { name: 'late', permissions: ['models:read'] }),
    ],
    [
      'a member',
      'memberships',
      (slug: string) =>
        h.call(owner, 'post', `/v2/orgs/${slug}/members`, { userId: member.userId, role: 'member' }),
    ],
    ['a workspace', 'workspaces', () => h.call(owner, 'post', '/v2/workspaces', { name: 'late' })],
  ] as const)(
    '%s added while the organization is deleted is taken back (no live credential, no leftover)',
    async (_what, collection, add) => {
      const slug = unique();
      expect((await h.call(owner, 'post', '/v2/orgs', { slug, name: 'Racing' })).status).toBe(201);
      await h.call(owner, 'put', '/v2/user/active-org', { orgSlug: slug });
      const orgId = (await col().orgs.findOne({ slug }))!._id;
      const held = gated.gate(collection, (doc) => (doc as { orgId?: string }).orgId === orgId);
      const adding = add(slug);
      await held.arrived;
      expect((await h.call(owner, 'delete', `/v2/orgs/${slug}`)).status).toBe(204);
      held.release();
      const late = await adding;
      expect(late.status).toBe(404);
      expect(await col().orgApiKeys.find({ orgId, revokedAt: null })).toEqual([]);
      expect(await col().memberships.find({ orgId })).toEqual([]);
      expect(await col().workspaces.find({ orgId })).toEqual([]);
      expect(await col().workspaceMembers.find({ orgId })).toEqual([]);
    },
  );

  it('a slug taken while its namesake is being deleted is given back', async () => {
    const slug = unique();
    expect((await h.call(owner, 'post', '/v2/orgs', { slug, name: 'First' })).status).toBe(201);
    const first = (await col().orgs.findOne({ slug }))!;
    // the second creation passed its first look (no tombstone yet) and is about to write the slug
    const held = gated.gate(
      'orgs',
      (doc) => (doc as { slug?: string }).slug === slug && doc._id !== first._id,
    );
    const taking = h.call(member, 'post', '/v2/orgs', { slug, name: 'Second' });
    await held.arrived;
    expect((await h.call(owner, 'delete', `/v2/orgs/${slug}`)).status).toBe(204);
    held.release();
    expect((await taking).body).toMatchObject({ status: 409, details: { reason: 'deleted' } });
    expect(await col().orgs.findOne({ slug })).toBeNull();
  });

  it('a deletion a crash cut short (slug reserved, sweep not done) is finished by the retention pass', async () => {
    const slug = await orgWithMember();
    const key = await h.call(owner, 'post', `/v2/orgs/${slug}/apikeys`, {
      name: 'ci',
      permissions: ['models:read'],
    });
    const org = (await col().orgs.findOne({ slug }))!;
    await col().orgTombstones.insertOne({
      _id: slug,
      orgId: org._id,
      deletedAt: h.clock.now(),
      deletedBy: owner.userId,
    });
    await col().orgs.deleteOne({ _id: org._id });
    // the key is dead already (its organization is gone), and the sweep finishes the records
    expect((await h.call(h.apiKey(key.body.apiKey), 'get', '/v2/workspaces')).status).toBe(401);
    h.clock.advance(16 * 60_000);
    const pass = await h.service.retention.run();
    expect(pass?.deletionsFinished.organizations).toBeGreaterThanOrEqual(1);
    expect(await col().orgApiKeys.find({ orgId: org._id, revokedAt: null })).toEqual([]);
    expect(await col().memberships.find({ orgId: org._id })).toEqual([]);
    expect((await col().orgTombstones.findOne({ _id: slug }))?.sweptAt).toBeInstanceOf(Date);
  });

  it("the retention pass announces the last day's deletions again, for a llm-quota that was away", async () => {
    const slug = await orgWithMember();
    expect((await h.call(owner, 'delete', `/v2/orgs/${slug}`)).status).toBe(204);
    const events = recordEvents(h.bus, [Subjects.orgDeleted]);
    const announced = () =>
      events.seen.filter((e) => (e.payload as { orgSlug: string }).orgSlug === slug).length;
    h.clock.advance(3_600_000);
    await h.service.retention.run();
    await waitFor(() => announced() === 1, { what: 'the deletion announced again' });
    h.clock.advance(24 * 3_600_000);
    await h.service.retention.run();
    expect(announced()).toBe(1);
  });

  it('a workspace key of an organization whose sweep has not reached its workspace is refused', async () => {
    const slug = unique();
    expect((await h.call(owner, 'post', '/v2/orgs', { slug, name: 'Cut short' })).status).toBe(201);
    await h.call(owner, 'put', '/v2/user/active-org', { orgSlug: slug });
    const ws = await h.call(owner, 'post', '/v2/workspaces', { name: 'Docs' });
    const wsKey = await h.call(owner, 'post', `/v2/workspaces/${ws.body.id}/security/apikeys`, {
      name: 'bot',
      rules: [{ action: 'read', subject: 'workspace' }],
    });
    const asKey = h.apiKey(wsKey.body.apiKey);
    expect((await h.call(asKey, 'get', `/v2/workspaces/${ws.body.id}`)).status).toBe(200);
    // the deletion's conditional writes are done, and it stopped there (a crash): the workspace is still there
    const org = (await col().orgs.findOne({ slug }))!;
    await col().orgTombstones.insertOne({
      _id: slug,
      orgId: org._id,
      deletedAt: h.clock.now(),
      deletedBy: owner.userId,
    });
    await col().orgs.deleteOne({ _id: org._id });
    expect(await col().workspaces.findOne({ _id: ws.body.id })).not.toBeNull();
    expect((await h.call(asKey, 'get', `/v2/workspaces/${ws.body.id}`)).status).toBe(401);
  });
});
