import {
  accessToken,
  bearer,
  type FakeAuth,
  orgKey,
  principalOf,
  request,
  startEdge,
  startFakeAuth,
  startUpstream,
  type TestEdge,
  type Upstream,
  workspaceKey,
} from './support';

describe('GET {gateway_url}/v1/quotas/usage: the edge route policy', () => {
  let auth: FakeAuth;
  let quota: Upstream;
  let edge: TestEdge;

  beforeAll(async () => {
    auth = await startFakeAuth();
    quota = await startUpstream('llm-quota');
    edge = await startEdge({ authUrl: auth.url, llmQuotaUrl: quota.url });
  });
  afterAll(async () => {
    await edge.close();
    await Promise.all([auth.close(), quota.close()]);
  });

  const token = (principal = principalOf({})) => {
    const t = accessToken();
    auth.state.answers.set(t, () => ({ principal, expiresAt: null, cacheTtlSeconds: 60 }));
    return t;
  };
  const usage = (headers: Record<string, string>, path = '/llm/v1/quotas/usage') =>
    request(edge.url, path, { headers });

  it('needs credentials (401), then an active organization (400 NO_ORG_CONTEXT), then models:read (403)', async () => {
    const none = await usage({});
    expect(none.status).toBe(401);

    // No organization and no permission: the organization check comes first.
    const noOrg = await usage(bearer(token(principalOf({ org: null }))));
    expect(noOrg.status).toBe(400);
    expect(noOrg.json).toMatchObject({ error: 'NO_ORG_CONTEXT', code: 'NO_ORG_CONTEXT', status: 400 });

    const noPermission = await usage(
      bearer(token(principalOf({ org: { slug: 'acme', permissions: ['members:read'] } }))),
    );
    expect(noPermission.status).toBe(403);
    expect(noPermission.json).toMatchObject({ error: 'Forbidden', status: 403 });

    const allowed = await usage(
      bearer(token(principalOf({ org: { slug: 'acme', permissions: ['models:read'] } }))),
    );
    expect(allowed.status).toBe(200);
    expect(allowed.json).toMatchObject({ upstream: 'llm-quota', url: '/v1/quotas/usage' });
  });

  it('reads an organization API key permissions from its principal; a workspace key has no organization', async () => {
    const key = orgKey('acme');
    auth.state.answers.set(key, () => ({
      principal: principalOf({
        kind: 'org_api_key',
        userId: null,
        id: 'k-1',
        org: { slug: 'acme', permissions: ['models:read'] },
      }),
      expiresAt: null,
      cacheTtlSeconds: 60,
    }));
    expect((await usage({ 'x-platform-api-key': key })).status).toBe(200);
    const wak = workspaceKey();
    auth.state.answers.set(wak, () => ({
      principal: principalOf({ kind: 'workspace_api_key', userId: null }),
      expiresAt: null,
      cacheTtlSeconds: 60,
    }));
    expect((await usage({ 'x-platform-api-key': wak })).json.code).toBe('NO_ORG_CONTEXT');
  });

  it('allows 60 requests per 60 s per consumer, then 429 RATE_LIMITED with retryAfter and Retry-After', async () => {
    const principal = principalOf({
      userId: 'busy-user',
      org: { slug: 'acme', permissions: ['models:read'] },
    });
    // Two credentials of one user share the user's budget.
    const [t1, t2] = [token(principal), token(principal)];
    for (let i = 0; i < 60; i++) {
      const answer = await usage(bearer(i % 2 ? t1 : t2));
      expect(answer.status).toBe(200);
    }
    const limited = await usage(bearer(t1));
    expect(limited.status).toBe(429);
    expect(limited.json).toMatchObject({ error: 'RATE_LIMITED', code: 'RATE_LIMITED', status: 429 });
    expect(limited.json.retryAfter).toBeGreaterThanOrEqual(1);
    expect(limited.json.retryAfter).toBeLessThanOrEqual(60);
    expect(limited.headers['retry-after']).toBe(String(limited.json.retryAfter));

    // Another consumer is not affected; other routes are not rate limited.
    const other = token(
      principalOf({ userId: 'calm-user', org: { slug: 'acme', permissions: ['models:read'] } }),
    );
    expect((await usage(bearer(other))).status).toBe(200);
    expect((await request(edge.url, '/llm/v1/models', { headers: bearer(t1) })).status).toBe(200);
  });

  it('applies the checks to spellings the service would also route there (case, trailing slash)', async () => {
    const noPermission = token(principalOf({ org: { slug: 'acme', permissions: [] } }));
    for (const path of ['/llm/v1/quotas/usage/', '/llm/V1/Quotas/Usage', '/llm/v1/quotas/usage?x=1']) {
      expect((await usage(bearer(noPermission), path)).status).toBe(403);
    }
  });
});

