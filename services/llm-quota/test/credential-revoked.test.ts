import { type CredentialRevokedEvent, Subjects } from '@platform/contracts';
import { waitFor } from '@platform/testkit';
import request from 'supertest';
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
