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
const revoke = (h: AuthHarness, kid: string) => internal(h, 'post', `/internal/signing-keys/${kid}/revoke`);
/** `pnpm platform keys list` on `h`: each kid with its state and dates. */
const listed = async (h: AuthHarness): Promise<Array<Record<string, string | null>>> =>
  (await internal(h, 'get', '/internal/signing-keys')).body.keys;
/** Whether a token verifies with what `h` publishes at /oidc/jwks now. */
const verifies = async (h: AuthHarness, token: string): Promise<boolean> => {
  const jwks = (await h.http.get('/oidc/jwks')).body;
  try {
    verifyWithJwks(token, jwks, h.config, h.clock);
    return true;
  } catch {
    return false;
  }
};
/** A write of a gated store, held: `arrived` once it is reached, `release` lets it through. */
const heldWrite = async (gate: { arrived: Promise<void>; release: () => void }, what: string) => {
  let reached = false;
  void gate.arrived.then(() => {
    reached = true;
  });
  await waitFor(() => reached, { what, timeoutMs: 30_000 });
  return gate.release;
};

/**
 * Two auth instances over one store and one bus, under a clock the test moves: `checker` checks its keys every
 * 40 ms, so it is the one that activates a pending key when it falls due; `revoker` checks only when asked, so it
 * is the one an operator's `keys revoke` reaches. Each sees the store through its own gate, which can hold one of
 * its writes while the other instance runs. The rotation is due and a key `pending` beside the signing key
 * `active`, published `PUBLISH_DELAY_MS` before it signs.
 */
async function twoInstancesWithPendingKey() {
  const clock = new ManualClock('2025-01-01T00:00:00Z');
  const data = tempDir('auth-revocation-race-');
  const store = createEmbeddedStore({
    dataDir: data.dir,
    compactionIntervalMs: 0,
    now: () => clock.now().getTime(),
  });
  const checkerGate = storeWithInsertGate(store);
  const revokerGate = storeWithInsertGate(store);
  const bus = createInProcessBus();
  const checker = await startAuth({
    store: checkerGate.store,
    bus,
    clock,
    env: { ...env, JWKS_CHECK_INTERVAL_MS: '40' },
  });
  const revoker = await startAuth({
    store: revokerGate.store,
    bus,
    clock,
    env: { ...env, JWKS_CHECK_INTERVAL_MS: '3600000' },
  });
  // reads only: they pass the gates
  const { collections } = revoker.service.context;
  const rotation = async () => (await collections.rotation.findOne({ _id: 'rotation' }))!;
  const [active] = await publishedKids(revoker);
  clock.advance(30 * DAY + 1_000);
  const pending = await waitFor(async () => (await rotation()).pendingKid, {
    what: "the checker's rotation: a pending key",
    timeoutMs: 30_000,
  });
  const activatesAt = (await rotation()).pendingActivatesAt!;
  // An honest session of the signing key, from before anything the tests do.
  const activeToken = await loginToken(revoker);
  expect(kidOf(activeToken)).toBe(active);
  const stop = async () => {
    await Promise.allSettled([checker.stop(), revoker.stop()]);
    await bus.close();
    await store.close();
    data.remove();
  };
  return {
    clock,
    collections,
    checker,
    revoker,
    checkerGate,
    revokerGate,
    rotation,
    active: active!,
    activeToken,
    pending,
    activatesAt,
    stop,
  };
}