describe('GET {gateway_url}/v1/quotas/usage: 60 requests in any 60 seconds (a sliding window)', () => {
  const start = Date.parse('2026-11-28T10:00:00Z');
  let auth: FakeAuth;
  let quota: Upstream;
  let edge: TestEdge;

  beforeAll(async () => {
    // only Date is faked: the edge's clock and its limits read the time the test sets, everything else runs for real
    jest.useFakeTimers({
      now: start,
      doNotFake: [
        'hrtime',
        'nextTick',
        'performance',
        'queueMicrotask',
        'setImmediate',
        'clearImmediate',
        'setInterval',
        'clearInterval',
        'setTimeout',
        'clearTimeout',
      ],
    });
    auth = await startFakeAuth();
    quota = await startUpstream('llm-quota');
    edge = await startEdge({ authUrl: auth.url, llmQuotaUrl: quota.url });
  });
  afterAll(async () => {
    await edge.close();
    await Promise.all([auth.close(), quota.close()]);
    jest.useRealTimers();
  });

  const member = (userId: string) => {
    const t = accessToken();
    auth.state.answers.set(t, () => ({
      principal: principalOf({ userId, org: { slug: 'acme', permissions: ['models:read'] } }),
      expiresAt: null,
      cacheTtlSeconds: 60,
    }));
    return bearer(t);
  };
  const usage = (headers: Record<string, string>) => request(edge.url, '/llm/v1/quotas/usage', { headers });
  const at = (seconds: number) => jest.setSystemTime(start + seconds * 1000);
  /** sends `count` requests now, answering their statuses */
  const burst = async (headers: Record<string, string>, count: number) => {
    const statuses: number[] = [];
    for (let i = 0; i < count; i++) statuses.push((await usage(headers)).status);
    return statuses;
  };

  it('admits nothing across a window boundary until the oldest of the last 60 is 60 s old, and says when', async () => {
    const busy = member('edge-busy');
    at(0);
    expect(await burst(busy, 1)).toEqual([200]);
    at(59);
    expect(await burst(busy, 59)).toEqual(Array(59).fill(200));
    const full = await usage(busy);
    expect(full.status).toBe(429);
    expect(full.json).toMatchObject({ code: 'RATE_LIMITED', retryAfter: 1 });
    expect(full.headers['retry-after']).toBe('1');

    // a fixed window starting at the first request admitted 60 more here: only the first request has left
    at(60);
    expect(await burst(busy, 1)).toEqual([200]);
    const after = await usage(busy);
    expect(after.status).toBe(429);
    expect(after.json.retryAfter).toBe(59);
    expect(after.headers['retry-after']).toBe('59');

    // refused requests were not recorded: the 59 sent at 59 s leave the window at 119 s, not later
    at(118.5);
    const almost = await usage(busy);
    expect(almost.status).toBe(429);
    expect(almost.json.retryAfter).toBe(1);
    at(119);
    expect(await burst(busy, 60)).toEqual([...Array(59).fill(200), 429]);
  });

  it('never asks for more than the window when the clock steps back: the log then counts from the new now', async () => {
    const steady = member('edge-clock-step');
    at(1_000);
    expect(await burst(steady, 60)).toEqual(Array(60).fill(200));
    // the host's clock is set back ten minutes (NTP step, a migrated VM)
    at(400);
    const refused = await usage(steady);
    expect(refused.status).toBe(429);
    expect(refused.json.retryAfter).toBe(60);
    expect(refused.headers['retry-after']).toBe('60');
    at(459);
    expect((await usage(steady)).status).toBe(429);
    at(460);
    expect(await burst(steady, 60)).toEqual(Array(60).fill(200));
    expect((await usage(steady)).status).toBe(429);
  });
});

describe('upload routes: a larger body limit than the rest', () => {
  let auth: FakeAuth;
  let gateway: Upstream;
  let edge: TestEdge;

  beforeAll(async () => {
    auth = await startFakeAuth();
    gateway = await startUpstream('llm-gateway');
    edge = await startEdge({
      authUrl: auth.url,
      llmQuotaUrl: gateway.url,
      env: { BODY_LIMIT_BYTES: '1024', UPLOAD_BODY_LIMIT_BYTES: '4096' },
    });
  });
  afterAll(async () => {
    await edge.close();
    await Promise.all([auth.close(), gateway.close()]);
  });

  const member = () => {
    const t = accessToken();
    auth.state.answers.set(t, () => ({
      principal: principalOf({ org: { slug: 'acme', permissions: ['models:read'] } }),
      expiresAt: null,
      cacheTtlSeconds: 60,
    }));
    return bearer(t);
  };
  const post = (path: string, bytes: number, chunked = false) =>
    request(edge.url, path, {
      method: 'POST',
      headers: { ...member(), 'content-type': 'multipart/form-data; boundary=x' },
      ...(chunked ? { chunked: [Buffer.alloc(bytes, 97)] } : { body: Buffer.alloc(bytes, 97) }),
    });

  it('lets an audio upload above BODY_LIMIT_BYTES through, up to UPLOAD_BODY_LIMIT_BYTES, declared or streamed', async () => {
    for (const task of ['transcriptions', 'translations'])
      for (const chunked of [false, true]) {
        const upload = await post(`/llm/v1/audio/${task}`, 3000, chunked);
        expect(upload.status).toBe(200);
        expect(upload.json).toMatchObject({ upstream: 'llm-gateway', url: `/v1/audio/${task}` });
        expect(gateway.received.at(-1)?.body).toHaveLength(3000);
      }
  });

  it('answers 413 past the upload limit there, and past the common limit everywhere else', async () => {
    const before = gateway.received.length;
    const tooBig = await post('/llm/v1/audio/transcriptions', 5000);
    expect(tooBig.status).toBe(413);
    expect(tooBig.json).toMatchObject({
      code: 'PAYLOAD_TOO_LARGE',
      message: expect.stringContaining('4096'),
    });
    const streamed = await post('/llm/v1/audio/transcriptions', 5000, true);
    expect(streamed.status).toBe(413);
    const chat = await post('/llm/v1/chat/completions', 3000);
    expect(chat.status).toBe(413);
    expect(chat.json).toMatchObject({ message: expect.stringContaining('1024') });
    expect(gateway.received.length).toBe(before);
  });
});
