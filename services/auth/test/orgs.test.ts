import { ALL_PERMISSIONS, Subjects } from '@platform/contracts';
import { createEmbeddedStore, type Doc } from '@platform/store';
import { tempDir, waitFor } from '@platform/testkit';
import { signInWith, startFakeIdp } from './fake-idp';
import { type AuthHarness, INTERNAL_SECRET, recordEvents, startAuth, type UserActor } from './helpers';
import { storeWithInsertGate } from './store-gate';

let counter = 0;
const slug = (prefix = 'org') => `${prefix}-${++counter}-${Math.random().toString(36).slice(2, 6)}`;

describe('organizations, members and roles', () => {
  let h: AuthHarness;
  let owner: UserActor;
  beforeAll(async () => {
    h = await startAuth();
    owner = await h.newUser();
  });
  afterAll(() => h.stop());

  async function orgWith(...members: Array<[UserActor, string]>) {
    const s = slug();
    expect((await h.call(owner, 'post', '/v2/orgs', { slug: s, name: `Org ${s}` })).status).toBe(201);
    for (const [user, role] of members) {
      expect(
        (await h.call(owner, 'post', `/v2/orgs/${s}/members`, { userId: user.userId, role })).status,
      ).toBe(201);
    }
    return s;
  }

  it('creates an organization (201) whose creator is its owner, and publishes the membership', async () => {
    const events = recordEvents(h.bus, [Subjects.membershipChanged]);
    const s = slug();
    const res = await h.call(owner, 'post', '/v2/orgs', { slug: s, name: 'Acme' });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ id: expect.any(String), slug: s, name: 'Acme', role: 'owner' });
    const members = await h.call(owner, 'get', `/v2/orgs/${s}/members`);
    expect(members.body).toEqual([{ userId: owner.userId, role: 'owner', joinedAt: expect.any(String) }]);
    await waitFor(() => events.seen.length >= 1, { what: 'membership event' });
    expect(events.seen[0]!.payload).toMatchObject({ version: 1, orgSlug: s, userId: owner.userId });
    events.stop();
  });

  it('a taken slug is 409; a malformed slug is 400', async () => {
    const s = await orgWith();
    const taken = await h.call(owner, 'post', '/v2/orgs', { slug: s, name: 'Again' });
    expect(taken.status).toBe(409);
    expect(taken.body).toMatchObject({ error: 'OrgSlugTaken', status: 409 });
    // `all` names every organization where the gateway takes a slug (`GET /v1/models?orgSlug=all`)
    for (const bad of ['A-Upper', '-dash', 'dash-', 'x', 'under_score', 'a'.repeat(64), 'all']) {
      const res = await h.call(owner, 'post', '/v2/orgs', { slug: bad, name: 'Bad' });
      expect(res.status).toBe(400);
      expect(res.body.details.issues[0].field).toBe('slug');
    }
  });

  it('lists the caller’s organizations and reads one (members only)', async () => {
    const outsider = await h.newUser();
    const s = await orgWith();
    const list = await h.call(owner, 'get', '/v2/orgs');
    expect(list.body.map((o: { slug: string }) => o.slug)).toContain(s);
    expect((await h.call(outsider, 'get', '/v2/orgs')).body).toEqual([]);
    const read = await h.call(owner, 'get', `/v2/orgs/${s}`);
    expect(read.status).toBe(200);
    expect(read.body).toMatchObject({ slug: s, role: 'owner', permissions: ALL_PERMISSIONS });
    expect((await h.call(outsider, 'get', `/v2/orgs/${s}`)).status).toBe(403);
    expect((await h.call(owner, 'get', '/v2/orgs/no-such-org')).status).toBe(404);
  });

  it('adds members, changes roles (200), removes them; each change publishes auth.membership.changed', async () => {
    const user = await h.newUser();
    const s = await orgWith();
    const events = recordEvents(h.bus, [Subjects.membershipChanged]);
    expect(
      (await h.call(owner, 'post', `/v2/orgs/${s}/members`, { userId: user.userId, role: 'guest' })).status,
    ).toBe(201);
    const changed = await h.call(owner, 'post', `/v2/orgs/${s}/members`, {
      userId: user.userId,
      role: 'member',
    });
    expect(changed.status).toBe(200);
    expect(changed.body).toMatchObject({ userId: user.userId, role: 'member' });
    expect((await h.call(owner, 'delete', `/v2/orgs/${s}/members/${user.userId}`)).status).toBe(204);
    await waitFor(() => events.seen.length === 3, { what: 'three membership events' });
    expect(events.seen.map((e) => e.payload)).toEqual(
      Array(3).fill({ version: 1, orgSlug: s, userId: user.userId, at: expect.any(String) }),
    );
    events.stop();
  });

  it('refuses unknown users (404) and unknown roles (400)', async () => {
    const s = await orgWith();
    expect(
      (await h.call(owner, 'post', `/v2/orgs/${s}/members`, { userId: 'nobody', role: 'member' })).status,
    ).toBe(404);
    const user = await h.newUser();
    const res = await h.call(owner, 'post', `/v2/orgs/${s}/members`, { userId: user.userId, role: 'wizard' });
    expect(res.status).toBe(400);
    expect(res.body.details.issues[0].field).toBe('role');
    // names every object has are no built-in role either (they answered 500)
    for (const role of ['constructor', 'toString', '__proto__', 'hasOwnProperty']) {
      const named = await h.call(owner, 'post', `/v2/orgs/${s}/members`, { userId: user.userId, role });
      expect([role, named.status, named.body.details?.issues[0].field]).toEqual([role, 400, 'role']);
    }
  });

  it('the last owner cannot be removed nor demoted (409); with two owners one may go', async () => {
    const s = await orgWith();
    const leave = await h.call(owner, 'delete', `/v2/orgs/${s}/members/${owner.userId}`);
    expect(leave.status).toBe(409);
    expect(leave.body.error).toBe('LastOwner');
    const demote = await h.call(owner, 'post', `/v2/orgs/${s}/members`, {
      userId: owner.userId,
      role: 'member',
    });
    expect(demote.status).toBe(409);
    expect((await h.call(owner, 'get', `/v2/orgs/${s}/members`)).body[0].role).toBe('owner');
    const second = await h.newUser();
    await h.call(owner, 'post', `/v2/orgs/${s}/members`, { userId: second.userId, role: 'owner' });
    expect((await h.call(second, 'delete', `/v2/orgs/${s}/members/${owner.userId}`)).status).toBe(204);
  });

  it('a refused removal puts the membership back and publishes auth.membership.changed for it', async () => {
    // an edge that resolved the member's principal while the membership was gone drops it on the event
    const member = await h.newUser();
    const s = await orgWith([member, 'member']);
    await h.call(member, 'put', '/v2/user/active-org', { orgSlug: s });
    const workspace = (await h.call(member, 'post', '/v2/workspaces', { name: 'Shared' })).body.id as string;
    await h.call(member, 'put', `/v2/workspaces/${workspace}/members/${owner.userId}`, { role: 'editor' });
    const events = recordEvents(h.bus, [Subjects.membershipChanged]);
    const leave = await h.call(owner, 'delete', `/v2/orgs/${s}/members/${owner.userId}`);
    expect(leave.body.error).toBe('LastOwner'); // the last owner of the organization
    const remove = await h.call(owner, 'delete', `/v2/orgs/${s}/members/${member.userId}`);
    expect(remove.body).toMatchObject({ status: 409, error: 'LastOwner' }); // the last owner of a shared workspace
    await waitFor(() => events.seen.length >= 2, { what: 'two membership events' });
    expect(events.seen.map((e) => e.payload)).toEqual([
      { version: 1, orgSlug: s, userId: owner.userId, at: expect.any(String) },
      { version: 1, orgSlug: s, userId: member.userId, at: expect.any(String) },
    ]);
    events.stop();
    expect((await h.call(owner, 'get', `/v2/orgs/${s}/members`)).body).toHaveLength(2);
  });

  it('a refused role change puts the role back and publishes auth.membership.changed for it', async () => {
    // the role was briefly another: an edge that resolved the member's principal then drops it on the event
    const s = await orgWith();
    const events = recordEvents(h.bus, [Subjects.membershipChanged]);
    const demote = await h.call(owner, 'post', `/v2/orgs/${s}/members`, {
      userId: owner.userId,
      role: 'member',
    });
    expect(demote.body).toMatchObject({ status: 409, error: 'LastOwner' });
    await waitFor(() => events.seen.length >= 1, { what: 'a membership event' });
    expect(events.seen.map((e) => e.payload)).toEqual([
      { version: 1, orgSlug: s, userId: owner.userId, at: expect.any(String) },
    ]);
    events.stop();
    expect((await h.call(owner, 'get', `/v2/orgs/${s}/members`)).body[0].role).toBe('owner');
  });

  it('two owners demoting each other at once leave at least one owner', async () => {
    const other = await h.newUser();
    const s = await orgWith([other, 'owner']);
    const results = await Promise.all([
      h.call(owner, 'post', `/v2/orgs/${s}/members`, { userId: other.userId, role: 'member' }),
      h.call(other, 'post', `/v2/orgs/${s}/members`, { userId: owner.userId, role: 'member' }),
    ]);
    const members = (await h.call(owner, 'get', `/v2/orgs/${s}/members`)).body.concat(
      (await h.call(other, 'get', `/v2/orgs/${s}/members`)).body,
    );
    expect(members.some((m: { role: string }) => m.role === 'owner')).toBe(true);
    // Whichever lands second finds its caller no longer an owner (403) or would leave none (409).
    for (const r of results) expect([200, 403, 409]).toContain(r.status);
    expect(results.filter((r) => r.status === 200).length).toBeLessThanOrEqual(1);
  });

  it('only owners grant or take the owner role; any member may leave', async () => {
    const admin = await h.newUser();
    const target = await h.newUser();
    const s = await orgWith([admin, 'member']);
    await h.call(owner, 'put', `/v2/orgs/${s}/roles/people-admin`, {
      permissions: ['members:read', 'members:manage'],
    });
    await h.call(owner, 'post', `/v2/orgs/${s}/members`, { userId: admin.userId, role: 'people-admin' });
    expect(
      (await h.call(admin, 'post', `/v2/orgs/${s}/members`, { userId: target.userId, role: 'guest' })).status,
    ).toBe(201);
    const grant = await h.call(admin, 'post', `/v2/orgs/${s}/members`, {
      userId: target.userId,
      role: 'owner',
    });
    expect(grant.status).toBe(403);
    expect((await h.call(admin, 'delete', `/v2/orgs/${s}/members/${owner.userId}`)).status).toBe(403);
    expect((await h.call(target, 'delete', `/v2/orgs/${s}/members/${target.userId}`)).status).toBe(204);
  });

  it('members:manage cannot hand out (even to oneself) a role holding more than the caller holds', async () => {
    const admin = await h.newUser();
    const target = await h.newUser();
    const s = await orgWith();
    await h.call(owner, 'put', `/v2/orgs/${s}/roles/people-admin`, {
      permissions: ['members:read', 'members:manage'],
    });
    await h.call(owner, 'put', `/v2/orgs/${s}/roles/key-master`, {
      permissions: ['members:read', 'apikeys:manage'],
    });
    await h.call(owner, 'post', `/v2/orgs/${s}/members`, { userId: admin.userId, role: 'people-admin' });
    const self = await h.call(admin, 'post', `/v2/orgs/${s}/members`, {
      userId: admin.userId,
      role: 'key-master',
    });
    expect(self.status).toBe(403);
    expect(self.body).toMatchObject({
      error: 'PermissionEscalation',
      details: { permissions: ['apikeys:manage'] },
    });
    expect(
      (await h.call(admin, 'post', `/v2/orgs/${s}/members`, { userId: target.userId, role: 'key-master' }))
        .status,
    ).toBe(403);
    expect(
      (await h.call(admin, 'post', `/v2/orgs/${s}/members`, { userId: target.userId, role: 'guest' })).status,
    ).toBe(201);

    // nor demotes or removes a member who holds more: the key master keeps apikeys:manage
    await h.call(owner, 'post', `/v2/orgs/${s}/members`, { userId: target.userId, role: 'key-master' });
    const demote = await h.call(admin, 'post', `/v2/orgs/${s}/members`, {
      userId: target.userId,
      role: 'guest',
    });
    expect(demote.status).toBe(403);
    expect(demote.body).toMatchObject({
      error: 'PermissionEscalation',
      details: { permissions: ['apikeys:manage'] },
    });
    expect((await h.call(admin, 'delete', `/v2/orgs/${s}/members/${target.userId}`)).status).toBe(403);
    const members = (await h.call(owner, 'get', `/v2/orgs/${s}/members`)).body as Array<{
      userId: string;
      role: string;
    }>;
    expect(members.find((m) => m.userId === target.userId)?.role).toBe('key-master');
    // anyone may still leave
    expect((await h.call(admin, 'delete', `/v2/orgs/${s}/members/${admin.userId}`)).status).toBe(204);
  });

  describe('roles', () => {
    it('lists the built-ins: owner (every permission), member (includes models:read), guest (none)', async () => {
      const s = await orgWith();
      const res = await h.call(owner, 'get', `/v2/orgs/${s}/roles`);
      expect(res.status).toBe(200);
      const bySlug = Object.fromEntries(res.body.map((r: { slug: string }) => [r.slug, r]));
      expect(bySlug.owner).toMatchObject({ builtIn: true, permissions: ALL_PERMISSIONS });
      expect(bySlug.member.permissions).toContain('models:read');
      expect(bySlug.guest.permissions).toEqual([]);
    });

    it('custom roles are data: create (201), replace (200, publishes for all members), delete', async () => {
      const s = await orgWith();
      const events = recordEvents(h.bus, [Subjects.membershipChanged]);
      const created = await h.call(owner, 'put', `/v2/orgs/${s}/roles/analyst`, {
        description: 'reads models',
        permissions: ['models:read'],
        scopes: ['reports'],
      });
      expect(created.status).toBe(201);
      expect(created.body).toEqual({
        slug: 'analyst',
        description: 'reads models',
        permissions: ['models:read'],
        scopes: ['reports'],
        builtIn: false,
      });
      const replaced = await h.call(owner, 'put', `/v2/orgs/${s}/roles/analyst`, {
        permissions: ['models:read', 'members:read'],
      });
      expect(replaced.status).toBe(200);
      await waitFor(() => events.seen.some((e) => e.payload.orgSlug === s && !('userId' in e.payload)), {
        what: 'org-wide membership event',
      });
      const listed = (await h.call(owner, 'get', `/v2/orgs/${s}/roles`)).body;
      expect(listed.find((r: { slug: string }) => r.slug === 'analyst').permissions).toEqual([
        'models:read',
        'members:read',
      ]);
      expect((await h.call(owner, 'delete', `/v2/orgs/${s}/roles/analyst`)).status).toBe(204);
      expect((await h.call(owner, 'delete', `/v2/orgs/${s}/roles/analyst`)).status).toBe(404);
      events.stop();
    });

    it('a description of several lines is text: its line breaks and tabs are kept, and it can be sent back', async () => {
      const s = await orgWith();
      const description = 'Reads reports.\n\t- models\r\n\t- usage';
      const made = await h.call(owner, 'put', `/v2/orgs/${s}/roles/analyst`, {
        description,
        permissions: [],
      });
      expect([made.status, made.body.description]).toEqual([201, description]);
      // a client changing only the permissions sends the description it read
      const read = (await h.call(owner, 'get', `/v2/orgs/${s}/roles`)).body.find(
        (r: { slug: string }) => r.slug === 'analyst',
      );
      const replaced = await h.call(owner, 'put', `/v2/orgs/${s}/roles/analyst`, {
        description: read.description,
        permissions: ['models:read'],
      });
      expect([replaced.status, replaced.body.description]).toEqual([200, description]);
      const other = await h.call(owner, 'put', `/v2/orgs/${s}/roles/analyst`, {
        description: 'bell\u0007',
        permissions: [],
      });
      expect([other.status, other.body.details.issues[0].field]).toEqual([400, 'description']);
    });

    it('names in scripts that join letters with zero-width characters are names (Persian, Hindi, emoji sequences)', async () => {
      for (const name of [
        '\u0645\u06cc\u200c\u062e\u0648\u0627\u0647\u0645',
        '\u0915\u094d\u200d\u0937',
        '\ud83d\udc69\u200d\ud83d\udcbb Team',
      ]) {
        const s = slug();
        const made = await h.call(owner, 'post', '/v2/orgs', { slug: s, name });
        expect([made.status, made.body.name]).toEqual([201, name]);
      }
    });

    it('built-in roles are not editable; unknown permissions and bad slugs are 400; roles in use are 409', async () => {
      const user = await h.newUser();
      const s = await orgWith();
      expect((await h.call(owner, 'put', `/v2/orgs/${s}/roles/owner`, { permissions: [] })).status).toBe(403);
      expect((await h.call(owner, 'delete', `/v2/orgs/${s}/roles/member`)).status).toBe(403);
      const unknown = await h.call(owner, 'put', `/v2/orgs/${s}/roles/x-role`, {
        permissions: ['models:fly'],
      });
      expect(unknown.status).toBe(400);
      expect(unknown.body.details.issues[0].field).toBe('permissions.0');
      expect((await h.call(owner, 'put', `/v2/orgs/${s}/roles/Bad_Slug`, { permissions: [] })).status).toBe(
        400,
      );
      await h.call(owner, 'put', `/v2/orgs/${s}/roles/used`, { permissions: [] });
      await h.call(owner, 'post', `/v2/orgs/${s}/members`, { userId: user.userId, role: 'used' });
      expect((await h.call(owner, 'delete', `/v2/orgs/${s}/roles/used`)).status).toBe(409);
    });

    it('nobody grants a role more than they hold', async () => {
      const manager = await h.newUser();
      const s = await orgWith();
      await h.call(owner, 'put', `/v2/orgs/${s}/roles/role-manager`, {
        permissions: ['roles:read', 'roles:manage'],
      });
      await h.call(owner, 'post', `/v2/orgs/${s}/members`, { userId: manager.userId, role: 'role-manager' });
      const res = await h.call(manager, 'put', `/v2/orgs/${s}/roles/sneaky`, {
        permissions: ['members:manage'],
      });
      expect(res.status).toBe(403);
      expect(res.body.details.permissions).toEqual(['members:manage']);
      expect(
        (await h.call(manager, 'put', `/v2/orgs/${s}/roles/fine`, { permissions: ['roles:read'] })).status,
      ).toBe(201);
      // nor strips a role of what they do not hold (its members would lose it)
      await h.call(owner, 'put', `/v2/orgs/${s}/roles/keys`, { permissions: ['apikeys:manage'] });
      const strip = await h.call(manager, 'put', `/v2/orgs/${s}/roles/keys`, { permissions: [] });
      expect(strip.status).toBe(403);
      expect(strip.body.details.permissions).toEqual(['apikeys:manage']);
    });

    it('a custom role’s permissions reach the principal', async () => {
      const user = await h.newUser();
      const s = await orgWith();
      await h.call(owner, 'put', `/v2/orgs/${s}/roles/modeler`, {
        permissions: ['models:read', 'models:manage'],
        scopes: ['lab'],
      });
      await h.call(owner, 'post', `/v2/orgs/${s}/members`, { userId: user.userId, role: 'modeler' });
      const { principal } = await h.service.context.introspection.resolve(user.credential, s, 'r');
      expect(principal.session.org).toMatchObject({
        slug: s,
        role: { slug: 'modeler', permissions: ['models:read', 'models:manage'], scopes: ['lab'] },
      });
      expect(principal.run.permissions).toEqual({ llm: { models: { read: true, manage: true } } });
      expect(principal.run.scopes).toEqual(['lab']);
    });
  });
});

