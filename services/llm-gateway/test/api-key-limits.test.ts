import { clearOfMinuteEnd, waitFor } from '@platform/testkit';
import { APIError } from 'openai';
import { type GatewayWorld, startGatewayWorld } from './support';

/**
 * An organization API key's own rate limits (`org_user_quotas.by_api_key`), as a platform team gives each
 * application a key: set by an administrator, enforced by the gateway for that key alone, and reported to the key
 * by `GET /v1/quotas/usage` with what llm-quota counted for it.
 */
describe("an organization API key's own limits and usage, through the edge", () => {
  let w: GatewayWorld;
  beforeAll(async () => {
    w = await startGatewayWorld();
  });
  afterAll(() => w?.stop());

  it('hold the key to its rpm and tpm, leave the other keys to the organization, and show the key its usage', async () => {
    const { owner } = await w.org('key-limits');
    const app = await w.orgKey(owner, 'key-limits', 'app');
    const other = await w.orgKey(owner, 'key-limits', 'other');
    const set = await w.call(
      'gateway',
      'PATCH',
      '/v1/quotas/settings',
      { bearer: owner.token },
      { org_user_quotas: { by_api_key: { [app.id]: { rpm: 2, tpm: 10_000 } } } },
    );
    expect(set.status).toBe(200);
    expect(set.body.org_user_quotas.by_api_key).toEqual({ [app.id]: { rpm: 2, tpm: 10_000 } });

    // the official SDK, as the application calls it with its key; the three requests in one calendar minute
    const client = w.client({ apiKey: app.apiKey });
    await clearOfMinuteEnd(10_000);
    const ask = () =>
      client.chat.completions.create({ model: 'sim/cheap', messages: [{ role: 'user', content: 'hello' }] });
    const answers = [await ask(), await ask()];
    const refused = await ask().then(
      () => null,
      (err: unknown) => err,
    );
    expect(refused).toBeInstanceOf(APIError);
    const error = refused as APIError;
    expect(error.status).toBe(429);
    expect(Number(error.headers?.get('retry-after'))).toBeGreaterThan(0);
    const envelope = await w.call(
      'gateway',
      'POST',
      '/v1/chat/completions',
      { apiKey: app.apiKey },
      {
        model: 'sim/cheap',
        messages: [{ role: 'user', content: 'hello' }],
      },
    );
    expect(envelope.status).toBe(429);
    expect(envelope.body).toMatchObject({
      code: 'RATE_LIMITED',
      message: "Rate limit exceeded: the API key's limit of 2 requests a minute",
      details: { key: 'llm.rpm', scope: 'api_key', limit: 2, window: 'minute' },
    });

    // another key of the organization is held to the organization's limits alone
    const others = w.client({ apiKey: other.apiKey });
    let othersTokens = 0;
    for (let i = 0; i < 3; i++) {
      const answer = await others.chat.completions.create({
        model: 'sim/cheap',
        messages: [{ role: 'user', content: 'hi' }],
      });
      othersTokens += answer.usage?.total_tokens ?? 0;
    }

    // the key sees its own gauges, counted by llm-quota from the gateway's events
    const tokens = answers.reduce((sum, a) => sum + (a.usage?.total_tokens ?? 0), 0);
    const report = await waitFor(
      async () => {
        const reply = await w.call('gateway', 'GET', '/v1/quotas/usage', { apiKey: app.apiKey });
        const tpm = reply.body?.api_key?.enforced?.find((g: { key: string }) => g.key === 'llm.tpm');
        return reply.status === 200 && tpm?.used >= tokens ? reply.body : null;
      },
      { what: "llm-quota to count the key's two answers", timeoutMs: 20_000, intervalMs: 350 }, // 60 usage reads a minute
    );
    expect(report.user).toBeUndefined();
    expect(report.api_key).toEqual({
      id: app.id,
      enforced: [
        expect.objectContaining({ key: 'llm.rpm', scope: 'api_key', source: 'override', limit: 2 }),
        expect.objectContaining({ key: 'llm.tpm', scope: 'api_key', limit: 10_000, used: tokens }),
      ],
    });
    // the organization counted all five, the key's two among them
    await w.counted('key-limits', { bearer: owner.token }, { requests: 5, tokens: tokens + othersTokens });
    // the administrator's chargeback: each key's month
    const requestsOf = await waitFor(
      async () => {
        const reply = await w.call('gateway', 'GET', '/v1/quotas/usage/breakdown?by=api_key', {
          bearer: owner.token,
        });
        const counts = Object.fromEntries(
          (reply.body.items ?? []).map((i: { id: string; requests: number }) => [i.id, i.requests]),
        );
        return reply.status === 200 && counts[other.id] === 3 ? counts : null;
      },
      { what: "the breakdown to show the other key's three requests" },
    );
    expect(requestsOf).toEqual({ [app.id]: 2, [other.id]: 3 });
    const forbidden = await w.call('gateway', 'GET', '/v1/quotas/usage/breakdown?by=api_key', {
      apiKey: app.apiKey,
    });
    expect(forbidden.status).toBe(403);
    const otherReport = await w.call('gateway', 'GET', '/v1/quotas/usage', { apiKey: other.apiKey });
    expect(otherReport.body.api_key).toBeUndefined();
  });

  it('refuse a malformed entry in the envelope, naming the field, and keep what was stored', async () => {
    const { owner } = await w.org('key-limits-bad');
    const as = { bearer: owner.token };
    const bad = await w.call('gateway', 'PATCH', '/v1/quotas/settings', as, {
      org_user_quotas: { by_api_key: { 'key.with.dot': { rpm: 1 } } },
    });
    expect(bad.status).toBe(400);
    expect(bad.body).toMatchObject({ code: 'INVALID_BODY', status: 400 });
    const negative = await w.call('gateway', 'PATCH', '/v1/quotas/settings', as, {
      org_user_quotas: { by_api_key: { k1: { rpm: -1 } } },
    });
    expect(negative.body.details.issues[0].field).toContain('by_api_key');
    const read = await w.call('gateway', 'GET', '/v1/quotas/settings', as);
    expect(read.body.org_user_quotas.by_api_key).toEqual({});
  });

  it("lose the key's entry when the key is revoked", async () => {
    const { owner } = await w.org('key-limits-revoked');
    const as = { bearer: owner.token };
    const gone = await w.orgKey(owner, 'key-limits-revoked', 'gone');
    const kept = await w.orgKey(owner, 'key-limits-revoked', 'kept');
    await w.call('gateway', 'PATCH', '/v1/quotas/settings', as, {
      org_user_quotas: { by_api_key: { [gone.id]: { rpm: 5 }, [kept.id]: { monthly_tokens: 1_000 } } },
    });
    const revoked = await w.call('base', 'DELETE', `/v2/orgs/key-limits-revoked/apikeys/${gone.id}`, as);
    expect(revoked.status).toBeLessThan(300);
    const entries = await waitFor(
      async () => {
        const read = await w.call('gateway', 'GET', '/v1/quotas/settings', as);
        const byKey = read.body.org_user_quotas.by_api_key;
        return byKey[gone.id] === undefined ? byKey : null;
      },
      { what: "the revoked key's entry to go" },
    );
    expect(entries).toEqual({ [kept.id]: { monthly_tokens: 1_000 } });
  });
});
