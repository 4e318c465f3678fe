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
/** the publish delay: shorter than the rotation lease (60 s), so a key falls due while a revocation holds it */
const PUBLISH_DELAY_MS = 30_000;
const env = {
  ACCESS_TOKENS_MAX_AGE: String(7 * 86_400),
  JWKS_PUBLISH_DELAY_SECONDS: String(PUBLISH_DELAY_MS / 1000),
};

const loginToken = async (h: AuthHarness): Promise<string> => (await h.newUser()).token;
const revoke = (h: AuthHarness, kid: string) =>
  h.http.post(`/internal/signing-keys/${kid}/revoke`).set('x-platform-internal-secret', INTERNAL_SECRET);
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
