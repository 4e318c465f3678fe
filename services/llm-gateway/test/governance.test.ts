import { randomUUID } from 'node:crypto';
import { waitFor } from '@platform/testkit';
import { clockAhead, type GatewayWorld, gauge, modelEntry, type Reply, startGatewayWorld } from './support';

/**
 * Governance and quota refusals as callers see them through the edge: each in the gateway envelope
 * with its spec code, decided before any provider is called.
 */
describe('governance, header policy and quotas at the gateway', () => {
  const time = clockAhead();
  let w: GatewayWorld;
  beforeAll(async () => {
    w = await startGatewayWorld({
      clock: time.clock,
      models: [
        modelEntry(
          'mock/embeddings',
          'embeddings',
          { provider: 'mock', model: 'mock-embeddings' },
          { input_per_million: 0.5, output_per_million: 0 },
        ),
      ],
    });
  });
  afterAll(() => w?.stop());

  /**
   * Moves the platform's clock on to the start of its next minute: the requests sent from then on fall in one
   * minute of the limits, which count calendar minutes (decision 0016), with no wait for the wall clock's.
   */
  const minuteBegins = () => {
    time.ahead += 60_000 - (time.clock.now().getTime() % 60_000);
  };

  const chat = (
    as: { bearer: string } | { apiKey: string },
    model: string | undefined,
    extra: Record<string, unknown> = {},
  ) =>
    w.call('gateway', 'POST', '/v1/chat/completions', as, {
      ...(model === undefined ? {} : { model }),
      messages: [{ role: 'user', content: 'hello' }],
      ...extra,
    });
  const patch = (as: { bearer: string }, body: unknown) =>
    w.call('gateway', 'PATCH', '/v1/quotas/settings', as, body);
  const expectEnvelope = (reply: Reply, status: number, code: string) => {
    expect({ status: reply.status, code: reply.body?.code }).toEqual({ status, code });
    expect(reply.body).toMatchObject({ error: expect.any(String), message: expect.any(String), status });
    expect(reply.body.requestId).toBe(reply.headers.get('x-request-id'));
  };

  it('MODEL_NOT_FOUND for a model outside the catalogue', async () => {
    const { owner } = await w.org('gov-notfound');
    const reply = await chat({ bearer: owner.token }, 'no/such-model');
    expectEnvelope(reply, 404, 'MODEL_NOT_FOUND');
  });

  it('MODEL_NOT_ALLOWED under hard_block; soft_downgrade answers from the mapped model and says so', async () => {
    const { owner } = await w.org('gov-allowed');
    const as = { bearer: owner.token };
    const set = await patch(as, {
      models: {
        allowed: ['sim/cheap', 'mock/chat'],
        defaults: { completions: 'mock/chat' },
        downgrade: { 'sim/gpt': 'sim/cheap' },
      },
    });
    expect(set.status).toBe(200);
    expect(set.body.models).toEqual({
      allowed: ['sim/cheap', 'mock/chat'],
      defaults: { completions: 'mock/chat' },
      downgrade: { 'sim/gpt': 'sim/cheap' },
      by_api_key: {},
      routing: null,
    });
    const before = w.sim.requests().length;
    expectEnvelope(await chat(as, 'sim/gpt'), 403, 'MODEL_NOT_ALLOWED');
    expect(w.sim.requests().length).toBe(before);

    expect((await patch(as, { policy: 'soft_downgrade' })).status).toBe(200);
    const mapped = await chat(as, 'sim/gpt');
    expect(mapped.status).toBe(200);
    expect(mapped.headers.get('x-platform-model-downgraded')).toBe('sim/gpt -> sim/cheap');
    expect(mapped.body.model).toBe('sim/cheap');
    expect(w.sim.requests().at(-1)?.model).toBe('cheap-sim');
    // no mapping: the org's default
    const toDefault = await chat(as, 'sim/identity');
    expect(toDefault.headers.get('x-platform-model-downgraded')).toBe('sim/identity -> mock/chat');
  });

  it('a request without a model, or with "default", uses the org default', async () => {
    const { owner } = await w.org('gov-default');
    const as = { bearer: owner.token };
    expectEnvelope(await chat(as, undefined), 400, 'INVALID_BODY');
    await patch(as, { models: { defaults: { completions: 'sim/cheap' } } });
    for (const model of [undefined, 'default']) {
      const reply = await chat(as, model);
      expect(reply.status).toBe(200);
      expect(reply.body.model).toBe('sim/cheap');
    }
    // a default that cannot serve is the organization's setting to fix, and the answer says so
    await patch(as, { models: { defaults: { completions: 'sim/embed' } } });
    const wrongType = await chat(as, undefined);
    expectEnvelope(wrongType, 400, 'INVALID_BODY');
    expect(wrongType.body.message).toBe(
      "The organization's default completions model sim/embed is a model of type embeddings: change models.defaults.completions with PATCH /v1/quotas/settings",
    );
    await patch(as, { models: { defaults: { completions: 'gone/model' } } });
    const missing = await chat(as, 'default');
    expectEnvelope(missing, 404, 'MODEL_NOT_FOUND');
    expect(missing.body.message).toMatch(
      /^The organization's default completions model gone\/model is not in/,
    );
    // the caller's own wrong model is still the caller's
    expect((await chat(as, 'sim/embed')).body.message).toBe('sim/embed is a model of type embeddings');
  });

  it('HEADER_POLICY_VIOLATION for an org API key on a model that requires the user id; a user passes it on', async () => {
    const { owner } = await w.org('gov-headers');
    const key = await w.call(
      'base',
      'POST',
      '/v2/orgs/gov-headers/apikeys',
      { bearer: owner.token },
      {
        name: `k-${randomUUID()}`,
        permissions: ['models:read'],
      },
    );
    expect(key.status).toBe(201);
    const refused = await chat({ apiKey: key.body.apiKey }, 'sim/identity');
    expectEnvelope(refused, 403, 'HEADER_POLICY_VIOLATION');
    expect(refused.body.details).toEqual({ missing: ['x-user-id'] });

    expect((await chat({ bearer: owner.token }, 'sim/identity')).status).toBe(200);
    const seen = w.sim.requests().at(-1)!;
    expect(seen.headers['x-user-id']).toBe(owner.userId);
    expect(seen.headers['x-org']).toBe('gov-headers');
  });

  it("a HEADER_POLICY_VIOLATION takes none of the organization's requests a minute", async () => {
    const { owner } = await w.org('gov-headers-rpm', 'tight');
    const key = await w.call(
      'base',
      'POST',
      '/v2/orgs/gov-headers-rpm/apikeys',
      { bearer: owner.token },
      { name: `k-${randomUUID()}`, permissions: ['models:read'] },
    );
    const as = { apiKey: key.body.apiKey };
    // every request below in one calendar minute: the org's 5 a minute, more than 5 refusals
    minuteBegins();
    for (let i = 0; i < 6; i++)
      expectEnvelope(await chat(as, 'sim/identity'), 403, 'HEADER_POLICY_VIOLATION');
    expect((await chat(as, 'sim/cheap')).status).toBe(200);
  });

  it("a request an Anthropic model's translation refuses takes none of the user's requests a minute, on every API", async () => {
    const { owner } = await w.org('gov-untranslatable', 'tight');
    const as = { bearer: owner.token };
    const before = w.sim.requests().filter((r) => r.model === 'claude-sim').length;
    // every request below in one calendar minute: the user's 3 a minute, more than 3 refusals
    minuteBegins();
    for (const extra of [
      { n: 2 },
      { logprobs: true },
      { messages: [{ role: 'user', content: [{ type: 'file', file: {} }] }] },
    ])
      expectEnvelope(await chat(as, 'sim/claude', extra), 400, 'INVALID_BODY');
    const responses = await w.call('gateway', 'POST', '/v1/responses', as, {
      model: 'sim/claude',
      input: 'hello',
      text: { format: { type: 'json_schema', name: 'answer', schema: { type: 'object' } } },
      tools: [{ type: 'function', name: 'lookup', parameters: { type: 'object' } }],
    });
    expectEnvelope(responses, 400, 'INVALID_BODY');
    const messages = await w.call('gateway', 'POST', '/v1/messages', as, {
      model: 'sim/claude',
      max_tokens: 2048,
      temperature: 0.5,
      thinking: { type: 'enabled', budget_tokens: 1024 },
      messages: [{ role: 'user', content: 'hello' }],
    });
    expect({ status: messages.status, type: messages.body.error?.type }).toEqual({
      status: 400,
      type: 'invalid_request_error',
    });
    expect(w.sim.requests().filter((r) => r.model === 'claude-sim').length).toBe(before);
    // the user's 3 requests a minute are all still there
    for (let i = 0; i < 3; i++) expect((await chat(as, 'sim/claude')).status).toBe(200);
  });

  it("a request the mock provider refuses takes none of the user's requests a minute", async () => {
    const { owner } = await w.org('gov-mock-refusals', 'tight');
    const as = { bearer: owner.token };
    // every request below in one calendar minute: the user's 3 a minute, more than 3 refusals
    minuteBegins();
    // 17 prompts × n 128: more choices than the mock answers in one request
    const many = Array.from({ length: 17 }, (_, i) => `prompt ${i}`);
    for (const stream of [false, true]) {
      const refused = await w.call('gateway', 'POST', '/v1/completions', as, {
        model: 'mock/chat',
        prompt: many,
        n: 128,
        stream,
      });
      expectEnvelope(refused, 400, 'INVALID_BODY');
      expect(refused.body).toMatchObject({ provider: 'mock', model: 'mock/chat' });
    }
    // more dimensions than the mock computes
    for (let i = 0; i < 2; i++) {
      const refused = await w.call('gateway', 'POST', '/v1/embeddings', as, {
        model: 'mock/embeddings',
        input: 'hello',
        dimensions: 4096,
      });
      expectEnvelope(refused, 400, 'INVALID_DIMENSIONS');
    }
    // the user's 3 requests a minute are all still there
    for (let i = 0; i < 3; i++) {
      const served = await w.call('gateway', 'POST', '/v1/completions', as, {
        model: 'mock/chat',
        prompt: 'x',
      });
      expect(served.status).toBe(200);
    }
  });

  it('inference needs models:read: an org key without it is refused', async () => {
    const { owner } = await w.org('gov-perm');
    const key = await w.call(
      'base',
      'POST',
      '/v2/orgs/gov-perm/apikeys',
      { bearer: owner.token },
      {
        name: `k-${randomUUID()}`,
        permissions: ['members:read'],
      },
    );
    const reply = await chat({ apiKey: key.body.apiKey }, 'sim/cheap');
    expect(reply.status).toBe(403);
  });

  it('RATE_LIMITED on the org rpm, on the user rpm, and on a role override, with Retry-After', async () => {
    const { owner } = await w.org('gov-rpm', 'tight');
    // every request below in one calendar minute
    minuteBegins();
    const as = { bearer: owner.token };
    // user rpm 3 (plan default)
    const statuses: number[] = [];
    let last: Awaited<ReturnType<typeof chat>> | null = null;
    for (let i = 0; i < 4; i++) {
      last = await chat(as, 'sim/cheap');
      statuses.push(last.status);
    }
    expect(statuses).toEqual([200, 200, 200, 429]);
    expectEnvelope(last!, 429, 'RATE_LIMITED');
    expect(last!.body.details).toMatchObject({ key: 'llm.rpm', scope: 'user', limit: 3 });
    expect(last!.body.retryAfter).toBeGreaterThan(0);
    expect(last!.headers.get('retry-after')).toBe(String(last!.body.retryAfter));

    // a role entry gives members 1 request a minute
    const member = await w.login();
    await w.call('base', 'POST', '/v2/orgs/gov-rpm/members', as, { userId: member.userId, role: 'member' });
    await patch(as, { org_user_quotas: { by_role: { member: { rpm: 1 } } } });
    expect((await chat({ bearer: member.token }, 'sim/cheap')).status).toBe(200);
    const byRole = await chat({ bearer: member.token }, 'sim/cheap');
    expectEnvelope(byRole, 429, 'RATE_LIMITED');
    expect(byRole.body.details).toMatchObject({ scope: 'user', limit: 1 });

    // the org's 5 per minute: owner 3 + member 1 so far; one more, then the org refuses
    const other = await w.login();
    await w.call('base', 'POST', '/v2/orgs/gov-rpm/members', as, { userId: other.userId, role: 'owner' });
    expect((await chat({ bearer: other.token }, 'sim/cheap')).status).toBe(200);
    const orgWide = await chat({ bearer: other.token }, 'sim/cheap');
    expectEnvelope(orgWide, 429, 'RATE_LIMITED');
    expect(orgWide.body.details).toMatchObject({ key: 'llm.rpm', scope: 'org', limit: 5 });
  });

  it('the monthly budget answers 429 MONTHLY_QUOTA_EXCEEDED; soft_downgrade sends it to the mapped model', async () => {
    const { owner } = await w.org('gov-budget', 'budget');
    const as = { bearer: owner.token };
    let reply = await chat(as, 'sim/gpt');
    let n = 0;
    while (reply.status === 200 && n++ < 50)
      reply = await chat(as, 'sim/gpt', {
        messages: [{ role: 'user', content: 'use up the budget with a longer prompt please' }],
      });
    expectEnvelope(reply, 429, 'MONTHLY_QUOTA_EXCEEDED');
    expect(reply.body.details).toMatchObject({ key: 'llm.monthly_tokens', limit: 400 });
    expect(reply.body.retryAfter).toBeGreaterThan(0);

    await patch(as, { policy: 'soft_downgrade', models: { downgrade: { 'sim/gpt': 'sim/cheap' } } });
    const downgraded = await chat(as, 'sim/gpt');
    expect(downgraded.status).toBe(200);
    expect(downgraded.headers.get('x-platform-model-downgraded')).toBe('sim/gpt -> sim/cheap');
  });

  it('a hard_block stream is cut at the monthly token budget, at most one chunk over', async () => {
    const { owner } = await w.org('gov-cut', 'budget');
    const as = { bearer: owner.token };
    w.sim.script([
      {
        match: { model: 'gpt-sim', stream: true },
        reply: { content: Array.from({ length: 400 }, (_, i) => `word${i}`).join(' ') },
      },
    ]);
    try {
      const res = await fetch(`${w.p.gatewayUrl}/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${owner.token}`, 'content-type': 'application/json' },
        body: JSON.stringify({
          model: 'sim/gpt',
          stream: true,
          messages: [{ role: 'user', content: 'long answer' }],
        }),
      });
      const frames = (await res.text()).split('\n\n').filter(Boolean);
      expect(frames.at(-1)).toBe('data: [DONE]');
      const error = JSON.parse(frames.at(-2)!.slice(6));
      expect(error.error).toMatchObject({ code: 'MONTHLY_QUOTA_EXCEEDED' });
    } finally {
      w.sim.script([]);
    }
    // the month's counter, a document apart from the minute's: wait for it to pass the budget, then bound it (the
    // month's tokens alone say so: the platform's minutes, moved on by minuteBegins, are not the wall clock's)
    const usage = await w.counted('gov-cut', as, { requests: 1, tokens: 401 });
    const used = gauge(usage, 'llm.monthly_tokens').used;
    expect(used).toBeGreaterThan(400);
    // one simulator chunk holds a few words: far fewer than 40 tokens
    expect(used).toBeLessThan(440);
  });
});