describe('a pending signing key and a revocation on another instance, in every order', () => {
  // RSA key generation on a loaded machine takes seconds, and each test waits for several keys
  jest.setTimeout(120_000);
  let env: Awaited<ReturnType<typeof twoInstancesWithPendingKey>>;
  beforeEach(async () => {
    env = await twoInstancesWithPendingKey();
  });
  afterEach(() => env.stop());

  it('the pending key falls due while a revocation of the signing key holds the lease: it is withdrawn, never activated', async () => {
    const { clock, collections, checker, revoker, revokerGate, rotation, active, activeToken, pending } = env;
    // The revocation has written its tombstone and taken the lease; its replacement key is made, not yet committed.
    const insert = revokerGate.gate('signing_keys');
    const answer = revoke(revoker, active).then((res) => res);
    const release = await heldWrite(insert, "the revocation's new key, made under the lease");
    expect((await rotation()).lease).toMatchObject({ owner: expect.any(String) });

    // The pending key's activation instant passes, inside the lease; the checker checks several times meanwhile.
    clock.advance(PUBLISH_DELAY_MS + 1_000);
    await severalMoreKeyChecks(checker);
    // By the clock every instance signs with the pending key from its activation instant on (decision 0010) until it
    // hears of the revocation: this token is one the revocation must leave unverifiable.
    const pendingToken = await loginToken(checker);
    expect(kidOf(pendingToken)).toBe(pending);
    // The checker left the rotation to the lease's holder (before: it activated the pending key under the lease, the
    // revocation's commit then failed, and the key it was to withdraw became the signing key, leaked with it).
    expect(await rotation()).toMatchObject({ activeKid: active, pendingKid: pending });

    release();
    const revoked = await answer;
    expect(revoked.status).toBe(200);
    const replacement = revoked.body.signingKid as string;
    expect(revoked.body).toMatchObject({
      kid: active,
      result: 'revoked',
      state: 'active',
      withdrawn: [pending],
    });
    expect([active, pending]).not.toContain(replacement);

    // Exactly one active key, alone in the store and in the JWKS; both instances sign with it.
    expect(await rotation()).toMatchObject({ activeKid: replacement, pendingKid: null, lease: null });
    expect(kidOf(await loginToken(revoker))).toBe(replacement);
    await waitFor(async () => kidOf(await loginToken(checker)) === replacement, {
      what: 'the checker signing with the new key',
    });
    await severalMoreKeyChecks(checker);
    expect(await rotation()).toMatchObject({ activeKid: replacement, pendingKid: null, lease: null });
    for (const h of [checker, revoker]) expect(await publishedKids(h)).toEqual([replacement]);
    expect((await collections.signingKeys.find({})).map((k) => k._id)).toEqual([replacement]);
    expect(await collections.signingKeyRevocations.findOne({ _id: pending })).toMatchObject({
      state: 'pending',
      revokedWith: active,
    });
    expect(await verifies(checker, await loginToken(checker))).toBe(true);
    for (const token of [activeToken, pendingToken]) expect(await verifies(checker, token)).toBe(false);
  });

  it("the checker's activation, read before the revocation and written after it, changes nothing", async () => {
    const { clock, collections, checker, revoker, checkerGate, rotation, active, pending } = env;
    // The pending key falls due: the checker's next check reads the rotation and is held before activating it.
    const activation = checkerGate.gate('signing_rotation', () => true, ['findOneAndUpdate']);
    clock.advance(PUBLISH_DELAY_MS + 1_000);
    const release = await heldWrite(activation, "the checker's activation of the pending key");

    const revoked = await revoke(revoker, active);
    expect(revoked.body).toMatchObject({ state: 'active', withdrawn: [pending] });
    const replacement = revoked.body.signingKid as string;
    release();

    await severalMoreKeyChecks(checker);
    expect(await rotation()).toMatchObject({ activeKid: replacement, pendingKid: null, lease: null });
    await waitFor(async () => kidOf(await loginToken(checker)) === replacement, {
      what: 'the checker signing with the new key',
    });
    for (const h of [checker, revoker]) expect(await publishedKids(h)).toEqual([replacement]);
    expect((await collections.signingKeys.find({})).map((k) => k._id)).toEqual([replacement]);
  });

  it('the pending key revoked while the checker is about to activate it: withdrawn, and a fresh rotation starts', async () => {
    const { clock, checker, revoker, checkerGate, rotation, active, activeToken, pending } = env;
    const activation = checkerGate.gate('signing_rotation', () => true, ['findOneAndUpdate']);
    clock.advance(PUBLISH_DELAY_MS + 1_000);
    const release = await heldWrite(activation, "the checker's activation of the pending key");

    const revoked = await revoke(revoker, pending);
    expect(revoked.body).toMatchObject({ kid: pending, state: 'pending', signingKid: active, withdrawn: [] });
    release();

    // The activation finds the document moved; the rotation is still due, so a fresh key is made and published first.
    const fresh = await waitFor(
      async () => {
        const { pendingKid } = await rotation();
        return pendingKid !== pending ? pendingKid : null;
      },
      { what: 'a fresh pending key', timeoutMs: 30_000 },
    );
    expect(await rotation()).toMatchObject({ activeKid: active });
    await waitFor(async () => kidOf(await loginToken(checker)) === active, {
      what: 'the checker signing with the active key again',
    });
    expect(kidOf(await loginToken(revoker))).toBe(active);
    for (const h of [checker, revoker]) expect(await publishedKids(h)).toEqual([fresh, active]);
    expect(await verifies(revoker, activeToken)).toBe(true);
  });

  it('the pending key revoked as the checker activates it: the revocation replaces it with a key that signs at once', async () => {
    const { clock, collections, checker, revoker, revokerGate, rotation, active, activeToken, pending } = env;
    // The revocation has written its tombstone and read the rotation; its write (drop the pending key) is held.
    const drop = revokerGate.gate('signing_rotation', () => true, ['findOneAndUpdate']);
    const answer = revoke(revoker, pending).then((res) => res);
    const release = await heldWrite(drop, 'the revocation about to drop the pending key');

    // Meanwhile the pending key falls due and the checker activates it: no lease stops that.
    clock.advance(PUBLISH_DELAY_MS + 1_000);
    await waitFor(async () => (await rotation()).activeKid === pending, {
      what: "the checker's activation",
    });
    const pendingToken = await loginToken(checker);
    expect(kidOf(pendingToken)).toBe(pending);

    release();
    const revoked = await answer;
    expect(revoked.status).toBe(200);
    const replacement = revoked.body.signingKid as string;
    expect(revoked.body).toMatchObject({ kid: pending, result: 'revoked', state: 'pending', withdrawn: [] });
    expect([active, pending]).not.toContain(replacement);

    // The key it replaced was active: a new one signs at once, and the key retired by the activation keeps verifying.
    expect(await rotation()).toMatchObject({ activeKid: replacement, pendingKid: null, lease: null });
    await waitFor(async () => kidOf(await loginToken(checker)) === replacement, {
      what: 'the checker signing with the new key',
    });
    await severalMoreKeyChecks(checker);
    expect(await rotation()).toMatchObject({ activeKid: replacement, pendingKid: null, lease: null });
    expect(kidOf(await loginToken(revoker))).toBe(replacement);
    for (const h of [checker, revoker]) expect(await publishedKids(h)).toEqual([replacement, active]);
    expect(await collections.signingKeys.findOne({ _id: pending })).toBeNull();
    expect(await verifies(checker, activeToken)).toBe(true);
    expect(await verifies(checker, await loginToken(checker))).toBe(true);
    expect(await verifies(checker, pendingToken)).toBe(false);
  });
});