describe('removing a member while their account, their organization or their workspace roles change', () => {
  const folder = tempDir('auth-member-removal-');
  const gated = storeWithInsertGate(createEmbeddedStore({ dataDir: folder.dir, compactionIntervalMs: 0 }));
  let h: AuthHarness;
  beforeAll(async () => {
    h = await startAuth({ store: gated.store });
  });
  afterAll(async () => {
    await h.stop();
    await gated.store.close();
    folder.remove();
  });
  const col = () => h.service.context.collections;
  const ofUser = (userId: string) => (doc: Doc) => (doc as { userId?: string }).userId === userId;

  /** an organization of `owner` with `member` in it, who made a workspace and shared it with `owner` */
  async function memberOwningASharedWorkspace(owner: UserActor, member: UserActor) {
    const s = slug();
    expect((await h.call(owner, 'post', '/v2/orgs', { slug: s, name: 'Acme' })).status).toBe(201);
    await h.call(owner, 'post', `/v2/orgs/${s}/members`, { userId: member.userId, role: 'member' });
    await h.call(member, 'put', '/v2/user/active-org', { orgSlug: s });
    const workspace = (await h.call(member, 'post', '/v2/workspaces', { name: 'Shared' })).body.id as string;
    const shared = await h.call(member, 'put', `/v2/workspaces/${workspace}/members/${owner.userId}`, {
      role: 'editor',
    });
    expect(shared.status).toBe(201);
    return { slug: s, workspace };
  }

  it('a refused removal puts nothing back for a person whose account was deleted meanwhile', async () => {
    const [owner, member] = [await h.newUser(), await h.newUser()];
    const { slug: s } = await memberOwningASharedWorkspace(owner, member);
    // refused (the member is the last owner of a workspace the owner belongs to): about to put their role back
    const held = gated.gate('workspace_members', ofUser(member.userId));
    const removing = h.call(owner, 'delete', `/v2/orgs/${s}/members/${member.userId}`);
    await held.arrived;
    expect((await h.call(member, 'delete', '/v2/me')).status).toBe(204);
    held.release();
    expect((await removing).status).toBe(409);
    expect(await col().memberships.find({ userId: member.userId })).toEqual([]);
    expect(await col().workspaceMembers.find({ userId: member.userId })).toEqual([]);
  });

  it('a refused removal puts no membership back in an organization deleted meanwhile', async () => {
    const [owner, member] = [await h.newUser(), await h.newUser()];
    const { slug: s } = await memberOwningASharedWorkspace(owner, member);
    const held = gated.gate('memberships', ofUser(member.userId));
    const removing = h.call(owner, 'delete', `/v2/orgs/${s}/members/${member.userId}`);
    await held.arrived;
    expect((await h.call(owner, 'delete', `/v2/orgs/${s}`)).status).toBe(204);
    held.release();
    expect((await removing).status).toBe(409);
    expect(await col().memberships.find({ orgSlug: s })).toEqual([]);
  });

  it('a workspace role given while the person is removed from the organization does not stay behind', async () => {
    const [owner, member] = [await h.newUser(), await h.newUser()];
    const s = slug();
    expect((await h.call(owner, 'post', '/v2/orgs', { slug: s, name: 'Acme' })).status).toBe(201);
    await h.call(owner, 'post', `/v2/orgs/${s}/members`, { userId: member.userId, role: 'member' });
    await h.call(owner, 'put', '/v2/user/active-org', { orgSlug: s });
    const workspace = (await h.call(owner, 'post', '/v2/workspaces', { name: 'Late' })).body.id as string;
    // the role is checked against the membership, and about to be written, when the member is removed
    const held = gated.gate('workspace_members', ofUser(member.userId));
    const giving = h.call(owner, 'put', `/v2/workspaces/${workspace}/members/${member.userId}`, {
      role: 'editor',
    });
    await held.arrived;
    expect((await h.call(owner, 'delete', `/v2/orgs/${s}/members/${member.userId}`)).status).toBe(204);
    held.release();
    expect((await giving).body).toMatchObject({ status: 400, error: 'NotAnOrgMember' });
    expect(await col().workspaceMembers.find({ userId: member.userId })).toEqual([]);
  });

  it('a workspace made while its creator is removed from the organization does not stay behind', async () => {
    const [owner, member] = [await h.newUser(), await h.newUser()];
    const s = slug();
    expect((await h.call(owner, 'post', '/v2/orgs', { slug: s, name: 'Acme' })).status).toBe(201);
    await h.call(owner, 'post', `/v2/orgs/${s}/members`, { userId: member.userId, role: 'member' });
    await h.call(member, 'put', '/v2/user/active-org', { orgSlug: s });
    // the workspace is written, its creator's role about to be, when the creator is removed
    const held = gated.gate('workspace_members', ofUser(member.userId));
    const creating = h.call(member, 'post', '/v2/workspaces', { name: 'Late' });
    await held.arrived;
    expect((await h.call(owner, 'delete', `/v2/orgs/${s}/members/${member.userId}`)).status).toBe(204);
    held.release();
    expect((await creating).body).toMatchObject({ status: 403, error: 'NotAMember' });
    expect(await col().workspaceMembers.find({ userId: member.userId })).toEqual([]);
    expect(await col().workspaces.find({ createdBy: member.userId })).toEqual([]);
  });

  /** an organization where `member` holds a role that manages keys, and the key it is making held at its write */
  async function keyMadeWhile(owner: UserActor, member: UserActor, change: (s: string) => Promise<void>) {
    const s = slug();
    expect((await h.call(owner, 'post', '/v2/orgs', { slug: s, name: 'Acme' })).status).toBe(201);
    const role = { description: 'keys', permissions: ['apikeys:manage', 'apikeys:read', 'members:read'] };
    expect((await h.call(owner, 'put', `/v2/orgs/${s}/roles/keys`, role)).status).toBe(201);
    await h.call(owner, 'post', `/v2/orgs/${s}/members`, { userId: member.userId, role: 'keys' });
    const held = gated.gate(
      'org_api_keys',
      (doc) => (doc as { createdBy?: string }).createdBy === member.userId,
    );
    const making = h.call(member, 'post', `/v2/orgs/${s}/apikeys`, {
      name: 'ci',
      permissions: ['apikeys:manage', 'members:read'],
    });
    await held.arrived;
    await change(s);
    held.release();
    return { slug: s, made: await making };
  }

  it('an organization key made while its maker is removed, or loses the rights it holds, does not stay live', async () => {
    const [owner, removed, demoted] = [await h.newUser(), await h.newUser(), await h.newUser()];
    const gone = await keyMadeWhile(owner, removed, async (s) => {
      expect((await h.call(owner, 'delete', `/v2/orgs/${s}/members/${removed.userId}`)).status).toBe(204);
    });
    // before: 201, and the key, with the members:read and apikeys:manage its maker no longer held, kept working
    expect(gone.made.body).toMatchObject({ status: 403, error: 'NotAMember' });
    const lessened = await keyMadeWhile(owner, demoted, async (s) => {
      const demoting = { userId: demoted.userId, role: 'guest' };
      expect((await h.call(owner, 'post', `/v2/orgs/${s}/members`, demoting)).status).toBe(200);
    });
    expect(lessened.made.body).toMatchObject({ status: 403, error: 'MissingPermission' });
    for (const maker of [removed, demoted])
      expect(await col().orgApiKeys.find({ createdBy: maker.userId, revokedAt: null })).toEqual([]);
  });

  it('a role replaced by two administrators at once: neither takes away what the other gave unless holding it', async () => {
    const [owner, admin] = [await h.newUser(), await h.newUser()];
    const s = slug();
    expect((await h.call(owner, 'post', '/v2/orgs', { slug: s, name: 'Acme' })).status).toBe(201);
    const roles = { description: 'roles', permissions: ['roles:manage', 'roles:read', 'members:read'] };
    expect((await h.call(owner, 'put', `/v2/orgs/${s}/roles/role-admins`, roles)).status).toBe(201);
    await h.call(owner, 'post', `/v2/orgs/${s}/members`, { userId: admin.userId, role: 'role-admins' });
    const ops = (permissions: string[], description = 'ops') => ({ description, permissions });
    expect((await h.call(owner, 'put', `/v2/orgs/${s}/roles/ops`, ops(['members:read']))).status).toBe(201);
    // the administrator's new description, checked against the role as it was, about to be written
    const held = gated.gate('roles', (doc) => (doc as { slug?: string }).slug === 'ops', [
      'updateOne',
      'findOneAndUpdate',
    ]);
    const describing = h.call(admin, 'put', `/v2/orgs/${s}/roles/ops`, ops(['members:read'], 'Operations'));
    await held.arrived;
    const granted = await h.call(
      owner,
      'put',
      `/v2/orgs/${s}/roles/ops`,
      ops(['members:read', 'apikeys:manage']),
    );
    expect(granted.status).toBe(200);
    held.release();
    // before: 200, and apikeys:manage, which the administrator does not hold and could not give back, taken from ops
    expect((await describing).body).toMatchObject({ status: 403, error: 'PermissionEscalation' });
    const org = await col().orgs.findOne({ slug: s });
    expect(await col().roles.findOne({ orgId: org!._id, slug: 'ops' })).toMatchObject({
      permissions: ['members:read', 'apikeys:manage'],
    });
  });

  it('a workspace key made while its maker is removed from the organization does not stay live', async () => {
    const [owner, member] = [await h.newUser(), await h.newUser()];
    const s = slug();
    expect((await h.call(owner, 'post', '/v2/orgs', { slug: s, name: 'Acme' })).status).toBe(201);
    await h.call(owner, 'post', `/v2/orgs/${s}/members`, { userId: member.userId, role: 'member' });
    await h.call(member, 'put', '/v2/user/active-org', { orgSlug: s });
    const workspace = (await h.call(member, 'post', '/v2/workspaces', { name: 'Own' })).body.id as string;
    const held = gated.gate(
      'workspace_api_keys',
      (doc) => (doc as { createdBy?: string }).createdBy === member.userId,
    );
    const making = h.call(member, 'post', `/v2/workspaces/${workspace}/security/apikeys`, {
      name: 'ci',
      rules: [{ action: ['read', 'update'], subject: 'workspace' }],
    });
    await held.arrived;
    // the removal takes the workspace roles it finds: the owner role that allowed the key
    expect((await h.call(owner, 'delete', `/v2/orgs/${s}/members/${member.userId}`)).status).toBe(204);
    held.release();
    // before: 201, and the key went on reading and renaming the workspace for someone no longer in the organization
    expect((await making).status).toBe(403);
    expect(await col().workspaceApiKeys.find({ createdBy: member.userId, revokedAt: null })).toEqual([]);
  });
});

