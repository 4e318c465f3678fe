import { type Bus, createInProcessBus } from '@platform/bus';
import { Subjects } from '@platform/contracts';
import { ManualClock } from '@platform/kernel';
import { tempDir, waitFor } from '@platform/testkit';
import request from 'supertest';
import { INTERNAL_SECRET_HEADER } from '../src/routes/internal';
import {
  adminHeaders,
  edgeHeaders,
  principal,
  type QuotaServiceHandle,
  SECRET,
  startQuotaService,
} from './support';

describe('quota settings: administrators (PATCH /v1/quotas/settings) and operators (internal API)', () => {
  let bus: Bus;
  let clock: ManualClock;
  let quota: QuotaServiceHandle;
  const admin = () => adminHeaders(clock);
  const patch = (body: unknown, headers = admin()) =>
    request(quota.service.handler)
      .patch('/v1/quotas/settings')
      .set(headers)
      .send(body as object);
  const usage = (headers = edgeHeaders(principal(), clock)) =>
    request(quota.service.handler).get('/v1/quotas/usage').set(headers);
  const internal = () => ({ [INTERNAL_SECRET_HEADER]: SECRET });

  beforeEach(async () => {
    bus = createInProcessBus();
    clock = new ManualClock('2025-03-15T12:00:30Z');
    quota = await startQuotaService({ bus, clock });
  });
  afterEach(async () => {
    await quota.stop();
    await bus.close();
  });

  describe('administrators', () => {
    it('need quotas:manage in the active organization (400 without one, 403 without the permission)', async () => {
      const member = edgeHeaders(principal({ permissions: ['models:read'] }), clock);
      expect((await patch({ policy: 'soft_downgrade' }, member)).status).toBe(403);
      expect((await request(quota.service.handler).get('/v1/quotas/settings').set(member)).status).toBe(403);
      const noOrg = edgeHeaders(principal({ org: null }), clock);
      expect((await patch({ policy: 'soft_downgrade' }, noOrg)).body.error).toBe('NO_ORG_CONTEXT');
      expect((await patch({ policy: 'soft_downgrade' }, {})).status).toBe(401);
      expect((await usage()).body.policy).toBe('hard_block');
    });

    it('model governance is a merge patch: members merge, null resets one member or all of it', async () => {
      const first = await patch({
        models: {
          allowed: ['gpt-4.1', 'mock/chat'],
          defaults: { completions: 'gpt-4.1' },
          downgrade: { 'gpt-4.1': 'gpt-4.1-mini', 'o3.pro': 'gpt-4.1' },
        },
      });
      expect(first.status).toBe(200);
      // model ids with dots and slashes are kept as given
      expect(first.body.models).toEqual({
        allowed: ['gpt-4.1', 'mock/chat'],
        defaults: { completions: 'gpt-4.1' },
        downgrade: { 'gpt-4.1': 'gpt-4.1-mini', 'o3.pro': 'gpt-4.1' },
        by_api_key: {},
        routing: null,
      });
      const second = await patch({
        models: { defaults: { embeddings: 'mock/embeddings' }, downgrade: { 'o3.pro': null } },
      });
      expect(second.body.models).toEqual({
        allowed: ['gpt-4.1', 'mock/chat'],
        defaults: { completions: 'gpt-4.1', embeddings: 'mock/embeddings' },
        downgrade: { 'gpt-4.1': 'gpt-4.1-mini' },
        by_api_key: {},
        routing: null,
      });
      // an organization API key's own models (decision 0118): each key's list is replaced whole, null removes it
      const keys = await patch({
        models: { by_api_key: { k1: ['mock/chat', 'mock/chat'], k2: ['gpt-4.1'] } },
      });
      expect(keys.body.models.by_api_key).toEqual({ k1: ['mock/chat'], k2: ['gpt-4.1'] });
      const replaced = await patch({ models: { by_api_key: { k1: [], k2: null } } });
      expect(replaced.body.models.by_api_key).toEqual({ k1: [] });
      expect(replaced.body.models.allowed).toEqual(['gpt-4.1', 'mock/chat']);
      expect((await patch({ models: { by_api_key: null } })).body.models.by_api_key).toEqual({});
      // lists grow patch by patch, each under the body limit, never past the governance's own bound (1 MiB)
      const list = (key: string) => Array.from({ length: 1_200 }, (_, i) => `${key}/${i}/${'x'.repeat(180)}`);
      for (const key of ['k1', 'k2', 'k3', 'k4'])
        expect((await patch({ models: { by_api_key: { [key]: list(key) } } })).status).toBe(200);
      const grown = await patch({ models: { by_api_key: { k5: list('k5') } } });
      expect(grown.status).toBe(400);
      expect(grown.body.details.issues[0]).toMatchObject({
        field: 'models',
        message: expect.stringMatching(/^models may take at most 1024 KiB/),
      });
      expect((await patch({ models: { by_api_key: null } })).body.models.by_api_key).toEqual({});
      for (const body of [
        { models: { by_api_key: { 'key.with.dot': ['mock/chat'] } } },
        { models: { by_api_key: { k1: 'mock/chat' } } },
        { models: { by_api_key: { k1: [''] } } },
      ]) {
        const refused = await patch(body);
        expect(refused.status).toBe(400);
        expect(refused.body.details.issues[0].field).toContain('models.by_api_key');
      }
      expect((await patch({ models: { allowed: null } })).body.models.allowed).toBeNull();
      expect((await patch({ models: null })).body.models).toEqual({
        allowed: null,
        defaults: {},
        downgrade: {},
        by_api_key: {},
        routing: null,
      });
      const bad = await patch({ models: { allowed: 'everything' } });
      expect(bad.status).toBe(400);
      expect(bad.body.code).toBe('INVALID_BODY');
    });

    it("the whole governance is held to 1 MiB: the downgrade map and the allowed list too, not only the keys' lists", async () => {
      // the downgrade map merges patch by patch, each under the body limit
      const downgrade = (batch: number) =>
        Object.fromEntries(
          Array.from({ length: 1_000 }, (_, i) => [`m/${batch}/${i}/${'x'.repeat(180)}`, 'mock/chat']),
        );
      const statuses: number[] = [];
      for (let batch = 0; batch < 6; batch++)
        statuses.push((await patch({ models: { downgrade: downgrade(batch) } })).status);
      expect(statuses.slice(0, 4)).toEqual([200, 200, 200, 200]);
      expect(statuses.slice(4)).toEqual([400, 400]);
      const stored = await request(quota.service.handler).get('/v1/quotas/settings').set(admin());
      expect(Buffer.byteLength(JSON.stringify(stored.body.models))).toBeLessThan(1024 * 1024);
      // keys' lists beside an allowed list that alone fits: together past the bound
      expect((await patch({ models: { downgrade: null } })).status).toBe(200);
      const ids = (key: string) => Array.from({ length: 1_200 }, (_, i) => `${key}/${i}/${'x'.repeat(180)}`);
      for (const key of ['k1', 'k2', 'k3', 'k4'])
        expect((await patch({ models: { by_api_key: { [key]: ids(key) } } })).status).toBe(200);
      const allowed = await patch({ models: { allowed: ids('a') } });
      expect(allowed.status).toBe(400);
      expect(allowed.body.details.issues[0]).toMatchObject({ field: 'models' });
    });

    it('refuse a model id the catalogue can never hold (a space, a control character, auto), naming the field', async () => {
      await patch({ models: { allowed: ['gpt-4o'], defaults: { completions: 'gpt-4o' } } });
      const typos: Array<[unknown, string]> = [
        // a list pasted from a spreadsheet: the organization would be left without gpt-4o
        [{ models: { allowed: ['gpt-4o '] } }, 'models.allowed.0'],
        [{ models: { allowed: ['gpt-4o', 'mock\u0000chat'] } }, 'models.allowed.1'],
        [{ models: { defaults: { completions: ' gpt-4o' } } }, 'models.defaults.completions'],
        // requests name the default and the routing with these: a model of that name could never be reached
        [{ models: { defaults: { completions: 'auto' } } }, 'models.defaults.completions'],
        [{ models: { downgrade: { 'gpt-4o': 'default' } } }, 'models.downgrade.gpt-4o'],
        [{ models: { downgrade: { 'gpt 4o': 'mock/chat' } } }, 'models.downgrade.gpt 4o'],
        [{ models: { by_api_key: { k1: ['mock/'] } } }, 'models.by_api_key.k1.0'],
        [
          {
            models: {
              routing: {
                strategy: 'rules',
                rules: [{ condition: 'prompt_tokens', operator: '>', threshold: 1, model: 'mock//chat' }],
              },
            },
          },
          'models.routing.rules.0.model',
        ],
      ];
      for (const [body, field] of typos) {
        const res = await patch(body);
        expect(res.status).toBe(400);
        expect(res.body).toMatchObject({ code: 'INVALID_BODY', details: { issues: [{ field }] } });
      }
      const stored = await request(quota.service.handler).get('/v1/quotas/settings').set(admin());
      expect(stored.body.models).toMatchObject({
        allowed: ['gpt-4o'],
        defaults: { completions: 'gpt-4o' },
        downgrade: {},
        by_api_key: {},
        routing: null,
      });
      // an entry stored before ids were checked can still be removed on its own
      await quota.store
        .collection('org_quota_settings')
        .updateOne({ _id: 'acme' }, { $push: { 'models.downgrade': { from: 'gpt 4o', to: 'gpt-4o' } } });
      const removed = await patch({ models: { downgrade: { 'gpt 4o': null } } });
      expect(removed.status).toBe(200);
      expect(removed.body.models.downgrade).toEqual({});
    });

    it('the gateway reads policy, limits, per-user quotas, governance and the month through the internal API', async () => {
      await patch({ models: { allowed: ['mock/chat'] }, policy: 'soft_downgrade' });
      const res = await request(quota.service.handler)
        .get('/internal/orgs/acme/gateway-settings')
        .set(INTERNAL_SECRET_HEADER, SECRET);
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({
        orgSlug: 'acme',
        policy: 'soft_downgrade',
        plan: { name: 'free', currency: 'USD' },
        limits: { 'llm.rpm': expect.any(Number), 'llm.monthly_tokens': expect.any(Number) },
        per_user_defaults: { rpm: expect.any(Number) },
        models: { allowed: ['mock/chat'] },
        month: { tokens: 0, cost: 0 },
      });
      expect((await request(quota.service.handler).get('/internal/orgs/acme/gateway-settings')).status).toBe(
        401,
      );
    });

    it('set the policy and per-user quotas, which the usage report then shows', async () => {
      const res = await patch({
        policy: 'soft_downgrade',
        org_user_quotas: {
          overrides: { 'user-1': { rpm: 5, tpm: 5_000 } },
          by_role: { member: { rpm: 10 } },
        },
      });
      expect(res.status).toBe(200);
      expect(res.body).toEqual({
        orgSlug: 'acme',
        plan: 'free',
        policy: 'soft_downgrade',
        org_user_quotas: {
          overrides: { 'user-1': { rpm: 5, tpm: 5_000 } },
          by_role: { member: { rpm: 10 } },
          by_api_key: {},
        },
        models: { allowed: null, defaults: {}, downgrade: {}, by_api_key: {}, routing: null },
        updated_at: '2025-03-15T12:00:30.000Z',
        updated_by: 'user:admin-1',
      });
      const report = (await usage()).body;
      expect(report).toMatchObject({ policy: 'soft_downgrade', org_user_quotas: res.body.org_user_quotas });
      expect(report.user.enforced).toEqual([
        expect.objectContaining({ key: 'llm.rpm', scope: 'user', source: 'override', limit: 5 }),
        expect.objectContaining({ key: 'llm.tpm', scope: 'user', source: 'override', limit: 5_000 }),
      ]);
      // another member: the role's rpm, the plan's tpm
      const other = (await usage(edgeHeaders(principal({ userId: 'user-2' }), clock))).body;
      expect(other.user.enforced).toEqual([
        expect.objectContaining({ key: 'llm.rpm', source: 'role', limit: 10 }),
        expect.objectContaining({ key: 'llm.tpm', source: 'plan', limit: 10_000 }),
      ]);
    });

    it('keep quotas for a role named constructor and a user id named toString, as for any other', async () => {
      // names every object inherits: the embedded store once dropped them silently (200, nothing kept)
      await patch({
        org_user_quotas: { overrides: { toString: { rpm: 2 } }, by_role: { constructor: { rpm: 4 } } },
      });
      const res = await patch({ org_user_quotas: { overrides: { toString: { tpm: 20 } } } });
      expect(res.body.org_user_quotas).toEqual({
        overrides: { toString: { rpm: 2, tpm: 20 } },
        by_role: { constructor: { rpm: 4 } },
        by_api_key: {},
      });
      const odd = (await usage(edgeHeaders(principal({ userId: 'toString' }), clock))).body;
      expect(odd.user.enforced).toEqual([
        expect.objectContaining({ key: 'llm.rpm', source: 'override', limit: 2 }),
        expect.objectContaining({ key: 'llm.tpm', source: 'override', limit: 20 }),
      ]);
      const inRole = (await usage(edgeHeaders(principal({ userId: 'u-9', role: 'constructor' }), clock)))
        .body;
      expect(inRole.user.enforced[0]).toEqual(
        expect.objectContaining({ key: 'llm.rpm', source: 'role', limit: 4 }),
      );
    });

    it('refuse a by_role entry for a name no role can have (a role name as shown, capitalised), naming the field', async () => {
      // role slugs are auth's: lowercase, 2-40 letters, digits or -, starting with a letter
      for (const role of ['Member', 'm', 'team_a', '9lives', 'team:a']) {
        const res = await patch({ org_user_quotas: { by_role: { [role]: { rpm: 5 } } } });
        expect(res.status).toBe(400);
        expect(res.body).toMatchObject({
          code: 'INVALID_BODY',
          details: { issues: [{ field: `org_user_quotas.by_role.${role}` }] },
        });
      }
      expect((await patch({ org_user_quotas: { by_role: { 'data-team': { rpm: 5 } } } })).status).toBe(200);
      // an entry stored before role names were checked can still be removed on its own
      await quota.store
        .collection('org_quota_settings')
        .updateOne({ _id: 'acme' }, { $set: { 'org_user_quotas.by_role.Member': { rpm: 5 } } });
      const removed = await patch({ org_user_quotas: { by_role: { Member: null } } });
      expect(removed.status).toBe(200);
      expect(removed.body.org_user_quotas.by_role).toEqual({ 'data-team': { rpm: 5 } });
    });

    it('merge their changes (JSON merge patch): null removes an entry or one limit, the rest stays', async () => {
      await patch({
        org_user_quotas: {
          overrides: { a: { rpm: 1, tpm: 2 }, b: { rpm: 3 } },
          by_role: { guest: { rpm: 0 } },
          by_api_key: { k1: { rpm: 5, tpm: 50 } },
        },
      });
      await patch({ org_user_quotas: { overrides: { c: { tpm: 9 } } } });
      const res = await patch({
        org_user_quotas: {
          overrides: { a: { tpm: null }, b: null },
          by_role: { guest: { rpm: null } },
          by_api_key: { k1: { rpm: null } },
        },
      });
      expect(res.body.org_user_quotas).toEqual({
        overrides: { a: { rpm: 1 }, c: { tpm: 9 } },
        by_role: {},
        by_api_key: { k1: { tpm: 50 } },
      });
      expect(res.body.policy).toBe('hard_block');
      const read = await request(quota.service.handler).get('/v1/quotas/settings').set(admin());
      expect(read.body).toEqual(res.body);

      // null on a whole member takes it back to its default
      await patch({ policy: 'soft_downgrade', org_user_quotas: { by_role: { guest: { rpm: 1 } } } });
      const oneMap = await patch({ policy: null, org_user_quotas: { overrides: null } });
      expect(oneMap.status).toBe(200);
      expect(oneMap.body.policy).toBe('hard_block');
      expect(oneMap.body.org_user_quotas).toEqual({
        overrides: {},
        by_role: { guest: { rpm: 1 } },
        by_api_key: { k1: { tpm: 50 } },
      });
      const all = await patch({ org_user_quotas: null });
      expect(all.body.org_user_quotas).toEqual({ overrides: {}, by_role: {}, by_api_key: {} });
    });

    it('a change that changes nothing (`{}`, no body, the values held) answers the settings as they stand: not rewritten, not announced', async () => {
      const announced: string[] = [];
      bus.subscribe(
        Subjects.llmQuotaSettingsChanged,
        (e) => void announced.push((e as { orgSlug: string }).orgSlug),
      );
      const before = await patch({
        policy: 'soft_downgrade',
        org_user_quotas: { overrides: { u1: { rpm: 5 } } },
        models: { allowed: ['mock/chat'], downgrade: { 'gpt-4.1': 'mock/chat' } },
      });
      expect(before.status).toBe(200);
      clock.advance(60_000);
      const other = edgeHeaders(
        principal({ userId: 'another-admin', permissions: ['quotas:manage'] }),
        clock,
      );
      const { policy, org_user_quotas, models } = before.body;
      for (const body of [
        {},
        undefined,
        { org_user_quotas: {} },
        { models: {} },
        { org_user_quotas: { by_role: null, overrides: { gone: null } } },
        // what a configuration tool sends on every run: the settings as it last read them
        { policy, org_user_quotas, models },
      ]) {
        const empty = await patch(body, other);
        expect(empty.status).toBe(200);
        expect(empty.body).toEqual(before.body);
      }
      const read = await request(quota.service.handler).get('/v1/quotas/settings').set(admin());
      expect(read.body).toEqual(before.body);
      // a real change after them is announced; the bus delivers in order, so by then an empty one's would be too
      await patch({ policy: null });
      await waitFor(() => announced.length >= 2, { what: 'the settings changes' });
      expect(announced).toEqual(['acme', 'acme']);
    });

    it('get a 400 naming the fields for an invalid change, and nothing is stored', async () => {
      const bad = [
        { policy: 'block_everything' },
        { org_user_quotas: { overrides: { 'user.with.dot': { rpm: 1 } } } },
        { org_user_quotas: { overrides: { u: { rpm: -1 } } } },
        { org_user_quotas: { overrides: { u: { rpm: 1.5 } } } },
        { org_user_quotas: { overrides: { u: { rpd: 1 } } } },
        { plan: 'enterprise' },
        [],
      ];
      for (const body of bad) {
        const res = await patch(body);
        expect(res.status).toBe(400);
        expect(res.body).toMatchObject({ status: 400, code: 'INVALID_BODY' });
        expect(res.body.details.issues.length).toBeGreaterThan(0);
      }
      // a malformed key says what the key should be (it said "Invalid key in record")
      for (const [body, field, message] of [
        [
          { org_user_quotas: { overrides: { 'alice@example.com': { rpm: 1 } } } },
          'org_user_quotas.overrides.alice@example.com',
          'not a user id (`userId` as GET /v2/orgs/{slug}/members answers it): 1-200 letters, digits or _ : @ + -',
        ],
        [
          { org_user_quotas: { by_api_key: { 'key id': { rpm: 1 } } } },
          'org_user_quotas.by_api_key.key id',
          'use 1-200 letters, digits or _ : @ + -',
        ],
        [
          { models: { by_api_key: { 'k.1': [] } } },
          'models.by_api_key.k.1',
          'use 1-200 letters, digits or _ : @ + -',
        ],
        [{ models: { downgrade: { '': 'mock/chat' } } }, 'models.downgrade.', 'not a model id: empty'],
      ] as const) {
        const res = await patch(body);
        expect(res.status).toBe(400);
        expect(res.body.details.issues).toEqual([{ field, message }]);
      }
      // a key a parsed record would drop without a word (an object literal cannot even say it)
      const reserved = await patch('{"org_user_quotas":{"overrides":{"__proto__":{"rpm":1}}}}', {
        ...admin(),
        'content-type': 'application/json',
      });
      expect(reserved.status).toBe(400);
      const bodyNotJson = await request(quota.service.handler)
        .patch('/v1/quotas/settings')
        .set({ ...admin(), 'content-type': 'application/json' })
        .send('{"policy":');
      expect(bodyNotJson.status).toBe(400);
      expect((await usage()).body).toMatchObject({
        policy: 'hard_block',
        org_user_quotas: { overrides: {}, by_role: {} },
      });
    });

    it('cannot hold more overrides than the configured maximum', async () => {
      await quota.stop();
      quota = await startQuotaService({ bus, clock, env: { LLM_QUOTA_MAX_USER_OVERRIDES: '2' } });
      expect((await patch({ org_user_quotas: { overrides: { a: { rpm: 1 }, b: { rpm: 1 } } } })).status).toBe(
        200,
      );
      const res = await patch({ org_user_quotas: { overrides: { c: { rpm: 1 } } } });
      expect(res.status).toBe(400);
      expect(res.body.details.issues[0].field).toBe('org_user_quotas.overrides');
      const keys = await patch({
        org_user_quotas: { by_api_key: { k1: { rpm: 1 }, k2: { rpm: 1 }, k3: { rpm: 1 } } },
      });
      expect(keys.body.details.issues[0].field).toBe('org_user_quotas.by_api_key');
      const models = await patch({ models: { by_api_key: { k1: [], k2: [], k3: [] } } });
      expect(models.status).toBe(400);
      expect(models.body.details.issues[0].field).toBe('models.by_api_key');
      expect((await patch({ models: { by_api_key: { k1: [], k2: [] } } })).status).toBe(200);
      // replacing one is fine
      expect((await patch({ org_user_quotas: { overrides: { a: null, c: { rpm: 1 } } } })).status).toBe(200);
    });

    it('can still remove or change entries of a map holding more than a maximum lowered since, never add one', async () => {
      const data = tempDir('llm-quota-lowered-');
      try {
        await quota.stop();
        quota = await startQuotaService({ bus, clock, dataDir: data.dir });
        await patch({
          org_user_quotas: { overrides: { a: { rpm: 1 }, b: { rpm: 1 }, c: { rpm: 1 } } },
          models: { by_api_key: { k1: [], k2: [], k3: [] } },
        });
        await quota.stop();
        quota = await startQuotaService({
          bus,
          clock,
          dataDir: data.dir,
          env: { LLM_QUOTA_MAX_USER_OVERRIDES: '1' },
        });
        const changed = await patch({ org_user_quotas: { overrides: { a: { rpm: 5 }, b: null } } });
        expect(changed.status).toBe(200);
        expect(changed.body.org_user_quotas.overrides).toEqual({ a: { rpm: 5 }, c: { rpm: 1 } });
        const fewerKeys = await patch({ models: { by_api_key: { k1: ['mock/chat'], k2: null } } });
        expect(fewerKeys.status).toBe(200);
        expect(fewerKeys.body.models.by_api_key).toEqual({ k1: ['mock/chat'], k3: [] });
        const added = await patch({
          org_user_quotas: { overrides: { c: null, d: { rpm: 1 }, e: { rpm: 1 } } },
        });
        expect(added.status).toBe(400);
        expect(added.body.details.issues[0]).toEqual({
          field: 'org_user_quotas.overrides',
          message:
            'org_user_quotas.overrides may hold at most 1 entries and holds 2: a change may remove or replace entries, not add more',
        });
        const addedKey = await patch({ models: { by_api_key: { k4: [] } } });
        expect(addedKey.status).toBe(400);
        expect(addedKey.body.details.issues[0].field).toBe('models.by_api_key');
        expect(addedKey.body.message).toContain('holds 2');
        const stored = await request(quota.service.handler).get('/v1/quotas/settings').set(admin());
        expect(stored.body.org_user_quotas.overrides).toEqual({ a: { rpm: 5 }, c: { rpm: 1 } });
        expect(stored.body.models.by_api_key).toEqual({ k1: ['mock/chat'], k3: [] });
        // an entry may take the place of one removed by the same change: the map does not grow
        const replaced = await patch({ org_user_quotas: { overrides: { c: null, d: { rpm: 1 } } } });
        expect(replaced.status).toBe(200);
        expect(replaced.body.org_user_quotas.overrides).toEqual({ a: { rpm: 5 }, d: { rpm: 1 } });
      } finally {
        await quota.stop();
        quota = await startQuotaService({ bus, clock });
        data.remove();
      }
    });

    it("set an organization API key's own limits, which the key's usage report shows (no plan default)", async () => {
      const key = principal({ userId: null, permissions: ['models:read'] });
      const other = principal({ userId: null, permissions: ['models:read'] });
      const res = await patch({ org_user_quotas: { by_api_key: { [key.credential.id]: { rpm: 3 } } } });
      expect(res.body.org_user_quotas.by_api_key).toEqual({ [key.credential.id]: { rpm: 3 } });
      const report = (await usage(edgeHeaders(key, clock))).body;
      expect(report.user).toBeUndefined();
      expect(report.api_key).toEqual({
        id: key.credential.id,
        enforced: [
          expect.objectContaining({
            key: 'llm.rpm',
            scope: 'api_key',
            source: 'override',
            limit: 3,
            used: 0,
          }),
        ],
      });
      // a key without an entry has no gauge of its own; a user's report has none either
      expect((await usage(edgeHeaders(other, clock))).body.api_key).toBeUndefined();
      expect((await usage()).body.api_key).toBeUndefined();
      // and the gateway reads the entry with the rest of the settings
      const read = await request(quota.service.handler)
        .get('/internal/orgs/acme/gateway-settings')
        .set(internal());
      expect(read.body.org_user_quotas.by_api_key).toEqual({ [key.credential.id]: { rpm: 3 } });
    });

    it('through an organization key holding quotas:manage are recorded by the key id', async () => {
      const key = principal({ userId: null, permissions: ['quotas:manage'] });
      const res = await patch({ policy: 'soft_downgrade' }, edgeHeaders(key, clock));
      expect(res.status).toBe(200);
      expect(res.body.updated_by).toBe(`org_api_key:${key.credential.id}`);
    });
  });

  describe('operators', () => {
    it('need the internal secret', async () => {
      for (const headers of [{}, { [INTERNAL_SECRET_HEADER]: 'wrong' }, admin()]) {
        const res = await request(quota.service.handler)
          .put('/internal/orgs/acme/plan')
          .set(headers)
          .send({ plan: 'team' });
        expect(res.status).toBe(401);
      }
      expect((await request(quota.service.handler).get('/internal/plans')).status).toBe(401);
    });

    it('list the plans and assign one to an organization, which its usage report then shows', async () => {
      const plans = await request(quota.service.handler).get('/internal/plans').set(internal());
      expect(plans.body.default).toBe('free');
      expect(Object.keys(plans.body.plans)).toEqual(['free', 'team', 'enterprise']);
      expect(
        (await request(quota.service.handler).get('/internal/orgs/acme/quota-settings').set(internal()))
          .status,
      ).toBe(404);

      const res = await request(quota.service.handler)
        .put('/internal/orgs/acme/plan')
        .set(internal())
        .send({ plan: 'team' });
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({
        orgSlug: 'acme',
        plan: 'team',
        policy: 'hard_block',
        updated_by: 'operator',
      });
      const report = (await usage()).body;
      expect(report.plan.name).toBe('team');
      expect(report.enforced.map((g: { limit: number }) => g.limit)).toEqual([600, 400_000, 50_000_000, 500]);
      expect(report.per_user_defaults).toEqual({ rpm: 60, tpm: 60_000 });
      const read = await request(quota.service.handler)
        .get('/internal/orgs/acme/quota-settings')
        .set(internal());
      expect(read.body.plan).toBe('team');
    });

    it('get a 400 for an unknown plan or a malformed organization slug', async () => {
      const unknown = await request(quota.service.handler)
        .put('/internal/orgs/acme/plan')
        .set(internal())
        .send({ plan: 'platinum' });
      expect(unknown.status).toBe(400);
      expect(unknown.body.details.issues[0]).toMatchObject({ field: 'plan' });
      const slug = await request(quota.service.handler)
        .put('/internal/orgs/Not_A_Slug/plan')
        .set(internal())
        .send({ plan: 'team' });
      expect(slug.status).toBe(400);
    });

    it('keep an organization on its plan when the default plan changes later', async () => {
      const data = tempDir('llm-quota-default-');
      try {
        await quota.stop();
        quota = await startQuotaService({ bus, clock, dataDir: data.dir });
        expect((await usage()).body.plan.name).toBe('free');
        await quota.stop();
        quota = await startQuotaService({
          bus,
          clock,
          dataDir: data.dir,
          env: { LLM_QUOTA_DEFAULT_PLAN: 'team' },
        });
        expect((await usage()).body.plan.name).toBe('free');
        expect((await usage(edgeHeaders(principal({ org: 'newco' }), clock))).body.plan.name).toBe('team');
      } finally {
        await quota.stop();
        quota = await startQuotaService({ bus, clock });
        data.remove();
      }
    });
  });
});
