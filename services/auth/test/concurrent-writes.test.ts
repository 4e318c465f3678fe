import type { Collection, Doc, Filter, Store } from '@platform/store';
import { createEmbeddedStore } from '@platform/store';
import { tempDir } from '@platform/testkit';
import { type AuthHarness, startAuth } from './helpers';
import { storeWithInsertGate } from './store-gate';

/**
 * A store whose `findOne` on one collection, for the filters `armed` picks, waits until `parties` such reads are
 * under way: every racer reads before any of them writes, the interleaving that a busy store (or several
 * instances) produces now and then, made certain.
 */
function storeWithReadBarrier(store: Store, collection: string) {
  let armed: { parties: number; matches: (filter: Filter) => boolean } | null = null;
  let waiting: Array<() => void> = [];
  const barrier = async (filter: Filter) => {
    if (!armed?.matches(filter)) return;
    await new Promise<void>((resolve) => {
      waiting.push(resolve);
      if (waiting.length >= armed!.parties) {
        for (const go of waiting) go();
        waiting = [];
        armed = null;
      }
    });
  };
  const wrapped = new Map<string, Collection<Doc>>();
  const wrap = <T extends Doc>(inner: Collection<T>): Collection<T> =>
    new Proxy(inner, {
      get(target, prop) {
        if (prop === 'findOne')
          return async (filter: Filter) => {
            await barrier(filter);
            return target.findOne(filter);
          };
        const value = Reflect.get(target, prop, target);
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
  return {
    store: {
      ...store,
      collection<T extends Doc>(name: string, indexes?: Parameters<Store['collection']>[1]) {
        const inner = store.collection<T>(name, indexes);
        if (name !== collection) return inner;
        if (!wrapped.has(name)) wrapped.set(name, wrap(inner) as unknown as Collection<Doc>);
        return wrapped.get(name) as unknown as Collection<T>;
      },
    } as Store,
    arm(parties: number, matches: (filter: Filter) => boolean) {
      armed = { parties, matches };
    },
  };
}

describe('auth under concurrent requests', () => {
  let h: AuthHarness;
  let raced: ReturnType<typeof storeWithReadBarrier>;
  const folder = tempDir('auth-races-');
  const store = createEmbeddedStore({ dataDir: folder.dir, compactionIntervalMs: 0 });
  beforeAll(async () => {
    raced = storeWithReadBarrier(store, 'workspace_members');
    h = await startAuth({ store: raced.store });
  });
  afterAll(async () => {
    await h.stop();
    await store.close(); // the harness closes only a store it made: its timers would write into a removed folder
    folder.remove();
  });

  it('adds a workspace member once when the same PUT races: one 201, the other a change of role, no 500', async () => {
    const owner = await h.newUser();
    const other = await h.newUser();
    expect((await h.call(owner, 'post', '/v2/orgs', { slug: 'racing-ws', name: 'Racing' })).status).toBe(201);
    const added = await h.call(owner, 'post', '/v2/orgs/racing-ws/members', {
      userId: other.userId,
      role: 'member',
    });
    expect(added.status).toBe(201);
    const workspaceId = (await h.call(owner, 'post', '/v2/workspaces', { name: 'Racing' })).body.id;
    // both PUTs read "not a member yet" before either inserts
    raced.arm(2, (filter) => filter.userId === other.userId);
    const replies = await Promise.all(
      ['editor', 'viewer'].map((role) =>
        h.call(owner, 'put', `/v2/workspaces/${workspaceId}/members/${other.userId}`, { role }),
      ),
    );
    expect(replies.map((r) => r.status).sort()).toEqual([200, 201]);
    const members = await h.call(owner, 'get', `/v2/workspaces/${workspaceId}/members`);
    const theirs = members.body.filter((m: { userId: string }) => m.userId === other.userId);
    expect(theirs).toHaveLength(1);
    // the one answered last is the role stored
    expect(['editor', 'viewer']).toContain(theirs[0].role);
  });

  /** An organization with a workspace its owner owns, `admin` administers, and `member` edits. */
  const workspaceWithAnEditor = async (slug: string) => {
    const owner = await h.newUser();
    const admin = await h.newUser();
    const member = await h.newUser();
    expect((await h.call(owner, 'post', '/v2/orgs', { slug, name: 'Racing roles' })).status).toBe(201);
    for (const { userId } of [admin, member]) {
      const joined = await h.call(owner, 'post', `/v2/orgs/${slug}/members`, { userId, role: 'member' });
      expect(joined.status).toBe(201);
    }
    const workspaceId = (await h.call(owner, 'post', '/v2/workspaces', { name: 'Racing roles' })).body.id;
    const members = `/v2/workspaces/${workspaceId}/members`;
    expect((await h.call(owner, 'put', `${members}/${admin.userId}`, { role: 'admin' })).status).toBe(201);
    expect((await h.call(owner, 'put', `${members}/${member.userId}`, { role: 'editor' })).status).toBe(201);
    const roleOf = async () =>
      (await h.call(owner, 'get', members)).body.find((m: { userId: string }) => m.userId === member.userId)
        ?.role as string | undefined;
    return { owner, admin, member, members, roleOf };
  };
  const statusesOf = (replies: Array<{ status: number; body: { error?: string } }>) =>
    replies.map((r) => (r.status === 409 ? `409 ${r.body.error}` : String(r.status))).sort();

  it('an admin demoting an editor the owner makes an owner at that moment does not take the owner role away', async () => {
    const { owner, admin, member, members, roleOf } = await workspaceWithAnEditor('racing-roles');
    // both PUTs read "editor" before either writes
    raced.arm(2, (filter) => filter.userId === member.userId);
    const [promoted, demoted] = await Promise.all([
      h.call(owner, 'put', `${members}/${member.userId}`, { role: 'owner' }),
      h.call(admin, 'put', `${members}/${member.userId}`, { role: 'viewer' }),
    ]);
    // the role each one checked is the role it changed: the later one is refused, and may try again
    expect(statusesOf([promoted, demoted])).toEqual(['200', '409 ConcurrentUpdate']);
    expect(await roleOf()).toBe(promoted.status === 200 ? 'owner' : 'viewer');
  });

  it('an admin removing an editor the owner makes an owner at that moment: one of them is refused', async () => {
    const { owner, admin, member, members, roleOf } = await workspaceWithAnEditor('racing-removal');
    raced.arm(2, (filter) => filter.userId === member.userId);
    const [promoted, removed] = await Promise.all([
      h.call(owner, 'put', `${members}/${member.userId}`, { role: 'owner' }),
      h.call(admin, 'delete', `${members}/${member.userId}`),
    ]);
    expect(statusesOf([promoted, removed])).toEqual(
      promoted.status === 200 ? ['200', '409 ConcurrentUpdate'] : ['204', '409 ConcurrentUpdate'],
    );
    expect(await roleOf()).toBe(promoted.status === 200 ? 'owner' : undefined);
  });
});

describe('an organization member whose role changes while another request changes it', () => {
  let h: AuthHarness;
  let raced: ReturnType<typeof storeWithReadBarrier>;
  const folder = tempDir('auth-member-races-');
  const store = createEmbeddedStore({ dataDir: folder.dir, compactionIntervalMs: 0 });
  beforeAll(async () => {
    raced = storeWithReadBarrier(store, 'memberships');
    h = await startAuth({ store: raced.store });
  });
  afterAll(async () => {
    await h.stop();
    await store.close();
    folder.remove();
  });

  /** An organization its owner owns, a `managers` member may manage the members of, and `member` belongs to. */
  const orgWithAMember = async (slug: string) => {
    const owner = await h.newUser();
    const manager = await h.newUser();
    const member = await h.newUser();
    expect((await h.call(owner, 'post', '/v2/orgs', { slug, name: 'Racing members' })).status).toBe(201);
    const managers = await h.call(owner, 'put', `/v2/orgs/${slug}/roles/managers`, {
      permissions: ['members:read', 'members:manage', 'roles:read', 'workspaces:create', 'models:read'],
    });
    expect(managers.status).toBe(201);
    for (const [{ userId }, role] of [
      [manager, 'managers'],
      [member, 'member'],
    ] as const) {
      expect((await h.call(owner, 'post', `/v2/orgs/${slug}/members`, { userId, role })).status).toBe(201);
    }
    const roleOf = async () =>
      (await h.call(owner, 'get', `/v2/orgs/${slug}/members`)).body.find(
        (m: { userId: string }) => m.userId === member.userId,
      )?.role as string | undefined;
    return { owner, manager, member, roleOf };
  };
  const statusesOf = (replies: Array<{ status: number; body: { error?: string } }>) =>
    replies.map((r) => (r.status === 409 ? `409 ${r.body.error}` : String(r.status))).sort();

  it('a manager making a member a guest as the owner makes them an owner does not take the owner role away', async () => {
    const { owner, manager, member, roleOf } = await orgWithAMember('racing-members');
    // both read "member" before either writes
    raced.arm(2, (filter) => filter.userId === member.userId);
    const [promoted, demoted] = await Promise.all([
      h.call(owner, 'post', '/v2/orgs/racing-members/members', { userId: member.userId, role: 'owner' }),
      h.call(manager, 'post', '/v2/orgs/racing-members/members', { userId: member.userId, role: 'guest' }),
    ]);
    expect(statusesOf([promoted, demoted])).toEqual(['200', '409 ConcurrentUpdate']);
    expect(await roleOf()).toBe(promoted.status === 200 ? 'owner' : 'guest');
  });

  it('a manager removing a member as the owner makes them an owner: one of them is refused', async () => {
    const { owner, manager, member, roleOf } = await orgWithAMember('racing-member-removal');
    raced.arm(2, (filter) => filter.userId === member.userId);
    const [promoted, removed] = await Promise.all([
      h.call(owner, 'post', '/v2/orgs/racing-member-removal/members', {
        userId: member.userId,
        role: 'owner',
      }),
      h.call(manager, 'delete', `/v2/orgs/racing-member-removal/members/${member.userId}`),
    ]);
    expect(statusesOf([promoted, removed])).toEqual(
      promoted.status === 200 ? ['200', '409 ConcurrentUpdate'] : ['204', '409 ConcurrentUpdate'],
    );
    expect(await roleOf()).toBe(promoted.status === 200 ? 'owner' : undefined);
  });
});

describe('a custom role deleted while it is being given', () => {
  let h: AuthHarness;
  const folder = tempDir('auth-role-race-');
  const gated = storeWithInsertGate(createEmbeddedStore({ dataDir: folder.dir, compactionIntervalMs: 0 }));
  beforeAll(async () => {
    h = await startAuth({ store: gated.store });
  });
  afterAll(async () => {
    await h.stop();
    await gated.store.close();
    folder.remove();
  });

  it('no member is left holding a role that no longer exists (a namesake made later would give it its permissions)', async () => {
    const owner = await h.newUser();
    const newcomer = await h.newUser();
    expect((await h.call(owner, 'post', '/v2/orgs', { slug: 'role-race', name: 'Race' })).status).toBe(201);
    const role = await h.call(owner, 'put', '/v2/orgs/role-race/roles/readers', {
      permissions: ['models:read'],
    });
    expect(role.status).toBe(201);
    // the membership is held at its insert, after its role was found, while the role is deleted
    const held = gated.gate('memberships', (doc) => (doc as { userId?: string }).userId === newcomer.userId);
    const adding = h.call(owner, 'post', '/v2/orgs/role-race/members', {
      userId: newcomer.userId,
      role: 'readers',
    });
    await held.arrived;
    expect((await h.call(owner, 'delete', '/v2/orgs/role-race/roles/readers')).status).toBe(204);
    held.release();
    const added = await adding;
    expect([added.status, added.body.error]).toEqual([409, 'RoleNotFound']);
    const members = await h.call(owner, 'get', '/v2/orgs/role-race/members');
    expect(members.body.map((m: { role: string }) => m.role)).toEqual(['owner']);
  });
});