describe('a pending signing key that falls due while an instance holds the rotation lease', () => {
  // RSA key generation on a loaded machine takes seconds, and each test waits for several keys
  jest.setTimeout(120_000);
  let env: Awaited<ReturnType<typeof twoInstancesWithPendingKey>>;
  beforeEach(async () => {
    env = await twoInstancesWithPendingKey();
  });
  afterEach(() => env.stop());

  it('a lease left by an instance killed while holding it: the key signs by the clock, is listed as signing, rotate now is 409; the record activates it once the lease runs out', async () => {
    const { clock, collections, checker, revoker, rotation, active, pending, activatesAt } = env;
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
    for (const h of [checker, revoker]) {
      const token = await loginToken(h);
      expect(kidOf(token)).toBe(pending);
      expect(await verifies(h, token)).toBe(true);
    }
    // `keys list` names the key that signs, and the one it replaced retired at the activation instant (before: the
    // record's view, the signing key listed as pending and the replaced one as active, for as long as the lease).
    const removeAfter = new Date(activatesAt.getTime() + (MAX_TOKEN_AGE_S + 300) * 1000).toISOString();
    const whileLeased = await listed(revoker);
    expect(whileLeased.map((k) => [k.kid, k.state])).toEqual([
      [pending, 'active'],
      [active, 'retired'],
    ]);
    expect(whileLeased[1]).toMatchObject({ retiredAt: activatesAt.toISOString(), removeAfter });

    // Rotate now: the lease's holder may still change the keys, so the answer is busy and nothing is started
    // (before: 200 "a key is pending already", naming as pending the key that already signs).
    const busy = await internal(revoker, 'post', '/internal/signing-keys/rotate');
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
    expect(await listed(revoker)).toEqual(whileLeased);
    for (const h of [checker, revoker]) expect(await publishedKids(h)).toEqual([pending, active]);
    expect(kidOf(await loginToken(revoker))).toBe(pending);
  });

  it('a revocation killed as it withdraws the pending key that fell due under its lease: the key is withdrawn, never kept as a leftover', async () => {
    const { clock, collections, checker, revoker, revokerGate, rotation, active, pending } = env;
    // An operator revokes the signing key on `revoker`; its replacement is made under the lease, not yet inserted.
    const insert = revokerGate.gate('signing_keys');
    let reached = false;
    void insert.arrived.then(() => {
      reached = true;
    });
    void revoker.service.context.keys.revoke(active).catch(() => undefined);
    await waitFor(() => reached, { what: "the revocation's new key", timeoutMs: 30_000 });

    // The pending key falls due inside the lease: the checker signs with it by the clock.
    clock.advance(PUBLISH_DELAY_MS + 1_000);
    await severalMoreKeyChecks(checker);
    const pendingToken = await loginToken(checker);
    expect(kidOf(pendingToken)).toBe(pending);

    // The revocation goes on and is killed as it writes the pending key's tombstone (withdrawn with the leaked one).
    const withdrawal = revokerGate.gate('signing_key_revocations', (doc) => doc._id === pending);
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
