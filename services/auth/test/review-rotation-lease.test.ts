import { createInProcessBus } from '@platform/bus';
import { ManualClock } from '@platform/kernel';
import { createEmbeddedStore } from '@platform/store';
import { tempDir, waitFor } from '@platform/testkit';
import {
  type AuthHarness,
  INTERNAL_SECRET,
  kidOf,
  publishedKids,
  severalMoreKeyChecks,
  startAuth,
  verifyWithJwks,
} from './helpers';
import { storeWithInsertGate } from './store-gate';

const DAY = 86_400_000;
/** the rotation lease, as key-rotation.ts takes it */
const LEASE_MS = 60_000;
/** the publish delay: shorter than the lease, so a pending key falls due while a lease is held */
const PUBLISH_DELAY_MS = 30_000;
const MAX_TOKEN_AGE_S = 7 * 86_400;
const env = {
  ACCESS_TOKENS_MAX_AGE: String(MAX_TOKEN_AGE_S),
  JWKS_PUBLISH_DELAY_SECONDS: String(PUBLISH_DELAY_MS / 1000),
};

const loginToken = async (h: AuthHarness): Promise<string> => (await h.newUser()).token;
const internal = (h: AuthHarness, method: 'get' | 'post', path: string) =>
  h.http[method](path).set('x-platform-internal-secret', INTERNAL_SECRET);
/** `pnpm platform keys list` on `h`: each kid with its state and dates. */
const listed = async (h: AuthHarness): Promise<Array<Record<string, string | null>>> =>
  (await internal(h, 'get', '/internal/signing-keys')).body.keys;
/** Whether a token verifies with what `h` publishes at /oidc/jwks now (what an edge fetches). */
const verifies = async (h: AuthHarness, token: string): Promise<boolean> => {
  const jwks = (await h.http.get('/oidc/jwks')).body;
  try {
    verifyWithJwks(token, jwks, h.config, h.clock);
    return true;
  } catch {
    return false;
  }
};

/**
 * Two auth instances over one store and one bus, under a clock the test moves: `checker` checks its keys every
 * 40 ms; `other` checks only when asked (an operator's command reaches it), and its store writes can be held by a
 * gate. A rotation has committed `pending` beside the signing key `active`; it signs `PUBLISH_DELAY_MS` later.
 */
async function twoInstancesWithPendingKey() {
  const clock = new ManualClock('2025-01-01T00:00:00Z');
  const data = tempDir('auth-rotation-lease-');
  const store = createEmbeddedStore({
    dataDir: data.dir,
    compactionIntervalMs: 0,
    now: () => clock.now().getTime(),
  });
  const otherGate = storeWithInsertGate(store);
  const bus = createInProcessBus();
  const checker = await startAuth({ store, bus, clock, env: { ...env, JWKS_CHECK_INTERVAL_MS: '40' } });
  const other = await startAuth({
    store: otherGate.store,
    bus,
    clock,
    env: { ...env, JWKS_CHECK_INTERVAL_MS: '3600000' },
  });
  const { collections } = checker.service.context;
  const rotation = async () => (await collections.rotation.findOne({ _id: 'rotation' }))!;
  const [active] = await publishedKids(checker);
  clock.advance(30 * DAY + 1_000);
  const pending = await waitFor(async () => (await rotation()).pendingKid, {
    what: "the checker's rotation: a pending key",
    timeoutMs: 30_000,
  });
  const activatesAt = (await rotation()).pendingActivatesAt!;
  const stop = async () => {
    await Promise.allSettled([checker.stop(), other.stop()]);
    await bus.close();
    await store.close();
    data.remove();
  };
  return {
    clock,
    collections,
    checker,
    other,
    otherGate,
    rotation,
    active: active!,
    pending,
    activatesAt,
    stop,
  };
}

