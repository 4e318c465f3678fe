import { listen, loadConfig, ManualClock, type RunningServer, silentLogger } from '@platform/kernel';
import { createEmbeddedStore } from '@platform/store';
import { tempDir } from '@platform/testkit';
import { createEdgeService, edgeConfigSchema } from '../../services/edge/src';
import { startLegacyApp, TEST_SECRET } from '../../services/legacy-agent/test/support/legacy-app';
import { callJson, startTestPlatform, type TestPlatform } from '../harness';

/**
 * Decision 0112: /v1/Messages is public (the client token sits in web pages), so it is limited per assistant
 * and client address, and per user, with counters every legacy-agent instance shares. Through the real edge,
 * which forwards the client's address (it trusts the test's loopback hop here, as it would a load balancer).
 */
const SHOP = 'https://shop.example';
const V1_OPEN = { LEGACY_V1_RETIREMENT_DATE: '2099-01-01', TRUST_PROXY: 'loopback' };
const LIMITS = { LEGACY_MESSAGES_PER_ADDRESS: '5', LEGACY_MESSAGES_PER_USER: '100' };

async function assistantOn(legacyUrl: string, name: string) {
  const signup = await callJson(`${legacyUrl}/v2/auth/signup`, 'POST', {
    body: { username: name, password: 'open all hours' },
  });
  const created = await callJson(`${legacyUrl}/v2/bots`, 'POST', {
    body: { name, lang: 'en' },
    bearer: signup.body.sessionToken,
  });
  const bot = created.body as { clientToken: string; developerToken: string };
  const patched = await callJson(`${legacyUrl}/v1/bots`, 'PATCH', {
    bearer: bot.developerToken,
    body: { allowedOrigins: [SHOP] },
  });
  expect(patched.status).toBe(200);
  return bot;
}

