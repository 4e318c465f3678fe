import { createInProcessBus } from '@platform/bus';
import { type JwksUpdatedEvent, Subjects } from '@platform/contracts';
import { ManualClock } from '@platform/kernel';
import { createEmbeddedStore } from '@platform/store';
import { describeWithNats, tempDir, waitFor } from '@platform/testkit';
import jwt from 'jsonwebtoken';
import {
  type AuthHarness,
  INTERNAL_SECRET,
  kidOf,
  publishedKids,
  severalMoreKeyChecks,
  startAuth,
  startAuthPair,
  verifyWithJwks,
} from './helpers';

const DAY = 86_400_000;
const env = {
  ACCESS_TOKENS_MAX_AGE: String(7 * 86_400),
  JWKS_PUBLISH_DELAY_SECONDS: '120',
  JWKS_CHECK_INTERVAL_MS: '40',
};

const loginToken = async (h: AuthHarness): Promise<string> => (await h.newUser()).token;
const revoke = (h: AuthHarness, kid: string, secret: string | null = INTERNAL_SECRET) => {
  const req = h.http.post(`/internal/signing-keys/${kid}/revoke`);
  return secret === null ? req : req.set('x-platform-internal-secret', secret);
};
const list = async (h: AuthHarness) =>
  (await h.http.get('/internal/signing-keys').set('x-platform-internal-secret', INTERNAL_SECRET)).body
    .keys as Array<Record<string, string | null>>;
const rotation = (h: AuthHarness) => h.service.context.collections.rotation.findOne({ _id: 'rotation' });

/** What someone holding the leaked private key makes: a session JWT for anyone, valid for a year. */
async function forgedWith(h: AuthHarness): Promise<string> {
  const leaked = await h.service.context.keys.signingKey();
  const now = Math.floor(h.clock.now().getTime() / 1000);
  return jwt.sign(
    {
      sub: 'victim',
      platformSessionId: 'any',
      iat: now,
      exp: now + 365 * 86_400,
      iss: h.config.JWT_ISSUER,
      aud: h.config.JWT_AUDIENCE,
    },
    leaked.key,
    { algorithm: leaked.alg as jwt.Algorithm, keyid: leaked.kid },
  );
}

