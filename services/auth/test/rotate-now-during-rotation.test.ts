import { createInProcessBus } from '@platform/bus';
import { ManualClock } from '@platform/kernel';
import { createEmbeddedStore } from '@platform/store';
import { tempDir, waitFor } from '@platform/testkit';
import { type AuthHarness, INTERNAL_SECRET, kidOf, publishedKids, startAuth } from './helpers';
import { storeWithInsertGate } from './store-gate';

const DAY = 86_400_000;

/**
 * Two auth instances over one store and one bus, under a clock the test moves: `maker` checks its keys every 40 ms,
 * its new keys' inserts can be held by a gate (the moment between making a key under the rotation lease and
 * committing it); `operator` checks only when asked, so it is the one an operator's `keys rotate` reaches.
 */
async function twoInstances() {
  const clock = new ManualClock('2025-01-01T00:00:00Z');
  const data = tempDir('auth-rotate-now-');
  const store = createEmbeddedStore({
    dataDir: data.dir,
    compactionIntervalMs: 0,
    now: () => clock.now().getTime(),
  });
  const gated = storeWithInsertGate(store);
  const bus = createInProcessBus();
  const maker = await startAuth({ store: gated.store, bus, clock, env: { JWKS_CHECK_INTERVAL_MS: '40' } });
  const operator = await startAuth({ store, bus, clock, env: { JWKS_CHECK_INTERVAL_MS: '3600000' } });
  const rotation = () => operator.service.context.collections.rotation.findOne({ _id: 'rotation' });
  /** holds the maker's next key between its making (under the lease) and its commit; `kid()` names it */
  const holdNextKey = async () => {
    let kid: string | undefined;
    const gate = gated.gate('signing_keys', (doc) => {
      kid = doc._id;
      return true;
    });
    let reached = false;
    void gate.arrived.then(() => {
      reached = true;
    });
    // The rotation is due: the maker's next check takes the lease and makes a key (seconds, on a loaded machine).
    clock.advance(30 * DAY + 1_000);
    await waitFor(() => reached, { what: 'the maker holding the lease, its key made', timeoutMs: 30_000 });
    expect((await rotation())!.lease).toMatchObject({ owner: expect.any(String) });
    return { kid: () => kid!, release: gate.release };
  };
  const stop = async () => {
    await Promise.allSettled([maker.stop(), operator.stop()]);
    await bus.close();
    await store.close();
    data.remove();
  };
  return { clock, maker, operator, rotation, holdNextKey, stop };
}

const rotateNow = (h: AuthHarness) =>
  h.http.post('/internal/signing-keys/rotate').set('x-platform-internal-secret', INTERNAL_SECRET);

describe('rotate now while another instance is making a key', () => {
  jest.setTimeout(120_000);
  let env: Awaited<ReturnType<typeof twoInstances>>;
  beforeEach(async () => {
    env = await twoInstances();
  });
  afterEach(() => env.stop());

  it('says a rotation is under way and starts nothing; the key being made is committed, and asking again reports it pending', async () => {
    const { maker, operator, rotation, holdNextKey } = env;
    const [signing] = await publishedKids(operator);
    const held = await holdNextKey();

    // The operator asks while the maker holds the lease: auth waits a moment for it, then answers that it is busy.
    const busy = await rotateNow(operator);
    held.release();

    // The maker's commit is not disturbed by the request: its key is pending, the lease given back (before: the
    // request moved the document, the maker's commit failed, it deleted its key and kept the lease, which under
    // this frozen clock never runs out, so no key was ever made again).
    await waitFor(async () => (await rotation())!.pendingKid !== null, {
      what: "the maker's key committed",
      timeoutMs: 15_000,
    });
    expect(await rotation()).toMatchObject({ pendingKid: held.kid(), activeKid: signing, lease: null });
    expect(busy.status).toBe(409);
    expect(busy.body).toMatchObject({
      error: 'RotationUnderWay',
      message: expect.stringMatching(/^A change of the signing keys is under way .*nothing was started/),
    });

    // Asked again: nothing more is made, and the answer names the pending key.
    const again = await rotateNow(operator);
    expect(again.status).toBe(200);
    expect(again.body).toEqual({
      started: false,
      activeKid: signing,
      pendingKid: held.kid(),
      activatesAt: expect.any(String),
    });
    expect(await publishedKids(maker)).toEqual([held.kid(), signing]);
    expect(kidOf((await maker.newUser()).token)).toBe(signing);
  });

  it('a request made as the maker commits waits for it and reports its key pending', async () => {
    const { operator, rotation, holdNextKey } = env;
    const [signing] = await publishedKids(operator);
    const held = await holdNextKey();
    const asked = rotateNow(operator).then((res) => res);
    held.release();
    const answer = await asked;
    // Either the request saw the maker's key already committed, or it waited for it: the same answer.
    expect(answer.status).toBe(200);
    expect(answer.body).toMatchObject({ started: false, activeKid: signing, pendingKid: held.kid() });
    expect(await rotation()).toMatchObject({ pendingKid: held.kid(), lease: null });
  });

  it('a rotation whose commit fails gives its lease back: the next check rotates, without waiting for the lease to run out', async () => {
    const { operator, rotation, holdNextKey } = env;
    const [signing] = await publishedKids(operator);
    const held = await holdNextKey();
    // Another writer moves the rotation document meanwhile: the maker's commit fails, and it deletes its key.
    await operator.service.context.collections.rotation.updateOne(
      { _id: 'rotation' },
      { $inc: { version: 1 } },
    );
    held.release();
    // The clock stands still: a lease left behind would stop every rotation for its 60 s (here: for ever).
    await waitFor(async () => ![null, held.kid()].includes((await rotation())!.pendingKid), {
      what: 'a key made by the next check',
      timeoutMs: 30_000,
    });
    expect(await rotation()).toMatchObject({ activeKid: signing, lease: null });
    expect(await operator.service.context.collections.signingKeys.findOne({ _id: held.kid() })).toBeNull();
  });
});
