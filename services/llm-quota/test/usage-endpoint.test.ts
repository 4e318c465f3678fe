import { type Bus, createInProcessBus } from '@platform/bus';
import { Subjects } from '@platform/contracts';
import { ManualClock, PRINCIPAL_HEADER, sealPrincipal } from '@platform/kernel';
import { waitFor } from '@platform/testkit';
import request from 'supertest';
import { UsageResponseSchema } from '../src/routes/schemas';
import {
  completion,
  edgeHeaders,
  principal,
  type QuotaServiceHandle,
  SECRET,
  startQuotaService,
} from './support';

const NOW = '2025-03-15T12:00:30.000Z';

describe('GET /v1/quotas/usage', () => {
  let bus: Bus;
  let clock: ManualClock;
  let quota: QuotaServiceHandle;
  const get = (headers: Record<string, string> = edgeHeaders(principal(), clock)) =>
    request(quota.service.handler).get('/v1/quotas/usage').set(headers);
  const publish = (...events: ReturnType<typeof completion>[]) =>
    Promise.all(events.map((e) => bus.publishDurable(Subjects.llmCompletion, e)));
  const orgRequests = async (org = 'acme') => {
    const res = await get(edgeHeaders(principal({ org }), clock));
    return res.body.enforced.find((g: { key: string }) => g.key === 'llm.rpm')?.used as number;
  };

  beforeEach(async () => {
    bus = createInProcessBus();
    clock = new ManualClock(NOW);
    quota = await startQuotaService({ bus, clock });
  });
  afterEach(async () => {
    await quota.stop();
    await bus.close();
  });

  describe('authorization, in the edge order (401, 400 NO_ORG_CONTEXT, 403)', () => {
    const expectEnvelope = (body: Record<string, unknown>, status: number) => {
      expect(body).toMatchObject({ status, message: expect.any(String), error: expect.any(String) });
      expect(typeof body.requestId).toBe('string');
    };

    it('answers 401 without a principal from the edge', async () => {
      const res = await get({});
      expect(res.status).toBe(401);
      expectEnvelope(res.body, 401);
    });

    it('answers 401 to a principal not sealed with the shared secret', async () => {
      const forged = sealPrincipal(principal(), 'another-secret-another-secret-another-secret', clock);
      const res = await get({ [PRINCIPAL_HEADER]: forged, 'x-platform-user-id': 'user-1' });
      expect(res.status).toBe(401);
      expectEnvelope(res.body, 401);
    });

    it('answers 401 to a seal older than five minutes (a replayed header)', async () => {
      const headers = edgeHeaders(principal(), clock);
      clock.advance(6 * 60_000);
      expect((await get(headers)).status).toBe(401);
    });

    it('answers 400 NO_ORG_CONTEXT without an active organization, before checking the permission', async () => {
      const res = await get(edgeHeaders(principal({ org: null, permissions: [] }), clock));
      expect(res.status).toBe(400);
      expectEnvelope(res.body, 400);
      expect(res.body).toMatchObject({ error: 'NO_ORG_CONTEXT', code: 'NO_ORG_CONTEXT' });
      // a fresh user has no organization to choose: the message says how to make one
      expect(res.body.message).toContain('PUT /v2/user/active-org');
      expect(res.body.message).toContain('POST /v2/orgs');
    });

    it('answers 403 without models:read in the active organization', async () => {
      const res = await get(edgeHeaders(principal({ permissions: ['members:read'] }), clock));
      expect(res.status).toBe(403);
      expectEnvelope(res.body, 403);
      expect(res.body.details).toMatchObject({ permission: 'models:read', orgSlug: 'acme' });
    });

    it('answers 403 to an organization key restricted to one project (the endpoint is organization-wide)', async () => {
      const key = principal({ userId: null, projectId: 'proj-1' });
      expect((await get(edgeHeaders(key, clock))).status).toBe(403);
    });

    it('answers 200 to an organization API key holding models:read, without per-user gauges', async () => {
      const res = await get(edgeHeaders(principal({ userId: null }), clock));
      expect(res.status).toBe(200);
      expect(res.body.orgSlug).toBe('acme');
      expect(res.body.user).toBeUndefined();
    });
  });

  it('reports the spec 2.1 shape for a new organization: the default plan, nothing used yet', async () => {
    const res = await get();
    expect(res.status).toBe(200);
    expect(res.headers['cache-control']).toBe('no-store');
    expect(UsageResponseSchema.parse(res.body)).toBeTruthy();
    expect(res.body).toMatchObject({
      orgSlug: 'acme',
      computed_at: NOW,
      usage_refreshed_at: null,
      policy: 'hard_block',
      included: { members: 5, agents: 2, interactions: 1000, storage: 1 },
      per_user_defaults: { rpm: 20, tpm: 10_000 },
      org_user_quotas: { overrides: {}, by_role: {} },
      plan: { name: 'free', currency: 'USD' },
    });
    expect(res.body.enforced).toEqual([
      {
        key: 'llm.rpm',
        source: 'plan',
        scope: 'org',
        window: 'minute',
        limit: 60,
        used: 0,
        percent: 0,
        resets_at: '2025-03-15T12:01:00.000Z',
      },
      {
        key: 'llm.tpm',
        source: 'plan',
        scope: 'org',
        window: 'minute',
        limit: 40_000,
        used: 0,
        percent: 0,
        resets_at: '2025-03-15T12:01:00.000Z',
      },
      {
        key: 'llm.monthly_tokens',
        source: 'plan',
        scope: 'org',
        window: 'month',
        limit: 1_000_000,
        used: 0,
        percent: 0,
        resets_at: '2025-04-01T00:00:00.000Z',
      },
      {
        key: 'llm.monthly_cost',
        source: 'plan',
        scope: 'org',
        window: 'month',
        limit: 10,
        used: 0,
        percent: 0,
        resets_at: '2025-04-01T00:00:00.000Z',
      },
    ]);
    expect(res.body.user).toEqual({
      userId: 'user-1',
      role: 'member',
      enforced: [
        expect.objectContaining({ key: 'llm.rpm', scope: 'user', source: 'plan', limit: 20, used: 0 }),
        expect.objectContaining({ key: 'llm.tpm', scope: 'user', source: 'plan', limit: 10_000, used: 0 }),
      ],
    });
  });

  it('counts completion events into the gauges of their organization and user', async () => {
    await publish(
      completion({ occurredAt: '2025-03-15T12:00:05Z' }),
      completion({
        occurredAt: '2025-03-15T12:00:20Z',
        cost: 1.5,
        usage: { prompt_tokens: 900, completion_tokens: 100, total_tokens: 1000 },
      }),
      completion({ userId: 'user-2' }),
      completion({ userId: undefined }),
      completion({ orgSlug: 'other-org' }),
      // an earlier minute of the same month: monthly gauges only
      completion({
        occurredAt: '2025-03-14T08:00:00Z',
        usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
      }),
    );
    const monthTokens = async () =>
      (await get()).body.enforced.find((g: { key: string }) => g.key === 'llm.monthly_tokens').used;
    await waitFor(async () => (await monthTokens()) === 1302, { what: 'every event counted' });
    const res = await get();
    const gauges = Object.fromEntries(res.body.enforced.map((g: { key: string }) => [g.key, g]));
    expect(gauges['llm.rpm']).toMatchObject({ used: 4, percent: 7, as_of: '2025-03-15T12:00:20.000Z' });
    expect(gauges['llm.tpm']).toMatchObject({ used: 1300, percent: 3, as_of: '2025-03-15T12:00:20.000Z' });
    expect(gauges['llm.monthly_tokens']).toMatchObject({ used: 1302, percent: 0 });
    expect(gauges['llm.monthly_tokens'].as_of).toBeUndefined();
    expect(gauges['llm.monthly_cost']).toMatchObject({ used: 2.5, percent: 25 });
    expect(res.body.usage_refreshed_at).toBe(NOW);
    const userGauges = Object.fromEntries(res.body.user.enforced.map((g: { key: string }) => [g.key, g]));
    expect(userGauges['llm.rpm']).toMatchObject({
      used: 2,
      limit: 20,
      percent: 10,
      as_of: '2025-03-15T12:00:20.000Z',
    });
    expect(userGauges['llm.tpm']).toMatchObject({ used: 1100, limit: 10_000, percent: 11 });
    expect(await orgRequests('other-org')).toBe(1);
    // counted in the metrics once their batch is finished, a moment after the gauges show them
    const countedInMetrics = async () =>
      /llm_quota_events_total\{outcome="counted",service="llm-quota"\} 6\n/.test(
        (await request(quota.service.admin).get('/metrics')).text,
      );
    await waitFor(countedInMetrics, { what: 'the six events in the metrics' });
  });

  it('starts the rate gauges again each minute and the monthly gauges each UTC month', async () => {
    await publish(completion({ occurredAt: '2025-03-31T23:59:50Z' }));
    clock.set('2025-03-31T23:59:55Z');
    await waitFor(async () => (await orgRequests()) === 1, { what: 'the event counted' });
    clock.set('2025-04-01T00:00:05Z');
    const res = await get();
    expect(res.body.usage_refreshed_at).toBeNull();
    for (const gauge of res.body.enforced) expect(gauge).toMatchObject({ used: 0, percent: 0 });
    expect(res.body.enforced[0].as_of).toBeUndefined();
    expect(res.body.enforced[2].resets_at).toBe('2025-05-01T00:00:00.000Z');
  });

  it('reads the time of the request from the injected clock', async () => {
    clock.set('2030-01-02T03:04:05.678Z');
    const res = await get(edgeHeaders(principal(), clock));
    expect(res.body.computed_at).toBe('2030-01-02T03:04:05.678Z');
  });

  it.each(['retired-plan', 'constructor'])(
    'keeps working when an organization is assigned a plan that left the catalogue (%s)',
    async (plan) => {
      await quota.store.collection('org_quota_settings').insertOne({
        _id: 'acme',
        plan,
        policy: 'soft_downgrade',
        org_user_quotas: { overrides: {}, by_role: {} },
        createdAt: new Date(),
        updatedAt: new Date(),
        updatedBy: null,
      } as never);
      const res = await get();
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ policy: 'soft_downgrade', plan: { name: 'free' } });
    },
  );

  it('leaves out the gauge of a limit the plan does not enforce', async () => {
    await quota.stop();
    quota = await startQuotaService({
      bus,
      clock,
      env: {
        LLM_QUOTA_PLANS: JSON.stringify({
          unlimited: { limits: { 'llm.rpm': 1000, 'llm.monthly_cost': null }, per_user_defaults: {} },
        }),
        LLM_QUOTA_DEFAULT_PLAN: 'unlimited',
      },
    });
    const res = await get();
    expect(res.body.enforced.map((g: { key: string }) => g.key)).toEqual(['llm.rpm']);
    expect(res.body.user.enforced).toEqual([]);
    expect(res.body).toMatchObject({
      included: {},
      per_user_defaults: {},
      plan: { name: 'unlimited', currency: 'USD' },
    });
  });

  it('reads a gauge past its limit to the whole percent (113 %, not the 112 binary floating point gives)', async () => {
    await quota.stop();
    quota = await startQuotaService({
      bus,
      clock,
      env: {
        LLM_QUOTA_PLANS: JSON.stringify({
          small: { limits: { 'llm.monthly_tokens': 1000, 'llm.monthly_cost': 1 } },
        }),
        LLM_QUOTA_DEFAULT_PLAN: 'small',
      },
    });
    // usage passes a limit under soft_downgrade, or once the limit is lowered
    await publish(
      completion({ usage: { prompt_tokens: 1000, completion_tokens: 130, total_tokens: 1130 }, cost: 1.13 }),
    );
    const gauges = await waitFor(
      async () => {
        const res = await get();
        return res.body.enforced[0]?.used === 1130 ? res.body.enforced : null;
      },
      { what: 'the event counted' },
    );
    expect(gauges).toEqual([
      expect.objectContaining({ key: 'llm.monthly_tokens', limit: 1000, used: 1130, percent: 113 }),
      expect.objectContaining({ key: 'llm.monthly_cost', limit: 1, used: 1.13, percent: 113 }),
    ]);
  });

  it("refuses query parameters, naming them: it reports the current windows only, never another month's", async () => {
    // `?month=2025-01` once answered March's figures as if they were January's
    for (const query of ['?month=2025-01', '?from=2025-01-01&to=2025-01-31', '?by=user']) {
      const res = await request(quota.service.handler)
        .get(`/v1/quotas/usage${query}`)
        .set(edgeHeaders(principal(), clock));
      expect(res.status).toBe(400);
      expect(res.body).toMatchObject({
        status: 400,
        code: 'INVALID_BODY',
        details: {
          issues: [{ field: 'query', message: expect.stringContaining('/v1/quotas/usage/breakdown') }],
        },
      });
    }
    // the authorization comes first, in the edge order
    const noPermission = edgeHeaders(principal({ permissions: [] }), clock);
    expect(
      (await request(quota.service.handler).get('/v1/quotas/usage?month=2025-01').set(noPermission)).status,
    ).toBe(403);
  });

  it('is not reachable with the user id header of somebody else', async () => {
    const headers = {
      [PRINCIPAL_HEADER]: sealPrincipal(principal(), SECRET, clock),
      'x-platform-user-id': 'user-9',
    };
    expect((await get(headers)).status).toBe(401);
  });
});
