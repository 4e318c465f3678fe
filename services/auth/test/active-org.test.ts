import { Subjects } from '@platform/contracts';
import { waitFor } from '@platform/testkit';
import { type AuthHarness, recordEvents, startAuth, type UserActor } from './helpers';

describe('active organization (spec 5.2 rule 7)', () => {
  let h: AuthHarness;
  let user: UserActor;
  beforeAll(async () => {
    h = await startAuth();
    user = await h.newUser();
    // Two organizations, joined in this order.
    await h.call(user, 'post', '/v2/orgs', { slug: 'first-org', name: 'First' });
    h.clock.advance(1000);
    await h.call(user, 'post', '/v2/orgs', { slug: 'second-org', name: 'Second' });
  });
  afterAll(() => h.stop());

  const activeOf = async (
    actor: UserActor | ReturnType<AuthHarness['accessToken']>,
    pathOrg: string | null = null,
  ) =>
    (await h.service.context.introspection.resolve(actor.credential, pathOrg, 'r')).principal.session.org
      ?.slug ?? null;

  it('(c) without a choice, the first membership is active', async () => {
    expect(await activeOf(user)).toBe('first-org');
    const me = await h.call(user, 'get', '/v2/me');
    expect(me.body).toMatchObject({ activeOrgSlug: 'first-org', activeOrgSource: 'first_membership' });
    expect(me.body.memberships).toEqual([
      { orgSlug: 'first-org', orgName: 'First', role: 'owner', joinedAt: expect.any(String) },
      { orgSlug: 'second-org', orgName: 'Second', role: 'owner', joinedAt: expect.any(String) },
    ]);
  });

  it('(b) PUT /v2/user/active-org persists the choice on the session, publishes, and /v2/me shows it', async () => {
    const events = recordEvents(h.bus, [Subjects.membershipChanged]);
    const res = await h.call(user, 'put', '/v2/user/active-org', { orgSlug: 'second-org' });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ activeOrgSlug: 'second-org', activeOrgSource: 'session' });
    expect(
      (await h.service.context.collections.sessions.findOne({ _id: user.sessionId }))!.activeOrgSlug,
    ).toBe('second-org');
    expect(await activeOf(user)).toBe('second-org');
    await waitFor(() => events.seen.length === 1, { what: 'membership event for edge caches' });
    expect(events.seen[0]!.payload).toMatchObject({ orgSlug: 'second-org', userId: user.userId });
    events.stop();
  });

  it('(a) the organization in the path wins over the persisted choice', async () => {
    expect(await activeOf(user, 'first-org')).toBe('first-org');
    const read = await h.call(user, 'get', '/v2/orgs/first-org');
    expect(read.status).toBe(200);
  });

  it('a path naming an organization the user is not in resolves to no organization', async () => {
    const other = await h.newUser();
    await h.call(other, 'post', '/v2/orgs', { slug: 'private-org', name: 'Private' });
    expect(await activeOf(user, 'private-org')).toBeNull();
  });

  it('switching to an organization the caller is not a member of is 403; unknown body is 400', async () => {
    const res = await h.call(user, 'put', '/v2/user/active-org', { orgSlug: 'private-org' });
    expect(res.status).toBe(403);
    expect((await h.call(user, 'put', '/v2/user/active-org', {})).status).toBe(400);
    expect(await activeOf(user)).toBe('second-org');
  });

  it('null clears the choice; a persisted organization the user left falls back to the first membership', async () => {
    expect((await h.call(user, 'put', '/v2/user/active-org', { orgSlug: null })).body.activeOrgSlug).toBe(
      'first-org',
    );
    const mover = await h.newUser();
    await h.call(user, 'post', '/v2/orgs/first-org/members', { userId: mover.userId, role: 'member' });
    h.clock.advance(1000);
    await h.call(user, 'post', '/v2/orgs/second-org/members', { userId: mover.userId, role: 'member' });
    await h.call(mover, 'put', '/v2/user/active-org', { orgSlug: 'second-org' });
    expect(await activeOf(mover)).toBe('second-org');
    await h.call(mover, 'delete', `/v2/orgs/second-org/members/${mover.userId}`);
    expect(await activeOf(mover)).toBe('first-org');
  });

  it('each session keeps its own choice; an access token keeps one of its own', async () => {
    const tokenBody = (
      await h.call(user, 'post', '/v2/user/accessTokens', {
        name: 'pinned',
        expiresAt: new Date(h.clock.now().getTime() + 86_400_000).toISOString(),
      })
    ).body;
    const token = h.accessToken(tokenBody.token);
    expect(await activeOf(token)).toBe('first-org');
    expect((await h.call(token, 'put', '/v2/user/active-org', { orgSlug: 'second-org' })).status).toBe(200);
    expect(await activeOf(token)).toBe('second-org');
    expect(await activeOf(user)).toBe('first-org');
  });

  it('the principal carries the active organization’s role, permissions (never the list of memberships)', async () => {
    const { principal } = await h.service.context.introspection.resolve(user.credential, null, 'corr-1');
    expect(principal).toMatchObject({
      credential: { kind: 'session', id: user.sessionId },
      session: {
        id: user.sessionId,
        org: {
          slug: 'first-org',
          name: 'First',
          role: { slug: 'owner' },
          groups: [],
          settings: {},
          subscription: null,
        },
      },
      user: { id: user.userId, anonymous: true, role: null },
      run: { correlationId: 'corr-1', sourceWorkspaceId: null },
    });
    expect(principal.run.permissions.llm?.models?.read).toBe(true);
  });
});