describe("a company's SSO provider makes its people members once, not at every sign-in", () => {
  const SECRET = 'company-secret-for-the-platform-0123456789';
  let idp: Awaited<ReturnType<typeof startFakeIdp>>;
  let h: AuthHarness;
  let owner: UserActor;
  const company = slug('company');
  beforeAll(async () => {
    idp = await startFakeIdp({
      clientId: 'platform',
      clientSecret: SECRET,
      redirectUris: ['http://localhost:8080/account/sso/acme/callback'],
    });
    h = await startAuth({ env: { PASSWORD_SCRYPT_N: '1024', PASSWORD_SCRYPT_P: '1' } });
    owner = await h.newUser();
    expect((await h.call(owner, 'post', '/v2/orgs', { slug: company, name: 'Acme' })).status).toBe(201);
    const named = await h.http
      .put('/internal/sso-providers/acme')
      .set('x-platform-internal-secret', INTERNAL_SECRET)
      .send({
        name: 'Acme SSO',
        issuer: idp.url,
        clientId: 'platform',
        clientSecret: SECRET,
        orgSlug: company,
      });
    expect(named.status).toBe(201);
  });
  afterAll(async () => {
    await h.stop();
    await idp.close();
  });

  /** `pnpm platform sso add acme`: `orgSlug` left out when undefined */
  const nameAcme = (orgSlug?: string | null, name = 'Acme SSO') =>
    h.http
      .put('/internal/sso-providers/acme')
      .set('x-platform-internal-secret', INTERNAL_SECRET)
      .send({ name, issuer: idp.url, clientId: 'platform', clientSecret: SECRET, orgSlug });

  /** signs `name` in with the company's provider; answers them as a caller of auth */
  async function signIn(name: string): Promise<UserActor> {
    const res = await signInWith(h, 'acme', name);
    expect([res.status, res.headers.location]).toEqual([303, '/account']);
    const cookie = (res.headers['set-cookie'] as unknown as string[]).find((c) =>
      c.startsWith('access-token='),
    )!;
    const token = cookie.slice('access-token='.length, cookie.indexOf(';'));
    const claims = JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString());
    return {
      userId: claims.sub,
      sessionId: claims.platformSessionId,
      token,
      credential: { kind: 'session', userId: claims.sub, sessionId: claims.platformSessionId },
    };
  }

  it('a member removed by the organization stays removed when signing in with it again', async () => {
    const dana = await signIn('dana');
    expect((await h.call(dana, 'get', `/v2/orgs/${company}`)).body.role).toBe('member');
    expect((await h.call(owner, 'delete', `/v2/orgs/${company}/members/${dana.userId}`)).status).toBe(204);
    const again = await signIn('dana');
    expect(again.userId).toBe(dana.userId);
    expect((await h.call(again, 'get', `/v2/orgs/${company}`)).body.error).toBe('NotAMember');
    const members = (await h.call(owner, 'get', `/v2/orgs/${company}/members`)).body as Array<{
      userId: string;
    }>;
    expect(members.map((m) => m.userId)).not.toContain(dana.userId);
  });

  it('a member who left is not put back by their next sign-in', async () => {
    const eli = await signIn('eli');
    expect((await h.call(eli, 'delete', `/v2/orgs/${company}/members/${eli.userId}`)).status).toBe(204);
    const again = await signIn('eli');
    expect((await h.call(again, 'get', '/v2/orgs')).body).toEqual([]);
  });

  it("makes a member of whom the provider knew before it became the organization's, at their next sign-in", async () => {
    expect((await nameAcme(null)).status).toBe(200);
    const fay = await signIn('fay');
    expect((await h.call(fay, 'get', '/v2/orgs')).body).toEqual([]);
    // the operator makes it the company's provider: its people join the company, once
    expect((await nameAcme(company)).status).toBe(200);
    const again = await signIn('fay');
    expect(again.userId).toBe(fay.userId);
    expect((await h.call(again, 'get', `/v2/orgs/${company}`)).body.role).toBe('member');
    expect((await h.call(owner, 'delete', `/v2/orgs/${company}/members/${fay.userId}`)).status).toBe(204);
    expect((await h.call(await signIn('fay'), 'get', '/v2/orgs')).body).toEqual([]);
  });

  it('named again without an organization, the provider stays the company’s; an explicit null makes it the platform’s', async () => {
    // `pnpm platform sso add acme ...` again (to change its name, say) without --org
    const renamed = await nameAcme(undefined, 'Acme Single Sign-On');
    // before: it became the platform's provider (orgSlug null), and the company's people joined it no more
    expect(renamed.body).toMatchObject({ result: 'updated', orgSlug: company });
    expect((await nameAcme(undefined, 'Acme Single Sign-On')).body).toMatchObject({
      result: 'exists',
      orgSlug: company,
    });
    const gus = await signIn('gus');
    expect((await h.call(gus, 'get', `/v2/orgs/${company}`)).body.role).toBe('member');

    expect((await nameAcme(null)).body).toMatchObject({ result: 'updated', orgSlug: null });
    expect((await nameAcme()).body).toMatchObject({ result: 'exists', orgSlug: null });
    expect((await h.call(await signIn('hal'), 'get', '/v2/orgs')).body).toEqual([]);
    expect((await nameAcme('no-such-org')).status).toBe(404);
    expect((await nameAcme()).body).toMatchObject({ result: 'exists', orgSlug: null });
  });
});
