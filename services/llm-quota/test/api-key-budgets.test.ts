import { Subjects } from '@platform/contracts';
import { waitFor } from '@platform/testkit';
import request from 'supertest';
import { INTERNAL_SECRET_HEADER } from '../src/routes/internal';
import { adminHeaders, completion, edgeHeaders, principal, quotaServiceForEachTest, SECRET } from './support';

describe("an organization API key's month budget in llm-quota (decision 0117)", () => {
  const world = quotaServiceForEachTest('2025-03-15T12:00:30.000Z');
  const patch = (body: unknown) =>
    request(world.quota.service.handler)
      .patch('/v1/quotas/settings')
      .set(adminHeaders(world.clock))
      .send(body as object);

  it('is set beside its rates, reported to the key with what it used, and read by the gateway with its month', async () => {
    const key = principal({ userId: null, permissions: ['models:read'] });
    const id = key.credential.id;
    const set = await patch({
      org_user_quotas: { by_api_key: { [id]: { rpm: 10, monthly_tokens: 1_000, monthly_cost: 2.5 } } },
    });
    expect(set.status).toBe(200);
    expect(set.body.org_user_quotas.by_api_key).toEqual({
      [id]: { rpm: 10, monthly_tokens: 1_000, monthly_cost: 2.5 },
    });
    // a limit removed alone; the entry goes with its last limit
    const less = await patch({ org_user_quotas: { by_api_key: { [id]: { rpm: null } } } });
    expect(less.body.org_user_quotas.by_api_key).toEqual({
      [id]: { monthly_tokens: 1_000, monthly_cost: 2.5 },
    });

    await world.bus.publishDurable(
      Subjects.llmCompletion,
      completion({
        userId: undefined,
        apiKeyId: id,
        usage: { prompt_tokens: 70, completion_tokens: 30, total_tokens: 100 },
        cost: 0.5,
      }),
    );
    const report = await waitFor(
      async () => {
        const res = await request(world.quota.service.handler)
          .get('/v1/quotas/usage')
          .set(edgeHeaders(key, world.clock));
        const tokens = res.body.api_key?.enforced?.find(
          (g: { key: string }) => g.key === 'llm.monthly_tokens',
        );
        return tokens?.used === 100 ? res.body : null;
      },
      { what: "the key's month to be counted", timeoutMs: 20_000 },
    );
    expect(report.api_key.enforced).toEqual([
      expect.objectContaining({
        key: 'llm.monthly_tokens',
        scope: 'api_key',
        window: 'month',
        limit: 1_000,
        used: 100,
        percent: 10,
      }),
      expect.objectContaining({
        key: 'llm.monthly_cost',
        scope: 'api_key',
        window: 'month',
        limit: 2.5,
        used: 0.5,
        percent: 20,
      }),
    ]);
    const gateway = await request(world.quota.service.handler)
      .get('/internal/orgs/acme/gateway-settings')
      .set({ [INTERNAL_SECRET_HEADER]: SECRET });
    expect(gateway.body.api_key_months).toEqual({ [id]: { tokens: 100, cost: 0.5 } });
  });

  it('refuses a malformed budget, naming the field', async () => {
    for (const entry of [
      { monthly_tokens: 1.5 },
      { monthly_cost: -1 },
      { monthly_cost: 1e10 },
      { monthly_requests: 5 },
    ]) {
      const res = await patch({ org_user_quotas: { by_api_key: { k1: entry } } });
      expect(res.status).toBe(400);
      expect(res.body.details.issues[0].field).toContain('by_api_key');
    }
    // finer than the millionth costs are counted in: a limit the counters cannot reach exactly, whose gauge read
    // `percent: null` once the key spent anything (5e-324: used / limit is Infinity)
    for (const monthly_cost of [5e-324, 0.0000005, 2.0000001]) {
      const res = await patch({ org_user_quotas: { by_api_key: { k1: { monthly_cost } } } });
      expect(res.status).toBe(400);
      expect(res.body.details.issues[0]).toMatchObject({
        field: 'org_user_quotas.by_api_key.k1.monthly_cost',
        message: 'at most 6 decimals: costs are counted in millionths of the plan currency',
      });
    }
    const fine = await patch({ org_user_quotas: { by_api_key: { k1: { monthly_cost: 0.000001 } } } });
    expect(fine.body.org_user_quotas.by_api_key.k1).toEqual({ monthly_cost: 0.000001 });
    expect(
      (await patch({ org_user_quotas: { by_api_key: { k1: { monthly_cost: 1e9 - 0.000001 } } } })).status,
    ).toBe(200);
    // budgets are a key's alone: a user override cannot hold one
    const user = await patch({ org_user_quotas: { overrides: { u1: { monthly_tokens: 5 } } } });
    expect(user.status).toBe(400);
  });
});