describe('the monthly budget at the turn of the month (UTC), settings cached for 20 seconds', () => {
  const time = clockAhead();
  let w: GatewayWorld;
  beforeAll(async () => {
    w = await startGatewayWorld({ clock: time.clock, env: { LLM_GATEWAY_SETTINGS_TTL_MS: '20000' } });
  });
  afterAll(() => w?.stop());

  /** moves the platform's clock to `ms` before the next UTC month begins */
  const beforeMonthEnd = (ms: number) => {
    const now = new Date();
    time.ahead = Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1) - ms - Date.now();
  };

  it("serves an organization over last month's budget as soon as the new month begins", async () => {
    beforeMonthEnd(120_000);
    const { owner } = await w.org('gov-turn', 'budget');
    const as = { bearer: owner.token };
    const chat = () =>
      w.call('gateway', 'POST', '/v1/chat/completions', as, {
        model: 'sim/gpt',
        messages: [{ role: 'user', content: 'use up the budget with a longer prompt please' }],
      });
    let served = 0;
    let reply = await chat();
    for (let n = 0; reply.status === 200 && n < 50; n++) {
      served += reply.body.usage.total_tokens;
      reply = await chat();
    }
    expect(reply.body.code).toBe('MONTHLY_QUOTA_EXCEEDED');
    // llm-quota has counted the month's tokens, and the gateway reads them (its cache is past two TTLs)
    await waitFor(
      async () => {
        const usage = await w.call('gateway', 'GET', '/v1/quotas/usage', as);
        return usage.status === 200 && gauge(usage, 'llm.monthly_tokens').used >= served;
      },
      { intervalMs: 350 },
    ); // 60 usage reads a minute per caller at the edge
    beforeMonthEnd(15_000);
    expect((await chat()).body.code).toBe('MONTHLY_QUOTA_EXCEEDED');

    // five seconds into the new month, the settings cached 20 seconds ago still hold last month's count
    beforeMonthEnd(-5_000);
    const newMonth = await chat();
    expect({ status: newMonth.status, code: newMonth.body.code }).toEqual({ status: 200, code: undefined });
  });
});

