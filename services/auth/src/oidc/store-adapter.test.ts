import { ManualClock, silentLogger } from '@platform/kernel';
import { createEmbeddedStore, type Store } from '@platform/store';
import { waitFor } from '@platform/testkit';
import { errors } from 'oidc-provider';
import { OidcClients } from './clients';
import { deleteOidcStateOf, openOidcModels, pruneLegacyExpired, storeAdapterFactory } from './store-adapter';

/** oidc-provider's Adapter contract (its lib/adapters/memory_adapter.js) on the embedded store. */
describe('oidc-provider adapter on the store', () => {
  let clock: ManualClock;
  let store: Store;
  let Adapter: ReturnType<typeof storeAdapterFactory>;
  beforeEach(() => {
    clock = new ManualClock('2026-03-01T00:00:00Z');
    store = createEmbeddedStore({ ttlSweepIntervalMs: 10, now: () => clock.now().getTime() });
    Adapter = storeAdapterFactory(store, clock, new OidcClients(store, 'a'.repeat(32)), silentLogger());
  });
  afterEach(() => store.close());

  it('keeps models whose keys are URLs or client ids with dots (a grant’s resources, a session’s clients)', async () => {
    const grant = { jti: 'g1', accountId: 'u1', resources: { 'https://api.example.com/': 'api' } };
    await new Adapter('Grant').upsert('g1', grant, 60);
    expect(await new Adapter('Grant').find('g1')).toEqual(grant);
    const session = { uid: 'uid-1', accountId: 'u1', authorizations: { 'notes.app': { grantId: 'g1' } } };
    await new Adapter('Session').upsert('s1', session, 60);
    expect(await new Adapter('Session').findByUid('uid-1')).toEqual(session);
  });

  it('never answers an expired model, and the store removes it without a read', async () => {
    const codes = new Adapter('AuthorizationCode');
    await codes.upsert('c1', { grantId: 'g1', accountId: 'u1' }, 60);
    await new Adapter('DeviceCode').upsert('d1', { userCode: 'ABCD-EFGH', grantId: 'g1' }, 60);
    expect(await new Adapter('DeviceCode').findByUserCode('ABCD-EFGH')).toMatchObject({ grantId: 'g1' });
    clock.advance(61_000);
    expect(await codes.find('c1')).toBeUndefined();
    expect(await new Adapter('DeviceCode').findByUserCode('ABCD-EFGH')).toBeUndefined();
    await waitFor(async () => (await openOidcModels(store).count({})) === 0, {
      what: 'expired models swept',
    });
  });

  it('spends a code once: the second consume (a replay, or a racing request) fails as invalid_grant', async () => {
    const codes = new Adapter('AuthorizationCode');
    await codes.upsert('c1', { grantId: 'g1' }, 60);
    await codes.consume('c1');
    expect(await codes.find('c1')).toMatchObject({ consumed: expect.any(Number) });
    await expect(codes.consume('c1')).rejects.toBeInstanceOf(errors.InvalidGrant);
  });

  it('revokeByGrantId removes every code and token of the grant, and only of that grant', async () => {
    await new Adapter('AuthorizationCode').upsert('c1', { grantId: 'g1' }, 60);
    await new Adapter('RefreshToken').upsert('r1', { grantId: 'g1' }, 60);
    await new Adapter('RefreshToken').upsert('r2', { grantId: 'g2' }, 60);
    await new Adapter('AccessToken').revokeByGrantId('g1');
    expect(await new Adapter('AuthorizationCode').find('c1')).toBeUndefined();
    expect(await new Adapter('RefreshToken').find('r1')).toBeUndefined();
    expect(await new Adapter('RefreshToken').find('r2')).toBeDefined();
  });

  it('a person’s sessions, grants and tokens go at once; records of earlier versions still read', async () => {
    const models = openOidcModels(store);
    // as earlier versions wrote them: the payload an object, expiry in epoch ms
    const legacy = (id: string, expiresAt: number) => ({
      _id: `RefreshToken:${id}`,
      model: 'RefreshToken',
      grantId: 'g0',
      uid: null,
      userCode: null,
      payload: { grantId: 'g0', accountId: 'u1' },
      expiresAt,
    });
    await models.insertOne(legacy('old', clock.now().getTime() + 60_000));
    await models.insertOne(legacy('stale', clock.now().getTime() - 1));
    expect(await new Adapter('RefreshToken').find('old')).toEqual({ grantId: 'g0', accountId: 'u1' });
    await pruneLegacyExpired(store, clock);
    expect(await models.findOne({ _id: 'RefreshToken:stale' })).toBeNull();

    await new Adapter('Session').upsert('s1', { uid: 'x', accountId: 'u1' }, 60);
    await new Adapter('Grant').upsert('g1', { accountId: 'u1' }, 60);
    await new Adapter('Grant').upsert('g2', { accountId: 'u2' }, 60);
    await deleteOidcStateOf(store, 'u1');
    expect((await models.find({})).map((d) => d._id)).toEqual(['Grant:g2']);
  });
});
