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
  beforeAll(async () => {
    raced = storeWithReadBarrier(
      createEmbeddedStore({ dataDir: folder.dir, compactionIntervalMs: 0 }),
      'workspace_members',
    );
    h = await startAuth({ store: raced.store });
  });
  afterAll(async () => {
    await h.stop();
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
