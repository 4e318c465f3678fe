import { createInProcessBus } from '@platform/bus';
import { type JwksUpdatedEvent, Subjects } from '@platform/contracts';
import { ManualClock } from '@platform/kernel';
import { createEmbeddedStore } from '@platform/store';
import { describeWithNats, waitFor } from '@platform/testkit';
import jwt from 'jsonwebtoken';
import {
  type AuthHarness,
  kidOf,
  publishedKids,
  severalMoreKeyChecks,
  startAuth,
  startAuthPair,
  verifyWithJwks,
} from './helpers';

const DAY = 86_400_000;
const MAX_AGE_SECONDS = 86_400; // tokens live one day here, so the old key's removal comes before the next rotation
const PUBLISH_DELAY_SECONDS = 120;
const SKEW_SECONDS = 300;

const env = {
  ACCESS_TOKENS_MAX_AGE: String(MAX_AGE_SECONDS),
  JWKS_ROTATION_DAYS: '30',
  JWKS_PUBLISH_DELAY_SECONDS: String(PUBLISH_DELAY_SECONDS),
  JWKS_RETENTION_SKEW_SECONDS: String(SKEW_SECONDS),
  JWKS_CHECK_INTERVAL_MS: '40',
};

const loginToken = async (h: AuthHarness): Promise<string> => (await h.newUser()).token;

describeWithNats('signing-key rotation: two auth instances, one store, one NATS', () => {
  let pair: Awaited<ReturnType<typeof startAuthPair<'gateway.jwks.updated' | 'runtime.jwks.updated'>>>;
  let a: AuthHarness;
  let b: AuthHarness;
  const clock = new ManualClock('2025-01-01T00:00:00Z');
  let events: typeof pair.events;

  beforeAll(async () => {
    // Both start at once against an empty store: only one may create the first key.
    pair = await startAuthPair({
      clock,
      env,
      subjects: [Subjects.gatewayJwksUpdated, Subjects.runtimeJwksUpdated],
    });
    ({ a, b, events } = pair);
  });
  afterAll(() => pair?.stop());

  const gatewayEvents = () =>
    events.seen
      .filter((e) => e.subject === Subjects.gatewayJwksUpdated)
      .map((e) => e.payload as JwksUpdatedEvent);

  it('bootstraps exactly one key, shared by both instances and announced on both subjects', async () => {
    await severalMoreKeyChecks(a, b);
    expect(await publishedKids(a)).toHaveLength(1);
    expect(await publishedKids(b)).toEqual(await publishedKids(a));
    const [first] = await publishedKids(a);
    expect(kidOf(await loginToken(a))).toBe(first);
    expect(kidOf(await loginToken(b))).toBe(first);
    await waitFor(() => gatewayEvents().length === 1 && events.seen.length === 2, {
      what: 'bootstrap events',
    });
    expect(gatewayEvents()[0]).toEqual({ version: 1, created: [first], deleted: [], at: expect.any(String) });
    expect(events.seen.map((e) => e.subject).sort()).toEqual([
      Subjects.gatewayJwksUpdated,
      Subjects.runtimeJwksUpdated,
    ]);
  });

  it('rotates once when due, publishes before signing, keeps the old key until its tokens expired', async () => {
    const [oldKid] = await publishedKids(a);
    events.seen.length = 0;

    // 30 days later: the rotation is due on both instances.
    clock.advance(30 * DAY + 1000);
    await waitFor(async () => (await publishedKids(b)).length === 2, { what: 'a second key in the JWKS' });
    await severalMoreKeyChecks(a, b);
    const published = await publishedKids(a);
    expect(published).toHaveLength(2);
    const newKid = published.find((k) => k !== oldKid)!;
    const rotation = await a.service.context.collections.rotation.findOne({ _id: 'rotation' });
    expect(rotation).toMatchObject({ rotations: 2, activeKid: oldKid, pendingKid: newKid });
    await waitFor(() => gatewayEvents().length >= 1, { what: 'the created event' });
    expect(gatewayEvents()).toEqual([{ version: 1, created: [newKid], deleted: [], at: expect.any(String) }]);

    // Published but not yet signing: edges learn the key first. This is the old key's last token.
    const oldToken = await loginToken(a);
    expect(kidOf(oldToken)).toBe(oldKid);
    expect(kidOf(await loginToken(b))).toBe(oldKid);
    const oldExp = (jwt.decode(oldToken) as jwt.JwtPayload).exp!;

    // After the publish delay both instances sign with the new key, at the same instant.
    clock.advance(PUBLISH_DELAY_SECONDS * 1000);
    const newToken = await loginToken(b);
    expect(kidOf(newToken)).toBe(newKid);
    expect(kidOf(await loginToken(a))).toBe(newKid);
    const jwks = (await a.http.get('/oidc/jwks')).body;
    expect(verifyWithJwks(newToken, jwks, a.config, clock).sub).toBeDefined();
    expect(verifyWithJwks(oldToken, jwks, a.config, clock).sub).toBeDefined();
    await waitFor(
      async () =>
        (await a.service.context.collections.rotation.findOne({ _id: 'rotation' }))?.activeKid === newKid,
      { what: 'activation' },
    );
    await severalMoreKeyChecks(a, b);
    expect((await a.service.context.collections.rotation.findOne({ _id: 'rotation' }))!.rotations).toBe(2);

    // One second before the old key's last token expires, it still verifies against the served JWKS.
    clock.set(oldExp * 1000 - 1000);
    await severalMoreKeyChecks(a, b);
    expect(
      verifyWithJwks(oldToken, (await b.http.get('/oidc/jwks')).body, a.config, clock).sub,
    ).toBeDefined();

    // It stays until every token it signed has expired, plus the skew...
    const retired = await a.service.context.collections.signingKeys.findOne({ _id: oldKid });
    expect(retired!.removeAfter!.getTime()).toBeGreaterThanOrEqual((oldExp + SKEW_SECONDS) * 1000);
    clock.set(retired!.removeAfter!.getTime() - 1000);
    await severalMoreKeyChecks(a, b);
    expect(await publishedKids(a)).toEqual(expect.arrayContaining([oldKid, newKid]));
    expect(() => verifyWithJwks(oldToken, jwks, a.config, clock)).toThrow(/jwt expired/);
    events.seen.length = 0;

    // ...then exactly one instance removes it and says so.
    clock.advance(2000);
    await waitFor(async () => !(await publishedKids(b)).includes(oldKid), {
      what: 'the old key to leave the JWKS',
    });
    await severalMoreKeyChecks(a, b);
    expect(await publishedKids(a)).toEqual([newKid]);
    await waitFor(() => gatewayEvents().some((e) => e.deleted.length), { what: 'the deleted event' });
    await severalMoreKeyChecks(a, b);
    expect(gatewayEvents().filter((e) => e.deleted.length)).toEqual([
      { version: 1, created: [], deleted: [oldKid], at: expect.any(String) },
    ]);
    expect(
      events.seen.filter((e) => e.subject === Subjects.runtimeJwksUpdated && e.payload.deleted.length),
    ).toHaveLength(1);
  });

  it('keeps private keys in the store only, encrypted: never in the JWKS, never in a response', async () => {
    const stored = await a.service.context.collections.signingKeys.find({});
    expect(stored.length).toBeGreaterThan(0);
    for (const key of stored) {
      expect(key.privateKey).toMatch(/^enc:v1:/);
      expect(key.privateKey).not.toContain('PRIVATE KEY');
    }
    const jwksText = JSON.stringify((await a.http.get('/oidc/jwks')).body);
    for (const key of stored) expect(jwksText).not.toContain(key.privateKey.slice(40, 80));
  });
});