describe('a request spanning the turn of the month (UTC), settings cached for two minutes', () => {
  const time = clockAhead();
  let w: GatewayWorld;
  beforeAll(async () => {
    w = await startGatewayWorld({ clock: time.clock, env: { LLM_GATEWAY_SETTINGS_TTL_MS: '120000' } });
  });
  afterAll(() => w?.stop());

  /** moves the platform's clock to `ms` before the next UTC month begins */
  const beforeMonthEnd = (ms: number) => {
    const now = new Date();
    time.ahead = Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1) - ms - Date.now();
  };

  it("counts in the month it settles in, as llm-quota does: after midnight the usage endpoint and the gateway's admission agree", async () => {
    beforeMonthEnd(60_000);
    const { owner } = await w.org('gov-straddle', 'budget');
    const as = { bearer: owner.token };
    const chat = (content: string) =>
      w.call('gateway', 'POST', '/v1/chat/completions', as, {
        model: 'sim/cheap',
        messages: [{ role: 'user', content }],
      });
    const before = w.sim.requests().length;
    w.sim.script([
      {
        match: { model: 'cheap-sim' },
        times: 1,
        latencyMs: 1_500,
        reply: { content: Array.from({ length: 120 }, (_, i) => `word${i}`).join(' ') },
      },
    ]);
    try {
      // admitted (its settings read) in the month that ends; midnight passes while the provider answers
      const straddling = chat('a question asked just before midnight');
      await waitFor(() => w.sim.requests().length > before);
      beforeMonthEnd(-5_000);
      const reply = await straddling;
      expect(reply.status).toBe(200);
      const spent = reply.body.usage.total_tokens;
      // llm-quota counts it in the new month (its usage event's occurredAt)
      let usage: Reply | undefined;
      await waitFor(
        async () => {
          usage = await w.call('gateway', 'GET', '/v1/quotas/usage', as);
          return usage.status === 200 && gauge(usage, 'llm.monthly_tokens').used >= spent;
        },
        { what: 'llm-quota to count the request', timeoutMs: 20_000, intervalMs: 350 }, // 60 usage reads a minute at the edge
      );
      const now = time.clock.now();
      expect(gauge(usage!, 'llm.monthly_tokens')).toMatchObject({
        used: spent,
        limit: 400,
        resets_at: new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1)).toISOString(),
      });
      // the gateway counts it there too: a prompt of some 300 tokens, past what is left of the 400, is refused
      // saying the same use, and a short one is served
      const refused = await chat(Array.from({ length: 150 }, (_, i) => `w${i}`).join(' '));
      expect({ status: refused.status, code: refused.body.code }).toEqual({
        status: 429,
        code: 'MONTHLY_QUOTA_EXCEEDED',
      });
      expect(refused.body.details).toMatchObject({ key: 'llm.monthly_tokens', limit: 400, used: spent });
      expect((await chat('a short one')).status).toBe(200);
    } finally {
      w.sim.script([]);
    }
  });
});