/** One message as a visitor's browser (or a script) sends it, from `address`. */
function message(
  legacyUrl: string,
  clientToken: string,
  address: string,
  userId: string,
  headers: Record<string, string> = {},
) {
  return fetch(`${legacyUrl}/v1/Messages`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${clientToken}`,
      'content-type': 'application/json',
      'x-forwarded-for': address,
      ...headers,
    },
    body: JSON.stringify({ userId, platform: 'web', event: 'WELCOME' }),
  });
}

describe('Messages rate limit through the edge', () => {
  // a quarter past a minute: the window (aligned on the minute) has 45 seconds left
  const clock = new ManualClock('2026-11-23T10:00:15Z');
  let platform: TestPlatform;
  let bot: { clientToken: string };

  beforeAll(async () => {
    platform = await startTestPlatform({ clock, env: { ...V1_OPEN, ...LIMITS } });
    bot = await assistantOn(platform.legacyUrl, 'shop');
  });
  afterAll(() => platform.stop());

  it('refuses the sixth message from one address in a minute: 429 in the Messages shape, Retry-After, CORS', async () => {
    const send = (userId: string, headers?: Record<string, string>) =>
      message(platform.legacyUrl, bot.clientToken, '203.0.113.10', userId, headers);
    for (let i = 0; i < 5; i++) expect((await send(`visitor-${i}`)).status).toBe(200);

    const refused = await send('visitor-5', { origin: SHOP });
    expect(refused.status).toBe(429);
    expect(refused.headers.get('retry-after')).toBe('45');
    // a page of an allowed origin can read the refusal and its Retry-After
    expect(refused.headers.get('access-control-allow-origin')).toBe(SHOP);
    expect(refused.headers.get('access-control-expose-headers')).toContain('retry-after');
    expect(await refused.json()).toEqual({
      id: expect.any(String),
      timestamp: expect.any(String),
      status: {
        code: 429,
        errorType: 'rate_limited',
        errorDetails: expect.stringMatching(/^Too many messages from this address/),
        details: { scope: 'address', limit: 5, windowSeconds: 60 },
      },
      requestId: expect.any(String),
    });

    // another address is not affected
    const other = await message(platform.legacyUrl, bot.clientToken, '198.51.100.20', 'visitor-0');
    expect(other.status).toBe(200);
    // the next window admits the first address again
    clock.advance(45_000);
    expect((await send('visitor-6')).status).toBe(200);
  });

  it("counts each assistant's budget apart: a busy page does not stop another site's chat", async () => {
    const second = await assistantOn(platform.legacyUrl, 'bakery');
    const from = '203.0.113.11';
    for (let i = 0; i < 5; i++)
      expect((await message(platform.legacyUrl, bot.clientToken, from, `v${i}`)).status).toBe(200);
    expect((await message(platform.legacyUrl, bot.clientToken, from, 'v5')).status).toBe(429);
    expect((await message(platform.legacyUrl, second.clientToken, from, 'v0')).status).toBe(200);
  });

  it('checks the token, the origin and the address budget before the body: a malformed body is still a request', async () => {
    const from = '203.0.113.12';
    const malformed = (headers: Record<string, string>) =>
      fetch(`${platform.legacyUrl}/v1/Messages`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-forwarded-for': from, ...headers },
        body: '{"userId": "x", "platform": ',
      });
    // no token, or a page of a refused origin: refused as such, spending nothing
    const anonymous = await malformed({});
    expect(anonymous.status).toBe(401);
    expect(((await anonymous.json()) as { status: { errorType: string } }).status.errorType).toBe(
      'unauthorized',
    );
    const refusedOrigin = await malformed({
      authorization: `Bearer ${bot.clientToken}`,
      origin: 'https://elsewhere.example',
    });
    expect(refusedOrigin.status).toBe(403);
    // each malformed body takes a point of the address's budget, as any message does
    for (let i = 0; i < 5; i++) {
      const res = await malformed({ authorization: `Bearer ${bot.clientToken}`, origin: SHOP });
      expect(res.status).toBe(400);
      // an allowed page can read why
      expect(res.headers.get('access-control-allow-origin')).toBe(SHOP);
      expect(((await res.json()) as { status: { errorType: string } }).status.errorType).toBe(
        'invalid_request',
      );
    }
    expect((await malformed({ authorization: `Bearer ${bot.clientToken}` })).status).toBe(429);
    expect((await message(platform.legacyUrl, bot.clientToken, from, 'after')).status).toBe(429);
  });
});

describe('two legacy-agent instances sharing one store', () => {
  const clock = new ManualClock('2026-11-23T11:00:00Z');
  const data = tempDir('two-legacy-agents-');
  const store = createEmbeddedStore({ dataDir: data.dir, now: () => clock.now().getTime() });
  let platform: TestPlatform;
  const edges: string[] = [];
  const servers: RunningServer[] = [];
  const stops: Array<() => Promise<void>> = [];

  beforeAll(async () => {
    // auth and llm-quota for the edges; the legacy-agent instances are the two below
    platform = await startTestPlatform({ env: V1_OPEN });
    for (let i = 0; i < 2; i++) {
      const legacy = await startLegacyApp({ clock, store, env: LIMITS });
      stops.push(() => legacy.stop());
      const legacyServer = await listen(legacy.service.handler, 0, '127.0.0.1');
      servers.push(legacyServer);
      const edge = await createEdgeService({
        config: loadConfig(edgeConfigSchema, {
          PLATFORM_INTERNAL_SECRET: TEST_SECRET,
          AUTH_URL: platform.upstreams.auth!,
          LLM_QUOTA_URL: platform.upstreams.llmQuota!,
          LEGACY_AGENT_URL: legacyServer.url,
          LOG_LEVEL: 'silent',
          ...V1_OPEN,
        }),
        logger: silentLogger(),
        clock,
        bus: platform.bus,
      });
      await edge.start();
      stops.push(() => edge.stop());
      const edgeServer = await listen(edge.handler, 0, '127.0.0.1');
      servers.push(edgeServer);
      edges.push(`${edgeServer.url}/legacy`);
    }
  }, 60_000);

  afterAll(async () => {
    for (const server of servers.reverse()) await server.close(5_000);
    for (const stop of stops.reverse()) await stop();
    await store.close();
    await platform?.stop();
    data.remove();
  });

  it('admit together no more than the limit: 30 messages at once from one address, half to each, 5 answered', async () => {
    const bot = await assistantOn(edges[0]!, 'twin');
    const replies = await Promise.all(
      Array.from({ length: 30 }, async (_, i) => {
        const res = await message(edges[i % 2]!, bot.clientToken, '203.0.113.50', `visitor-${i}`);
        return { instance: i % 2, status: res.status };
      }),
    );
    expect(replies.filter((r) => r.status === 200)).toHaveLength(5);
    expect(replies.filter((r) => r.status === 429)).toHaveLength(25);
    // both instances refused: the budget was shared, not split
    expect(new Set(replies.filter((r) => r.status === 429).map((r) => r.instance))).toEqual(new Set([0, 1]));
  });
});