describe('signing keys: algorithms, encryption at rest, interrupted rotations', () => {
  it('signs with EC keys when configured (ES256), verifiable from the JWKS', async () => {
    const h = await startAuth({ env: { JWKS_KTY: 'EC', JWKS_ALG: 'ES256', JWKS_SIZE: '256' } });
    try {
      const token = await loginToken(h);
      const jwks = (await h.http.get('/oidc/jwks')).body;
      expect(jwks.keys[0]).toMatchObject({ kty: 'EC', crv: 'P-256', alg: 'ES256', use: 'sig' });
      expect(jwks.keys[0].d).toBeUndefined();
      expect(verifyWithJwks(token, jwks, h.config, h.clock).sub).toBeDefined();
    } finally {
      await h.stop();
    }
  });

  it('encrypts private keys at rest when SIGNING_KEYS_ENCRYPTION_KEY is set', async () => {
    const h = await startAuth({ env: { SIGNING_KEYS_ENCRYPTION_KEY: 'k'.repeat(40) } });
    try {
      const [key] = await h.service.context.collections.signingKeys.find({});
      expect(key!.privateKey.startsWith('enc:v1:')).toBe(true);
      expect(key!.privateKey).not.toContain('PRIVATE KEY');
      const token = await loginToken(h);
      expect(
        verifyWithJwks(token, (await h.http.get('/oidc/jwks')).body, h.config, h.clock).sub,
      ).toBeDefined();
    } finally {
      await h.stop();
    }
  });

  it('rotates early when the configured algorithm changes', async () => {
    const store = createEmbeddedStore();
    const bus = createInProcessBus();
    const clock = new ManualClock('2025-01-01T00:00:00Z');
    const first = await startAuth({ store, bus, clock });
    const [rsaKid] = await publishedKids(first);
    await first.stop();
    const second = await startAuth({
      store,
      bus,
      clock,
      env: { JWKS_KTY: 'EC', JWKS_ALG: 'ES384', JWKS_SIZE: '384', JWKS_PUBLISH_DELAY_SECONDS: '0' },
    });
    try {
      await waitFor(async () => (await publishedKids(second)).length === 2, { what: 'an EC key' });
      clock.advance(1000);
      const token = await loginToken(second);
      expect(kidOf(token)).not.toBe(rsaKid);
      expect((jwt.decode(token, { complete: true })!.header as { alg: string }).alg).toBe('ES384');
    } finally {
      await second.stop();
      await bus.close();
      await store.close();
    }
  });

  it('retires a key left behind by an instance that stopped mid-rotation', async () => {
    const h = await startAuth();
    try {
      const { signingKeys } = h.service.context.collections;
      const [active] = await signingKeys.find({});
      await signingKeys.insertOne({
        ...active!,
        _id: 'orphan-kid',
        publicJwk: { ...active!.publicJwk, kid: 'orphan-kid' },
      });
      await waitFor(async () => (await signingKeys.findOne({ _id: 'orphan-kid' }))?.retiredAt, {
        what: 'orphan retired',
      });
      const orphan = await signingKeys.findOne({ _id: 'orphan-kid' });
      expect(orphan!.removeAfter!.getTime()).toBe(
        orphan!.retiredAt!.getTime() +
          (h.config.ACCESS_TOKENS_MAX_AGE + h.config.JWKS_RETENTION_SKEW_SECONDS) * 1000,
      );
      // The active key is untouched.
      expect((await signingKeys.findOne({ _id: active!._id }))!.retiredAt).toBeNull();
    } finally {
      await h.stop();
    }
  });
});
