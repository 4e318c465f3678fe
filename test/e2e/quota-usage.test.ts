import { randomUUID } from 'node:crypto';
import { type LlmCompletionEvent, Subjects } from '@platform/contracts';
import { ManualClock } from '@platform/kernel';
import { describeWithNats, type NatsServerHandle, startNatsServer, waitFor } from '@platform/testkit';
import { connect, type NatsConnection, StringCodec } from 'nats';
import { startTestPlatform, type TestPlatform } from '../harness';

/**
 * The quota endpoint as clients and LLM gateways meet it: every request through the real edge (with
 * auth's users, organizations, roles and keys), every usage event published straight into a real
 * nats-server, as an external gateway would.
 */

interface Reply {
  status: number;
  headers: Headers;
  // biome-ignore lint/suspicious/noExplicitAny: asserted field by field
  body: any;
}
type Caller = { bearer: string } | { apiKey: string } | null;
interface Gauge {
  key: string;
  used: number;
  limit: number;
  percent: number;
  as_of?: string;
}

const codec = StringCodec();

describeWithNats('GET {gateway_url}/v1/quotas/usage end to end', () => {
  const clock = new ManualClock('2025-01-31T23:58:00Z');
  let nats: NatsServerHandle;
  let nc: NatsConnection;
  let p: TestPlatform;
  const users = {} as Record<
    'owner' | 'member' | 'guest' | 'outsider' | 'admin',
    { userId: string; token: string }
  >;

  const call = async (
    base: string,
    method: string,
    path: string,
    as: Caller,
    body?: unknown,
  ): Promise<Reply> => {
    const headers: Record<string, string> = {};
    if (as && 'bearer' in as) headers.authorization = `Bearer ${as.bearer}`;
    if (as && 'apiKey' in as) headers['x-platform-api-key'] = as.apiKey;
    if (body !== undefined) headers['content-type'] = 'application/json';
    const res = await fetch(`${base}${path}`, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    return { status: res.status, headers: res.headers, body: text ? JSON.parse(text) : null };
  };
  const platform = (method: string, path: string, as: Caller, body?: unknown) =>
    call(p.baseUrl, method, path, as, body);
  const usage = (as: Caller) => call(p.gatewayUrl, 'GET', '/v1/quotas/usage', as);
  const bearer = (name: keyof typeof users) => ({ bearer: users[name].token });
  const login = async () =>
    (await platform('POST', '/v2/login/anonymous', null)).body as { userId: string; token: string };
  const gauge = (reply: Reply, key: string): Gauge => reply.body.enforced.find((g: Gauge) => g.key === key);
  const mintOrgKey = async (body: Record<string, unknown>) => {
    const res = await platform('POST', '/v2/orgs/quota-e2e/apikeys', bearer('owner'), {
      name: `k-${randomUUID()}`,
      ...body,
    });
    expect(res.status).toBe(201);
    return { apiKey: res.body.apiKey as string };
  };
  /** As an external LLM gateway would: a plain publish on the subject, captured by the ANALYTICS stream. */
  let published = 0;
  const publish = (event: LlmCompletionEvent) => {
    published++;
    nc.publish(Subjects.llmCompletion, codec.encode(JSON.stringify(event)));
  };
  const event = (overrides: Partial<LlmCompletionEvent> = {}): LlmCompletionEvent => ({
    id: randomUUID(),
    version: 1,
    occurredAt: clock.now().toISOString(),
    orgSlug: 'quota-e2e',
    userId: users.member.userId,
    model: 'gpt-4o-mini',
    provider: 'openai',
    usage: { prompt_tokens: 80, completion_tokens: 20, total_tokens: 100 },
    cost: 0.5,
    ...overrides,
  });
  /** Everything published so far has been handled by llm-quota (counted, refused as a duplicate, or dead-lettered). */
  const drained = async () => {
    await nc.flush();
    const jsm = await nc.jetstreamManager();
    await waitFor(
      async () => {
        // core publishes are stored asynchronously: first all of them in the stream, then none left
        if ((await jsm.streams.info('ANALYTICS')).state.last_seq < published) return false;
        const info = await jsm.consumers.info('ANALYTICS', 'llm-quota');
        return info.num_pending + info.num_ack_pending === 0;
      },
      { what: 'llm-quota to handle every event' },
    );
  };

  beforeAll(async () => {
    nats = await startNatsServer();
    nc = await connect({ servers: nats.url });
    p = await startTestPlatform({ clock, natsUrl: nats.url });
    for (const name of ['owner', 'member', 'guest', 'outsider', 'admin'] as const)
      users[name] = await login();
    expect(
      (await platform('POST', '/v2/orgs', bearer('owner'), { slug: 'quota-e2e', name: 'Quota E2E' })).status,
    ).toBe(201);
    for (const [name, role] of [
      ['member', 'member'],
      ['guest', 'guest'],
      ['admin', 'member'],
    ] as const) {
      const res = await platform('POST', '/v2/orgs/quota-e2e/members', bearer('owner'), {
        userId: users[name].userId,
        role,
      });
      expect(res.status).toBeLessThan(300);
    }
  });
  afterAll(async () => {
    await p?.stop();
    await nc?.close();
    await nats?.dispose();
  });

  describe('each error rule of spec 4.1, with the gateway envelope', () => {
    const expectEnvelope = (reply: Reply, status: number) => {
      expect(reply.status).toBe(status);
      expect(reply.body).toMatchObject({ status, error: expect.any(String), message: expect.any(String) });
      expect(reply.body.requestId).toBe(reply.headers.get('x-request-id'));
    };

    it('401 without credentials or with invalid ones', async () => {
      expectEnvelope(await usage(null), 401);
      expectEnvelope(await usage({ bearer: 'not-a-jwt' }), 401);
      expectEnvelope(await usage({ bearer: `at:${'a'.repeat(43)}` }), 401);
      expectEnvelope(await usage({ apiKey: `iak_quota-e2e_${randomUUID()}` }), 401);
    });

    it('400 NO_ORG_CONTEXT for a caller without an active organization', async () => {
      const reply = await usage(bearer('outsider'));
      expectEnvelope(reply, 400);
      expect(reply.body).toMatchObject({ error: 'NO_ORG_CONTEXT', code: 'NO_ORG_CONTEXT' });
    });

    it('403 for a member whose role lacks models:read, and for an organization key without it', async () => {
      expectEnvelope(await usage(bearer('guest')), 403);
      expectEnvelope(await usage(await mintOrgKey({ permissions: ['members:read'] })), 403);
      // a key restricted to one project holds nothing organization-wide
      expectEnvelope(
        await usage(await mintOrgKey({ permissions: ['models:read'], projectId: 'proj-1' })),
        403,
      );
    });

    it('200 for a member holding models:read, and for an organization API key holding it', async () => {
      const member = await usage(bearer('member'));
      expect(member.status).toBe(200);
      expect(member.body).toMatchObject({
        orgSlug: 'quota-e2e',
        policy: 'hard_block',
        plan: { name: 'free' },
      });
      expect(member.body.user).toMatchObject({ userId: users.member.userId, role: 'member' });
      const key = await usage(await mintOrgKey({ permissions: ['models:read'] }));
      expect(key.status).toBe(200);
      expect(key.body.orgSlug).toBe('quota-e2e');
      expect(key.body.user).toBeUndefined();
    });

    it('429 RATE_LIMITED past 60 requests in 60 seconds for one consumer, and not for another', async () => {
      const heavy = await login();
      await platform('POST', '/v2/orgs/quota-e2e/members', bearer('owner'), {
        userId: heavy.userId,
        role: 'member',
      });
      let last: Reply | null = null;
      let allowed = 0;
      for (let i = 0; i < 61; i++) {
        last = await usage({ bearer: heavy.token });
        if (last.status !== 200) break;
        allowed++;
      }
      expect(allowed).toBe(60);
      expectEnvelope(last!, 429);
      expect(last!.body).toMatchObject({ error: 'RATE_LIMITED', code: 'RATE_LIMITED' });
      expect(last!.body.retryAfter).toBeGreaterThan(0);
      expect((await usage(bearer('member'))).status).toBe(200);
    });
  });

  it('shows events published by a gateway within a few seconds, and a duplicate only once', async () => {
    const before = gauge(await usage(bearer('member')), 'llm.monthly_tokens').used;
    const first = event();
    publish(first);
    publish(event({ usage: { prompt_tokens: 300, completion_tokens: 100, total_tokens: 400 }, cost: 1.25 }));
    // Poll through the edge with a caller of its own (the edge allows 60 a minute, and this clock stands still):
    // at most 41 polls, over the 20 s a loaded machine may need.
    const watcher = await login();
    await platform('POST', '/v2/orgs/quota-e2e/members', bearer('owner'), {
      userId: watcher.userId,
      role: 'member',
    });
    await waitFor(
      async () => gauge(await usage({ bearer: watcher.token }), 'llm.monthly_tokens').used === before + 500,
      { timeoutMs: 20_000, intervalMs: 500, what: 'both events counted' },
    );

    publish(first); // the gateway retried its publish
    publish({ ...first, usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 } }); // same id again
    await drained();
    const reply = await usage(bearer('member'));
    expect(gauge(reply, 'llm.monthly_tokens').used).toBe(before + 500);
    expect(gauge(reply, 'llm.rpm')).toMatchObject({ used: 2, as_of: clock.now().toISOString() });
    expect(reply.body.user.enforced[0]).toMatchObject({ key: 'llm.rpm', scope: 'user', used: 2 });
  });

  it('lets the owner (quotas:manage) set per-user quotas and the policy, and nobody else', async () => {
    const change = {
      policy: 'soft_downgrade',
      org_user_quotas: { overrides: { [users.member.userId]: { rpm: 3 } } },
    };
    const denied = await call(p.gatewayUrl, 'PATCH', '/v1/quotas/settings', bearer('member'), change);
    expect(denied.status).toBe(403);
    const done = await call(p.gatewayUrl, 'PATCH', '/v1/quotas/settings', bearer('owner'), change);
    expect(done.status).toBe(200);
    expect(done.body).toMatchObject({
      orgSlug: 'quota-e2e',
      policy: 'soft_downgrade',
      updated_by: `user:${users.owner.userId}`,
    });
    const reply = await usage(bearer('member'));
    expect(reply.body).toMatchObject({ policy: 'soft_downgrade', org_user_quotas: change.org_user_quotas });
    expect(reply.body.user.enforced[0]).toMatchObject({ key: 'llm.rpm', source: 'override', limit: 3 });
    // the operators' API is not reachable through the edge, whatever the caller sends
    const internal = await call(p.gatewayUrl, 'PUT', '/internal/orgs/quota-e2e/plan', bearer('owner'), {
      plan: 'enterprise',
    });
    expect(internal.status).toBeGreaterThanOrEqual(400);
    expect((await usage(bearer('member'))).body.plan.name).toBe('free');
    await call(p.gatewayUrl, 'PATCH', '/v1/quotas/settings', bearer('owner'), { policy: 'hard_block' });

    // curl's -d sends a form: refused in the envelope, and nothing changes (it once answered 200 having saved nothing)
    const before = await usage(bearer('member'));
    const form = await fetch(`${p.gatewayUrl}/v1/quotas/settings`, {
      method: 'PATCH',
      headers: {
        authorization: `Bearer ${users.owner.token}`,
        'content-type': 'application/x-www-form-urlencoded',
      },
      body: JSON.stringify({ policy: 'soft_downgrade' }),
    });
    expect(form.status).toBe(415);
    expect(await form.json()).toMatchObject({ code: 'UNSUPPORTED_MEDIA_TYPE', status: 415 });
    const after = await usage(bearer('member'));
    expect(after.body.policy).toBe('hard_block');
    expect(after.body.updated_at).toBe(before.body.updated_at);
  });

  it("refuses a query parameter (400 naming it) rather than answering the current month as another's", async () => {
    const reply = await call(p.gatewayUrl, 'GET', '/v1/quotas/usage?month=2024-12', bearer('member'));
    expect(reply.status).toBe(400);
    expect(reply.body).toMatchObject({
      status: 400,
      code: 'INVALID_BODY',
      details: { issues: [{ field: 'query', message: expect.stringContaining('month') }] },
    });
    expect(reply.body.requestId).toBe(reply.headers.get('x-request-id'));
  });

  it('refuses, in the envelope, settings that could never apply: a model id pasted with a space, a role by its shown name', async () => {
    const settings = (body: unknown) =>
      call(p.gatewayUrl, 'PATCH', '/v1/quotas/settings', bearer('owner'), body);
    expect((await settings({ models: { allowed: ['gpt-4o-mini'] } })).status).toBe(200);
    for (const [body, field] of [
      [{ models: { allowed: ['gpt-4o-mini', 'gpt-4o '] } }, 'models.allowed.1'],
      [{ org_user_quotas: { by_role: { Member: { rpm: 1 } } } }, 'org_user_quotas.by_role.Member'],
    ] as const) {
      const refused = await settings(body);
      expect(refused.status).toBe(400);
      expect(refused.body).toMatchObject({
        status: 400,
        code: 'INVALID_BODY',
        details: { issues: [{ field }] },
      });
      expect(refused.body.requestId).toBe(refused.headers.get('x-request-id'));
    }
    const kept = await call(p.gatewayUrl, 'GET', '/v1/quotas/settings', bearer('owner'));
    expect(kept.body.models.allowed).toEqual(['gpt-4o-mini']);
    expect(kept.body.org_user_quotas.by_role).toEqual({});
    expect((await settings({ models: { allowed: null } })).status).toBe(200);
  });

  it('starts a new month at midnight UTC of the injected clock; a late event still counts in its own month', async () => {
    clock.set('2025-01-31T23:59:30Z');
    publish(event({ usage: { prompt_tokens: 5, completion_tokens: 5, total_tokens: 10 } }));
    await drained();
    const january = await usage(bearer('member'));
    expect(january.body.computed_at).toBe('2025-01-31T23:59:30.000Z');
    expect(gauge(january, 'llm.monthly_tokens').used).toBeGreaterThanOrEqual(10);
    expect(january.body.usage_refreshed_at).not.toBeNull();

    clock.set('2025-02-01T00:00:10Z');
    const february = await usage(bearer('member'));
    expect(february.body.usage_refreshed_at).toBeNull();
    for (const g of february.body.enforced) expect(g).toMatchObject({ used: 0, percent: 0 });

    // a completion of 23:59:50 on January 31 delivered after midnight counts in January
    publish(
      event({
        occurredAt: '2025-01-31T23:59:50Z',
        usage: { prompt_tokens: 1, completion_tokens: 0, total_tokens: 1 },
      }),
    );
    publish(event({ usage: { prompt_tokens: 20, completion_tokens: 22, total_tokens: 42 } }));
    await drained();
    const after = await usage(bearer('member'));
    expect(gauge(after, 'llm.monthly_tokens').used).toBe(42);
    expect(gauge(after, 'llm.rpm').used).toBe(1);
    expect(after.body.usage_refreshed_at).toBe('2025-02-01T00:00:10.000Z');
    clock.set('2025-01-31T23:59:59Z');
    expect(gauge(await usage(bearer('member')), 'llm.monthly_tokens').used).toBe(
      gauge(january, 'llm.monthly_tokens').used + 1,
    );
  });

  it('reads a gauge past its limit as its whole percent (113 %, not the 112 binary floating point gave)', async () => {
    // a month of its own (within the 30 days of the callers' tokens); the free plan: 1,000,000 tokens, 10 USD
    clock.set('2025-03-01T12:00:00Z');
    publish(
      event({
        usage: { prompt_tokens: 1_000_000, completion_tokens: 130_000, total_tokens: 1_130_000 },
        cost: 11.1,
      }),
    );
    await drained();
    const reply = await usage(bearer('member'));
    expect(gauge(reply, 'llm.monthly_tokens')).toMatchObject({
      limit: 1_000_000,
      used: 1_130_000,
      percent: 113,
    });
    expect(gauge(reply, 'llm.monthly_cost')).toMatchObject({ limit: 10, used: 11.1, percent: 111 });
  });
});
