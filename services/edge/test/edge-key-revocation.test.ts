import { Subjects } from '@platform/contracts';
import { ManualClock } from '@platform/kernel';
import { waitFor } from '@platform/testkit';
import {
  bearer,
  makeSigningKey,
  request,
  type SigningKey,
  signSession,
  startEdge,
  startUpstream,
  type TestEdge,
} from './support';

/**
 * A stand-in for auth's JWKS that answers each fetch with the keys it had when the fetch arrived, and can hold
 * the answer back: a fetch in flight while auth's keys change, as happens on a slow network.
 */
async function startJwks() {
  const state = {
    keys: [] as SigningKey[],
    fetches: 0,
    held: null as Promise<void> | null,
  };
  const upstream = await startUpstream('auth', {
    '/oidc/jwks': (_req, res) => {
      state.fetches++;
      const snapshot = JSON.stringify({ keys: state.keys.map((k) => k.jwk) });
      void (state.held ?? Promise.resolve()).then(() => {
        res.setHeader('content-type', 'application/json');
        res.end(snapshot);
      });
      return true;
    },
  });
  return { ...upstream, state };
}

describe('the edge and revoked signing keys (decision 0102)', () => {
  let auth: Awaited<ReturnType<typeof startJwks>>;
  let edge: TestEdge;
  let clock: ManualClock;
  let leaked: SigningKey;
  const status = async (token: string) =>
    (await request(edge.url, '/llm/v1/models', { headers: bearer(token) })).status;

  beforeEach(async () => {
    auth = await startJwks();
    leaked = makeSigningKey();
    auth.state.keys.push(leaked);
    clock = new ManualClock('2026-11-23T10:00:00Z');
    edge = await startEdge({
      authUrl: auth.url,
      clock,
      // the unknown-kid refetch is spent for an hour once used; the periodic refresh runs only when a test says so
      env: {
        SESSION_PRINCIPAL_SOURCE: 'jwt',
        JWKS_UNKNOWN_KID_COOLDOWN_MS: '3600000',
        JWKS_RECONCILE_INTERVAL_MS: '3600000',
      },
    });
  });
  afterEach(async () => {
    await edge.close();
    await auth.close();
  });

  it('a kid announced deleted is dropped for good: a JWKS fetched before the deletion does not bring it back', async () => {
    const token = signSession(leaked, { now: clock.now() });
    expect(await status(token)).toBe(200);
    // auth's document still lists it, as one fetched a moment before the revocation would
    const replacement = makeSigningKey();
    auth.state.keys.push(replacement);
    await edge.bus.publish(Subjects.gatewayJwksUpdated, {
      version: 1,
      created: [replacement.kid],
      deleted: [leaked.kid],
      at: clock.now().toISOString(),
    });
    await edge.service.internals.reconcile();
    expect(edge.service.internals.keys.kids).toEqual([replacement.kid]);
    expect(await status(token)).toBe(401);
    expect(await status(signSession(leaked, { now: clock.now(), sub: 'forged' }))).toBe(401);
    expect(await status(signSession(replacement, { now: clock.now() }))).toBe(200);
  });

  it('tokens of a key gone from the JWKS never spend the unknown-kid refetch a brand-new key needs', async () => {
    expect(await status(signSession(leaked, { now: clock.now() }))).toBe(200);
    // Revoked while this edge is cut off from NATS: its periodic refresh drops the key.
    const second = makeSigningKey();
    auth.state.keys.splice(0, 1, second);
    await edge.service.internals.reconcile();
    const fetches = auth.state.fetches;
    // Clients (and whoever holds the leaked key) keep sending its tokens: refused without asking auth.
    for (let i = 0; i < 3; i++) expect(await status(signSession(leaked, { now: clock.now() }))).toBe(401);
    expect(auth.state.fetches).toBe(fetches);

    // The next key is revoked too: its replacement signs at once, before this edge could have heard of it.
    const third = makeSigningKey();
    auth.state.keys.splice(0, 1, third);
    expect(await status(signSession(third, { now: clock.now() }))).toBe(200);
    expect(auth.state.fetches).toBe(fetches + 1);
  });

  it('a new kid that meets a fetch begun before its key existed gets a fetch of its own', async () => {
    let release!: () => void;
    auth.state.held = new Promise((resolve) => {
      release = resolve;
    });
    const fetches = auth.state.fetches;
    const periodic = edge.service.internals.reconcile();
    await waitFor(() => auth.state.fetches === fetches + 1, { what: 'the periodic fetch at auth' });
    // meanwhile auth revokes the signing key; its replacement signs at once
    const replacement = makeSigningKey();
    auth.state.keys.splice(0, 1, replacement);
    const keys = edge.service.internals.keys;
    const resolve = jest.spyOn(keys, 'resolveUnknown');
    const answer = status(signSession(replacement, { now: clock.now() }));
    // the token waits on the fetch in flight (the one that began before its key existed)
    await waitFor(() => resolve.mock.calls.length === 1, { what: 'the unknown kid at the edge' });
    auth.state.held = null;
    release();
    await periodic;
    expect(await answer).toBe(200);
    expect(auth.state.fetches).toBe(fetches + 2);
  });
});
