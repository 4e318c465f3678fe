import { ManualClock, silentLogger, Unavailable } from '@platform/kernel';
import { PrincipalResolver, TRUST_WITHOUT_BUS_MS } from './principal-resolver';

/**
 * auth's introspection: a member of `acme` only; an organization named in the path that is not hers gives no context.
 * A token in `revoked` is refused (401); while `state.down`, auth cannot be reached.
 */
function fakeAuth() {
  const calls: Array<{ token: string; orgSlug?: string }> = [];
  const revoked = new Set<string>();
  const state = { down: false };
  const doFetch = (async (_url: string, init: RequestInit) => {
    const body = JSON.parse(String(init.body)) as { credential: { token: string }; orgSlug?: string };
    calls.push({ token: body.credential.token, orgSlug: body.orgSlug });
    if (state.down) throw new TypeError('fetch failed');
    if (revoked.has(body.credential.token)) return new Response(null, { status: 401 });
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
  return { calls, doFetch, revoked, state };
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

describe('the edge remembering principals while the bus is away', () => {
  it('asks auth again about an answer older than a few seconds, so a revocation the bus could not bring is seen', async () => {
    const clock = new ManualClock('2026-11-24T10:00:00Z');
    const { calls, doFetch, revoked } = fakeAuth();
    const resolver = resolverWith(doFetch, clock);
    expect(await resolver.resolve(token('alice'), null)).not.toBeNull();
    expect(await resolver.resolve(token('bob'), null)).not.toBeNull();

    resolver.busAway();
    clock.advance(TRUST_WITHOUT_BUS_MS - 1);
    await resolver.resolve(token('alice'), null);
    expect(calls).toHaveLength(2); // still trusted

    revoked.add('alice'); // the event announcing it is lost with the bus
    clock.advance(1);
    expect(await resolver.resolve(token('alice'), null)).toBeNull();
    expect(await resolver.resolve(token('bob'), null)).not.toBeNull();
    expect(calls).toHaveLength(4);
    await resolver.resolve(token('bob'), null); // the new answer is trusted for a few seconds in turn
    expect(calls).toHaveLength(4);
  });

  it('answers 503 rather than an old answer when auth cannot be reached either', async () => {
    const clock = new ManualClock('2026-11-24T10:00:00Z');
    const { doFetch, state } = fakeAuth();
    const resolver = resolverWith(doFetch, clock);
    await resolver.resolve(token('alice'), null);
    resolver.busAway();
    state.down = true;
    clock.advance(TRUST_WITHOUT_BUS_MS);
    await expect(resolver.resolve(token('alice'), null)).rejects.toBeInstanceOf(Unavailable);
    state.down = false;
    expect(await resolver.resolve(token('alice'), null)).not.toBeNull();
  });

  it('forgets every answer once when the bus reconnects: what was published meanwhile was missed', async () => {
    const clock = new ManualClock('2026-11-24T10:00:00Z');
    const { calls, doFetch, revoked } = fakeAuth();
    const resolver = resolverWith(doFetch, clock);
    resolver.busAway();
    await resolver.resolve(token('alice'), null); // answered while the bus was away
    revoked.add('alice');
    resolver.clear(); // the bus reconnected
    expect(resolver.size).toBe(0);
    expect(await resolver.resolve(token('alice'), null)).toBeNull();
    expect(calls).toHaveLength(2);

    // answered after the reconnection: the watch hearing the bus again a moment later drops nothing more
    await resolver.resolve(token('bob'), null);
    resolver.busBack();
    expect(resolver.size).toBe(1);
    // with the bus there, an answer is trusted for its whole cache life again
    clock.advance(30_000);
    await resolver.resolve(token('bob'), null);
    expect(calls).toHaveLength(3);
  });

  it('keeps its answers when the bus was only slow to answer (no reconnection): nothing was missed', async () => {
    const clock = new ManualClock('2026-11-24T10:00:00Z');
    const { calls, doFetch } = fakeAuth();
    const resolver = resolverWith(doFetch, clock);
    for (let i = 0; i < 100; i++) await resolver.resolve(token(`caller-${i}`), null);
    resolver.busAway(); // a ping answered late: a busy bus, or a busy edge
    resolver.busBack();
    expect(resolver.size).toBe(100);
    clock.advance(TRUST_WITHOUT_BUS_MS + 10_000);
    for (let i = 0; i < 100; i++) await resolver.resolve(token(`caller-${i}`), null);
    expect(calls).toHaveLength(100); // no caller was asked of auth again
  });
});
