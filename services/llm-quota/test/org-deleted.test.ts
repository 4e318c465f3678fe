import { type Bus, createInProcessBus } from '@platform/bus';
import { Subjects } from '@platform/contracts';
import { ManualClock } from '@platform/kernel';
import { waitFor } from '@platform/testkit';
import request from 'supertest';
import { quotaCollections } from '../src/data/collections';
import { counterId } from '../src/domain/windows';
import { INTERNAL_SECRET_HEADER } from '../src/routes/internal';
import { edgeHeaders, principal, type QuotaServiceHandle, SECRET, startQuotaService } from './support';

/** `auth.org.deleted`: llm-quota stops serving a deleted organization's settings and keeps its usage. */
describe('an organization auth deleted', () => {
  let bus: Bus;
  let clock: ManualClock;
  let quota: QuotaServiceHandle;
  const internal = { [INTERNAL_SECRET_HEADER]: SECRET };
  const admin = (org: string) =>
    edgeHeaders(principal({ org, role: 'owner', permissions: ['models:read', 'quotas:manage'] }), clock);

  beforeEach(async () => {
    bus = createInProcessBus();
    clock = new ManualClock('2025-03-15T12:00:30Z');
    quota = await startQuotaService({ bus, clock });
  });
  afterEach(async () => {
    await quota.stop();
    await bus.close();
  });

  const deleted = (orgSlug: string) =>
    bus.publish(Subjects.orgDeleted, {
      version: 1,
      orgId: `id-${orgSlug}`,
      orgSlug,
      at: clock.now().toISOString(),
    });

  it('is no longer served, to its administrators, the gateway or operators; the gateways drop their copy', async () => {
    const app = quota.service.handler;
    expect(
      (await request(app).patch('/v1/quotas/settings').set(admin('acme')).send({ policy: 'soft_downgrade' }))
        .status,
    ).toBe(200);
    const changed: string[] = [];
    bus.subscribe(
      Subjects.llmQuotaSettingsChanged,
      (e) => void changed.push((e as { orgSlug: string }).orgSlug),
    );
    await deleted('acme');
    await waitFor(
      async () =>
        (await request(app).get('/internal/orgs/acme/gateway-settings').set(internal)).status === 404,
    );
    const gateway = await request(app).get('/internal/orgs/acme/gateway-settings').set(internal);
    expect(gateway.body).toMatchObject({ error: 'OrgDeleted', message: 'Organization acme was deleted' });
    expect((await request(app).get('/internal/orgs/acme/quota-settings').set(internal)).status).toBe(404);
    expect(
      (await request(app).put('/internal/orgs/acme/plan').set(internal).send({ plan: 'free' })).status,
    ).toBe(404);
    expect((await request(app).get('/v1/quotas/settings').set(admin('acme'))).status).toBe(404);
    expect(
      (await request(app).patch('/v1/quotas/settings').set(admin('acme')).send({ policy: 'hard_block' }))
        .status,
    ).toBe(404);
    expect((await request(app).get('/v1/quotas/usage').set(admin('acme'))).status).toBe(404);
    expect(changed).toContain('acme');
    // another organization is untouched
    expect((await request(app).get('/v1/quotas/usage').set(admin('other'))).status).toBe(200);
  });

  it('keeps the usage it counted (billing records), and learns of organizations it never saw', async () => {
    const { counters } = quotaCollections(quota.store);
    const month = counterId({ orgSlug: 'acme' }, 'month', new Date('2025-03-01T00:00:00Z'));
    await counters.insertOne({
      _id: month,
      orgSlug: 'acme',
      userId: null,
      window: 'month',
      start: new Date('2025-03-01T00:00:00Z'),
      requests: 3,
      tokens: 300,
      prompt_tokens: 200,
      completion_tokens: 100,
      cost_micros: 750_000,
      lastRequestAt: clock.now(),
      refreshedAt: clock.now(),
    });
    await deleted('acme');
    await deleted('never-seen');
    await deleted('acme');
    const { settings } = quotaCollections(quota.store);
    await waitFor(async () => Boolean((await settings.findOne({ _id: 'never-seen' }))?.deletedAt));
    expect((await settings.findOne({ _id: 'acme' }))?.deletedAt).toBeInstanceOf(Date);
    expect(await counters.findOne({ _id: month })).toMatchObject({ tokens: 300 });
    expect(
      (await request(quota.service.handler).get('/internal/orgs/never-seen/gateway-settings').set(internal))
        .status,
    ).toBe(404);
  });
});