describeWithNats('revoking a signing key: two auth instances, one store, one NATS', () => {
  // RSA key generation on a loaded CI machine takes seconds, and a test waits for several keys
  jest.setTimeout(120_000);
  let pair: Awaited<ReturnType<typeof startAuthPair<'gateway.jwks.updated'>>>;
  let a: AuthHarness;
  let b: AuthHarness;
  const clock = new ManualClock('2025-01-01T00:00:00Z');
  let events: typeof pair.events;
  const gatewayEvents = () => events.seen.map((e) => e.payload as JwksUpdatedEvent);

  beforeAll(async () => {
    pair = await startAuthPair({ clock, env, subjects: [Subjects.gatewayJwksUpdated] });
    ({ a, b, events } = pair);
    await waitFor(() => events.seen.length === 1, { what: 'the first key announced' });
  });
  afterAll(() => pair?.stop());

  it('revoking the signing key: a new key signs at once everywhere; the leaked one verifies nothing, is announced once', async () => {
    const [leakedKid] = await publishedKids(a);
    const honest = await loginToken(a);
    const forged = await forgedWith(a);
    const jwksBefore = (await a.http.get('/oidc/jwks')).body;
    expect(verifyWithJwks(forged, jwksBefore, a.config, clock).sub).toBe('victim');
    events.seen.length = 0;

    const revoked = await revoke(a, leakedKid!);
    expect(revoked.status).toBe(200);
    const signingKid = revoked.body.signingKid as string;
    expect(signingKid).not.toBe(leakedKid);
    expect(revoked.body).toEqual({
      kid: leakedKid,
      result: 'revoked',
      state: 'active',
      revokedAt: clock.now().toISOString(),
      signingKid,
      withdrawn: [],
    });

    // No publish delay (the clock has not moved): nothing may sign with the leaked key meanwhile.
    expect(kidOf(await loginToken(a))).toBe(signingKid);
    // The other instance hears it on NATS.
    await waitFor(async () => kidOf(await loginToken(b)) === signingKid, {
      what: 'b signing with the new key',
    });
    for (const h of [a, b]) expect(await publishedKids(h)).toEqual([signingKid]);
    const jwks = (await b.http.get('/oidc/jwks')).body;
    for (const token of [honest, forged])
      expect(() => verifyWithJwks(token, jwks, a.config, clock)).toThrow(/not in the JWKS/);

    // Gone from the store, private part included; its tombstone stays.
    expect(await a.service.context.collections.signingKeys.findOne({ _id: leakedKid })).toBeNull();
    expect(
      await a.service.context.collections.signingKeyRevocations.findOne({ _id: leakedKid }),
    ).toMatchObject({ state: 'active', revokedAt: clock.now() });

    await waitFor(() => gatewayEvents().some((e) => e.deleted.includes(leakedKid!)), { what: 'the event' });
    await severalMoreKeyChecks(a, b);
    expect(gatewayEvents()).toEqual([
      { version: 1, created: [signingKid], deleted: [leakedKid], at: expect.any(String) },
    ]);

    // Idempotent, on either instance: reported, announced again, nothing else made.
    const again = await revoke(b, leakedKid!);
    expect(again.status).toBe(200);
    expect(again.body).toMatchObject({
      kid: leakedKid,
      result: 'already_revoked',
      state: 'active',
      signingKid,
    });
    expect(await publishedKids(a)).toEqual([signingKid]);
    expect((await rotation(a))!.activeKid).toBe(signingKid);
  });

  it('lists every key with its state and dates, never key material; unknown kid 404, no secret 401', async () => {
    const listed = await list(a);
    const [signing] = await publishedKids(a);
    expect(listed[0]).toMatchObject({ kid: signing, state: 'active', revokedAt: null });
    expect(listed.find((k) => k.state === 'revoked')).toMatchObject({
      state: 'revoked',
      revokedAt: expect.any(String),
      createdAt: expect.any(String),
      activatesAt: expect.any(String),
    });
    for (const key of listed)
      expect(Object.keys(key).sort()).toEqual(
        expect.arrayContaining(['kid', 'state', 'alg', 'createdAt', 'activatesAt', 'retiredAt', 'revokedAt']),
      );
    const text = JSON.stringify(listed);
    expect(text).not.toMatch(/PRIVATE|enc:v1|"d":|"n":/);

    const unknown = await revoke(a, 'no-such-kid');
    expect(unknown.status).toBe(404);
    expect(unknown.body).toMatchObject({ error: 'SigningKeyNotFound' });
    expect((await revoke(a, signing!, null)).status).toBe(401);
    expect((await revoke(a, signing!, `${INTERNAL_SECRET}x`)).status).toBe(401);
    expect((await a.http.get('/internal/signing-keys')).status).toBe(401);
    expect(await publishedKids(a)).toEqual([signing]);
  });

  it('a pending key revoked is withdrawn and the rotation starts afresh; the signing key revoked withdraws a pending one with it', async () => {
    const [signing] = await publishedKids(a);
    // (the other instance's check may pick the rotation up, and make its key slower than the request waits for it:
    // the answer then has no pending key yet, or is 409 RotationUnderWay; asking again is harmless)
    await waitFor(
      async () => {
        const rotated = await a.http
          .post('/internal/signing-keys/rotate')
          .set('x-platform-internal-secret', INTERNAL_SECRET);
        return rotated.status === 200 && rotated.body.pendingKid !== null;
      },
      // key generation under a loaded CI machine can take seconds
      { what: 'a pending key', timeoutMs: 30_000, intervalMs: 200 },
    );
    const pending = (await rotation(a))!.pendingKid!;

    const revokedPending = await revoke(a, pending);
    expect(revokedPending.body).toMatchObject({ state: 'pending', signingKid: signing, withdrawn: [] });
    expect(await publishedKids(b)).not.toContain(pending);
    // The rotation is still due: a check starts it again with a fresh key, published before it signs.
    await waitFor(async () => ![null, pending].includes((await rotation(b))!.pendingKid), {
      what: 'a fresh pending key',
      timeoutMs: 30_000,
    });
    const fresh = (await rotation(a))!.pendingKid!;
    expect(kidOf(await loginToken(b))).toBe(signing);

    // The signing key leaks while a key is pending: both were kept in one place, both go.
    const revoked = await revoke(b, signing!);
    expect(revoked.body).toMatchObject({ state: 'active', withdrawn: [fresh] });
    const replacement = revoked.body.signingKid as string;
    expect([signing, fresh]).not.toContain(replacement);
    expect(kidOf(await loginToken(b))).toBe(replacement);
    for (const h of [a, b]) expect(await publishedKids(h)).toEqual([replacement]);
    expect(await rotation(a)).toMatchObject({ activeKid: replacement, pendingKid: null, lease: null });
    expect((await list(a)).find((k) => k.kid === fresh)).toMatchObject({
      state: 'revoked',
      revokedWith: signing,
    });
    // The rotation schedule restarts from the new key: nothing is due for 30 days.
    await severalMoreKeyChecks(a, b);
    expect(await publishedKids(a)).toEqual([replacement]);
  });

  it('revoking a retired key changes nothing else: the signing key keeps signing', async () => {
    const [signing] = await publishedKids(a);
    clock.advance(30 * DAY + 1000);
    await waitFor(async () => (await rotation(a))!.pendingKid !== null, {
      what: 'a rotation',
      timeoutMs: 30_000,
    });
    clock.advance(120_000);
    await waitFor(async () => (await rotation(a))!.activeKid !== signing, {
      what: 'its activation',
      timeoutMs: 30_000,
    });
    const next = (await rotation(a))!.activeKid!;
    expect(await publishedKids(a)).toEqual([next, signing]);

    const revoked = await revoke(a, signing!);
    expect(revoked.body).toMatchObject({ state: 'retired', signingKid: next, withdrawn: [] });
    expect(await publishedKids(b)).toEqual([next]);
    expect(kidOf(await loginToken(b))).toBe(next);
  });

  it('two instances revoking the same signing key at once make exactly one new key', async () => {
    const [signing] = await publishedKids(a);
    const [fromA, fromB] = await Promise.all([revoke(a, signing!), revoke(b, signing!)]);
    expect([fromA.status, fromB.status]).toEqual([200, 200]);
    await severalMoreKeyChecks(a, b);
    const left = await publishedKids(a);
    expect(left).toHaveLength(1);
    expect(left).not.toContain(signing);
    expect(fromA.body.signingKid).toBe(left[0]);
    expect(fromB.body.signingKid).toBe(left[0]);
    expect(await a.service.context.collections.signingKeys.count({})).toBe(1);
  });
});