describe('a pending signing key that falls due while an instance holds the rotation lease', () => {
  // RSA key generation on a loaded machine takes seconds, and each test waits for several keys
  jest.setTimeout(120_000);
  let env: Awaited<ReturnType<typeof twoInstancesWithPendingKey>>;
  beforeEach(async () => {
    env = await twoInstancesWithPendingKey();
  });
  afterEach(() => env.stop());

  it('a lease left by an instance killed while holding it: the key signs by the clock, is listed as signing, rotate now is 409; the record activates it once the lease runs out', async () => {
    const { clock, collections, checker, other, rotation, active, pending, activatesAt } = env;
    // An instance claimed the lease (as a repair or a revocation does) and was killed before giving it back.
    const before = await rotation();
    const leaseUntil = new Date(clock.now().getTime() + LEASE_MS);
    await collections.rotation.findOneAndUpdate(
      { _id: 'rotation', version: before.version },
      { $set: { version: before.version + 1, lease: { owner: 'auth-killed', until: leaseUntil } } },
    );

    // The pending key's activation instant passes inside the lease.
    clock.advance(PUBLISH_DELAY_MS + 1_000);
    expect(clock.now() < leaseUntil).toBe(true);
    await severalMoreKeyChecks(checker);
    expect(await rotation()).toMatchObject({ activeKid: active, pendingKid: pending });
    // Every instance signs with it, and the JWKS an edge fetches verifies what it signs.
    for (const h of [checker, other]) {
      const token = await loginToken(h);
      expect(kidOf(token)).toBe(pending);
      expect(await verifies(h, token)).toBe(true);
    }
    // `keys list` names the key that signs, and the one it replaced retired at the activation instant (before: the
    // record's view, the signing key listed as pending and the replaced one as active, for as long as the lease).
    const removeAfter = new Date(activatesAt.getTime() + (MAX_TOKEN_AGE_S + 300) * 1000).toISOString();
    const whileLeased = await listed(other);
    expect(whileLeased.map((k) => [k.kid, k.state])).toEqual([
      [pending, 'active'],
      [active, 'retired'],
    ]);
    expect(whileLeased[1]).toMatchObject({ retiredAt: activatesAt.toISOString(), removeAfter });

    // Rotate now: the lease's holder may still change the keys, so the answer is busy and nothing is started
    // (before: 200 "a key is pending already", naming as pending the key that already signs).
    const busy = await internal(other, 'post', '/internal/signing-keys/rotate');
    expect(busy.status).toBe(409);
    expect(busy.body).toMatchObject({ error: 'RotationUnderWay' });
    expect(await rotation()).toMatchObject({
      activeKid: active,
      pendingKid: pending,
      lease: { owner: 'auth-killed' },
    });

    // The lease runs out: the next check records the activation from its instant, not from when it writes.
    clock.advance(LEASE_MS);
    await waitFor(async () => (await rotation()).activeKid === pending, { what: 'the recorded activation' });
    await severalMoreKeyChecks(checker);
    expect(await rotation()).toMatchObject({
      activeKid: pending,
      pendingKid: null,
      nextRotationAt: new Date(activatesAt.getTime() + 30 * DAY),
    });
    expect(await collections.signingKeys.findOne({ _id: active })).toMatchObject({
      retiredAt: activatesAt,
      removeAfter: new Date(removeAfter),
    });
    // Neither retired as a leftover nor replaced by a rotation: the same two keys, listed as before.
    expect(await listed(other)).toEqual(whileLeased);
    for (const h of [checker, other]) expect(await publishedKids(h)).toEqual([pending, active]);
    expect(kidOf(await loginToken(other))).toBe(pending);
  });

  it('a revocation killed as it withdraws the pending key that fell due under its lease: the key is withdrawn, never kept as a leftover', async () => {
    const { clock, collections, checker, other, otherGate, rotation, active, pending } = env;
    // An operator revokes the signing key on `other`; its replacement is made under the lease, not yet inserted.
    const insert = otherGate.gate('signing_keys');
    let reached = false;
    void insert.arrived.then(() => {
      reached = true;
    });
    void other.service.context.keys.revoke(active).catch(() => undefined);
    await waitFor(() => reached, { what: "the revocation's new key", timeoutMs: 30_000 });

    // The pending key falls due inside the lease: the checker signs with it by the clock.
    clock.advance(PUBLISH_DELAY_MS + 1_000);
    await severalMoreKeyChecks(checker);
    const pendingToken = await loginToken(checker);
    expect(kidOf(pendingToken)).toBe(pending);

    // The revocation goes on and is killed as it writes the pending key's tombstone (withdrawn with the leaked one).
    const withdrawal = otherGate.gate('signing_key_revocations', (doc) => doc._id === pending);
    let killed = false;
    void withdrawal.arrived.then(() => {
      killed = true;
    });
    insert.release();
    await waitFor(() => killed, { what: 'the revocation writing the withdrawal', timeoutMs: 30_000 });
    await severalMoreKeyChecks(checker);

    // A lease later the revocation cut short is finished by the checker.
    clock.advance(LEASE_MS + 1_000);
    await severalMoreKeyChecks(checker);
    await waitFor(async () => ![active, pending].includes((await rotation()).activeKid!), {
      what: 'a new signing key',
    });
    await severalMoreKeyChecks(checker);
    // The pending key leaked with the signing key: it verifies nothing, whatever it signed meanwhile (before: the
    // revocation had committed without it, and the checker retired it as a leftover, kept verifying for 7 days).
    expect(await collections.signingKeyRevocations.findOne({ _id: pending })).toMatchObject({
      state: 'pending',
      revokedWith: active,
    });
    expect(await collections.signingKeys.findOne({ _id: pending })).toBeNull();
    expect(await publishedKids(checker)).not.toContain(pending);
    expect(await verifies(checker, pendingToken)).toBe(false);
    const signing = (await rotation()).activeKid!;
    const token = await loginToken(checker);
    expect(kidOf(token)).toBe(signing);
    expect(await verifies(checker, token)).toBe(true);
    expect((await listed(checker)).find((k) => k.kid === pending)).toMatchObject({
      state: 'revoked',
      revokedWith: active,
    });
  });
});
