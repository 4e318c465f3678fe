import { ManualClock, silentLogger } from '@platform/kernel';
import { PrincipalResolver } from './principal-resolver';

/** auth's introspection: a member of `acme` only; an organization named in the path that is not hers gives no context. */
function fakeAuth() {
  const calls: Array<{ token: string; orgSlug?: string }> = [];
  const doFetch = (async (_url: string, init: RequestInit) => {
    const body = JSON.parse(String(init.body)) as { credential: { token: string }; orgSlug?: string };
    calls.push({ token: body.credential.token, orgSlug: body.orgSlug });
    const org =
      body.orgSlug === undefined || body.orgSlug === 'acme'
        ? { slug: 'acme', name: 'Acme', role: { slug: 'owner', permissions: [], scopes: [] } }
        : null;
    const principal = {
      credential: { kind: 'access_token', id: `id-${body.credential.token}` },
      session: { id: null, org },
      user: { id: `user-${body.credential.token}` },
      run: {},
    };
    return new Response(JSON.stringify({ principal, expiresAt: null, cacheTtlSeconds: 60 }), {
      status: 200,
      headers: { 'content-type': 'application/json' },
    });
  }) as unknown as typeof fetch;
  return { calls, doFetch };
}

function resolverWith(doFetch: typeof fetch, clock: ManualClock, maxEntries = 1_000) {
  return new PrincipalResolver({
    authUrl: 'http://auth',
    secret: 'principal-resolver-test-secret-0123456789',
    clock,
    logger: silentLogger(),
    timeoutMs: 1_000,
    maxEntries,
    maxTtlSeconds: 60,
    sessionSource: 'auth',
    fetch: doFetch,
  });
}

const token = (name: string) => ({ kind: 'access_token' as const, token: name });

describe('the edge remembering principals', () => {
  it("a client naming another organization in each request's path takes no room from other callers", async () => {
    const clock = new ManualClock('2026-11-24T10:00:00Z');
    const { calls, doFetch } = fakeAuth();
    const resolver = resolverWith(doFetch, clock, 100);
    await resolver.resolve(token('alice'), null);
    await resolver.resolve(token('alice'), 'acme');

    for (let i = 0; i < 5_000; i++) {
      const answer = await resolver.resolve(token('mallory'), `probe-${i}`);
      expect(answer?.principal.session.org).toBeNull(); // still answered: auth says who it is
    }

    expect(resolver.size).toBe(2);
    const before = calls.length;
    await resolver.resolve(token('alice'), null);
    await resolver.resolve(token('alice'), 'acme');
    expect(calls.length).toBe(before); // alice's answers were never pushed out
  });

  it('answers whose time is up leave memory without being asked for again', async () => {
    const clock = new ManualClock('2026-11-24T10:00:00Z');
    const { doFetch } = fakeAuth();
    const resolver = resolverWith(doFetch, clock);
    for (let i = 0; i < 500; i++) await resolver.resolve(token(`caller-${i}`), null);
    expect(resolver.size).toBe(500);

    clock.advance(61_000);
    await resolver.resolve(token('late'), null);
    expect(resolver.size).toBe(1);
  });
});