describe('a revoked signing key never comes back', () => {
  it('a restarted instance neither serves nor loads it, and signs with its replacement', async () => {
    const data = tempDir('auth-revocation-restart-');
    const store = createEmbeddedStore({ dataDir: data.dir, compactionIntervalMs: 0 });
    const bus = createInProcessBus();
    const clock = new ManualClock('2025-01-01T00:00:00Z');
    const first = await startAuth({ store, bus, clock, env });
    const [leaked] = await publishedKids(first);
    const replacement = (await revoke(first, leaked!)).body.signingKid;
    await first.stop();
    const second = await startAuth({ store, bus, clock, env });
    try {
      expect(await publishedKids(second)).toEqual([replacement]);
      expect(kidOf(await loginToken(second))).toBe(replacement);
      expect((await list(second)).map((k) => [k.kid, k.state])).toEqual(
        expect.arrayContaining([
          [replacement, 'active'],
          [leaked, 'revoked'],
        ]),
      );
    } finally {
      await second.stop();
      await bus.close();
      await store.close();
      data.remove();
    }
  });

  it('a revocation cut short after its tombstone is finished by a check a lease later', async () => {
    const h = await startAuth({ env });
    try {
      const { signingKeys, signingKeyRevocations } = h.service.context.collections;
      const [leaked] = await signingKeys.find({});
      // an instance wrote the tombstone, then stopped
      await signingKeyRevocations.insertOne({
        _id: leaked!._id,
        alg: leaked!.alg,
        state: 'active',
        createdAt: leaked!.createdAt,
        activatesAt: leaked!.activatesAt,
        retiredAt: null,
        revokedAt: h.clock.now(),
      });
      // out of the JWKS from the tombstone on
      expect(await publishedKids(h)).not.toContain(leaked!._id);
      // a lease later, no instance can still be working on it: a check finishes it
      h.clock.advance(60_000);
      await waitFor(async () => (await signingKeys.findOne({ _id: leaked!._id })) === null, {
        what: 'the key deleted',
      });
      const active = (await rotation(h))!.activeKid;
      expect(active).not.toBe(leaked!._id);
      expect(await publishedKids(h)).toEqual([active]);
      expect(kidOf(await loginToken(h))).toBe(active);
    } finally {
      await h.stop();
    }
  });
});
