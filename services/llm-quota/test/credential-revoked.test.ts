import { type CredentialRevokedEvent, Subjects } from '@platform/contracts';
import { ManualClock } from '@platform/kernel';
import { createEmbeddedStore, type Store } from '@platform/store';
import { waitFor } from '@platform/testkit';
import request from 'supertest';
import { type QuotaCollections, quotaCollections } from '../src/data/collections';
import { SettingsRepository } from '../src/data/settings-repo';
import { edgeHeaders, principal, quotaServiceForEachTest } from './support';

/** `auth.credential.revoked`: the quota entries of a revoked key or a deleted user go (decision 0117). */
describe('a credential auth revoked', () => {
  const world = quotaServiceForEachTest('2025-03-15T12:00:30Z');
  const admin = (org: string) =>
    edgeHeaders(
      principal({ org, role: 'owner', permissions: ['models:read', 'quotas:manage'] }),
      world.clock,
    );
  const settingsOf = async (org: string) =>
    (await request(world.quota.service.handler).get('/v1/quotas/settings').set(admin(org))).body;
  const revoked = (kind: CredentialRevokedEvent['kind'], id: string) =>
    world.bus.publish(Subjects.credentialRevoked, {
      version: 1,
      kind,
      id,
      at: world.clock.now().toISOString(),
    });

  it("takes a revoked key's limits and a deleted user's overrides out of every organization, and says so", async () => {
    for (const org of ['acme', 'beta']) {
      const res = await request(world.quota.service.handler)
        .patch('/v1/quotas/settings')
        .set(admin(org))
        .send({
          org_user_quotas: {
            overrides: { 'user-gone': { rpm: 1 }, 'user-kept': { rpm: 2 } },
            by_api_key: { 'key-gone': { monthly_tokens: 10 }, 'key-kept': { rpm: 3 } },
          },
          models: { by_api_key: { 'key-gone': ['mock/chat'], 'key-kept': ['mock/chat'] } },
        });
      expect(res.status).toBe(200);
    }
    const changed: string[] = [];
    world.bus.subscribe(
      Subjects.llmQuotaSettingsChanged,
      (e) => void changed.push((e as { orgSlug: string }).orgSlug),
    );

    await revoked('org_api_key', 'key-gone');
    await revoked('user', 'user-gone');
    // another kind of credential, or an id no entry could have, changes nothing
    await revoked('access_token', 'key-kept');
    await revoked('org_api_key', 'key.with.dot');
    await waitFor(
      async () => (await settingsOf('beta')).org_user_quotas.overrides['user-gone'] === undefined,
      { what: 'the entries to go' },
    );
    for (const org of ['acme', 'beta']) {
      const settings = await settingsOf(org);
      expect(settings.org_user_quotas).toEqual({
        overrides: { 'user-kept': { rpm: 2 } },
        by_role: {},
        by_api_key: { 'key-kept': { rpm: 3 } },
      });
      // the key's allowed models too (decision 0118)
      expect(settings.models.by_api_key).toEqual({ 'key-kept': ['mock/chat'] });
    }
    // the gateways drop their copy of each organization, once per change
    await waitFor(() => changed.length === 4, { what: 'the settings changes' });
    expect(changed.sort()).toEqual(['acme', 'acme', 'beta', 'beta']);
  });
});

/**
 * Decision 0118: a revoked key's `models.by_api_key` entry is removed with a new revision, so a PATCH computed from the
 * settings before the removal (it writes the governance whole) computes again instead of writing the entry back.
 */
describe("a revoked key's allowed models and a concurrent PATCH", () => {
  let store: Store;
  let c: QuotaCollections;
  const clock = new ManualClock('2025-03-15T12:00:30Z');
  beforeEach(() => {
    store = createEmbeddedStore();
    c = quotaCollections(store);
  });
  afterEach(() => store.close());

  it('a revocation landing between the PATCH reading the settings and writing them is not undone', async () => {
    const repo = new SettingsRepository(c, clock, 'roomy');
    await repo.patch('acme', { models: { by_api_key: { gone: ['m1'], kept: ['m2'] } } }, 'user:admin', 10);
    // the PATCH's guarded write (filtered on the revision it read) finds the revocation done first
    let revokeBeforeWrite = true;
    const settings = new Proxy(c.settings, {
      get(target, prop, receiver) {
        if (prop !== 'findOneAndUpdate') return Reflect.get(target, prop, receiver);
        return async (...args: Parameters<typeof target.findOneAndUpdate>) => {
          if (revokeBeforeWrite && 'revision' in (args[0] as object)) {
            revokeBeforeWrite = false;
            expect(await repo.forget('by_api_key', 'gone')).toEqual(['acme']);
          }
          return target.findOneAndUpdate(...args);
        };
      },
    });
    const racing = new SettingsRepository({ ...c, settings }, clock, 'roomy');
    const { settings: after } = await racing.patch(
      'acme',
      { models: { allowed: ['m1', 'm2'] } },
      'user:admin',
      10,
    );
    expect(revokeBeforeWrite).toBe(false);
    expect(after.models?.allowed).toEqual(['m1', 'm2']);
    expect(after.models?.by_api_key).toEqual({ kept: ['m2'] });
    expect((await repo.get('acme')).models?.by_api_key).toEqual({ kept: ['m2'] });
  });
});
