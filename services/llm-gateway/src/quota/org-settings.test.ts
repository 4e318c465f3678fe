import { createInProcessBus } from '@platform/bus';
import { createLogger, ManualClock, silentLogger } from '@platform/kernel';
import request from 'supertest';
import { fakeQuota, orgSettings, ownerHeaders, startGatewayService } from '../../test/gateway-instance';
import { type OrgGatewaySettings, OrgSettingsSource } from './org-settings';

/** llm-quota's answers, one version per fetch, whose release the test decides. */
function scriptedQuota() {
  const state = { fetches: 0, version: 0, gate: Promise.resolve() as Promise<void> };
  const doFetch = (async () => {
    state.fetches++;
    const version = ++state.version;
    await state.gate;
    return new Response(JSON.stringify({ orgSlug: 'acme', policy: 'hard_block', version }), {
      status: 200,
      headers: { 'content-type': 'application/json' },
    });
  }) as unknown as typeof fetch;
  return { state, doFetch };
}

const versionOf = (s: OrgGatewaySettings) => (s as unknown as { version: number }).version;

describe('organization settings from llm-quota', () => {
  it('fresh within the TTL; for one more TTL answered at once and refreshed behind; later read again', async () => {
    const clock = new ManualClock('2026-11-24T10:00:00Z');
    const { state, doFetch } = scriptedQuota();
    const source = new OrgSettingsSource({
      quotaUrl: 'http://quota',
      secret: 's',
      ttlMs: 5_000,
      clock,
      logger: silentLogger(),
      fetch: doFetch,
    });
    expect(versionOf(await source.get('acme'))).toBe(1);
    clock.advance(4_000);
    expect(versionOf(await source.get('acme'))).toBe(1);
    expect(state.fetches).toBe(1);

    // stale: the request does not wait for llm-quota (which is slow now)
    let release: () => void = () => undefined;
    state.gate = new Promise((resolve) => {
      release = resolve;
    });
    clock.advance(2_000);
    expect(versionOf(await source.get('acme'))).toBe(1);
    expect(versionOf(await source.get('acme'))).toBe(1);
    expect(state.fetches).toBe(2); // one refresh, however many requests
    release();
    await new Promise((resolve) => setImmediate(resolve));
    expect(versionOf(await source.get('acme'))).toBe(2);

    // older than two TTLs: read again before answering
    state.gate = Promise.resolve();
    clock.advance(10_001);
    expect(versionOf(await source.get('acme'))).toBe(3);
  });

  it('with a TTL of 0 every request reads llm-quota', async () => {
    const clock = new ManualClock('2026-11-24T10:00:00Z');
    const { state, doFetch } = scriptedQuota();
    const source = new OrgSettingsSource({
      quotaUrl: 'http://quota',
      secret: 's',
      ttlMs: 0,
      clock,
      logger: silentLogger(),
      fetch: doFetch,
    });
    await source.get('acme');
    await source.get('acme');
    expect(state.fetches).toBe(2);
  });
});

describe('organization settings kept in one instance', () => {
  const answering = () => {
    const fetched: string[] = [];
    const doFetch = (async (url: string) => {
      const slug = decodeURIComponent(url.split('/internal/orgs/')[1]!.split('/')[0]!);
      fetched.push(slug);
      return new Response(JSON.stringify({ orgSlug: slug, policy: 'hard_block' }), {
        status: 200,
        headers: { 'content-type': 'application/json' },
      });
    }) as unknown as typeof fetch;
    return { fetched, doFetch };
  };

  it('holds at most maxEntries organizations however many call, the least recently used leaving first', async () => {
    const clock = new ManualClock('2026-11-24T10:00:00Z');
    const { fetched, doFetch } = answering();
    const source = new OrgSettingsSource({
      quotaUrl: 'http://quota',
      secret: 's',
      ttlMs: 60_000,
      clock,
      logger: silentLogger(),
      fetch: doFetch,
      maxEntries: 3,
    });
    await source.get('kept');
    for (let i = 0; i < 1_000; i++) {
      await source.get(`org-${i}`);
      await source.get('kept'); // used all along: never the one to leave
    }
    expect(fetched.filter((slug) => slug === 'kept')).toHaveLength(1);

    // one that left is read from llm-quota again, and answers as before
    expect((await source.get('org-0')).orgSlug).toBe('org-0');
    expect(fetched.filter((slug) => slug === 'org-0')).toHaveLength(2);
    expect(source.size).toBe(3);
  });
});

describe("llm-quota's month as the gateway reads it", () => {
  /** a logger whose lines the test reads */
  const recording = () => {
    const lines: Array<Record<string, unknown>> = [];
    const logger = createLogger({
      name: 'llm-gateway',
      destination: { write: (line: string) => lines.push(JSON.parse(line)) },
    });
    return { lines, logger };
  };
  const answering = (month: unknown) =>
    (async () => Response.json({ orgSlug: 'acme', policy: 'hard_block', month })) as unknown as typeof fetch;

  it('a month whose start is no date floors nothing, and is logged once, not at every read', async () => {
    for (const month of [
      { start: 5, tokens: 90, cost: 1 },
      { start: null, tokens: 90, cost: 1 },
      { start: 'soon', tokens: 90, cost: 1 },
      { start: '2026-13-45T00:00:00.000Z', tokens: 90, cost: 1 },
      { start: '2026-11-01T00:00:00.000Z', tokens: 'many', cost: 1 },
      null,
      undefined,
    ]) {
      const { lines, logger } = recording();
      const source = new OrgSettingsSource({
        quotaUrl: 'http://quota',
        secret: 's',
        ttlMs: 0,
        clock: new ManualClock('2026-11-24T10:00:00Z'),
        logger,
        fetch: answering(month),
      });
      for (let i = 0; i < 3; i++)
        expect((await source.get('acme')).month).toEqual({ start: '', tokens: 0, cost: 0 });
      expect([month, lines.filter((line) => line.level === 40)]).toEqual([
        month,
        [expect.objectContaining({ orgSlug: 'acme', msg: expect.stringContaining('month') })],
      ]);
    }
  });

  it('a month llm-quota names is read as it is', async () => {
    const { lines, logger } = recording();
    const month = { start: '2026-11-01T00:00:00.000Z', tokens: 90, cost: 1.5 };
    const source = new OrgSettingsSource({
      quotaUrl: 'http://quota',
      secret: 's',
      ttlMs: 0,
      clock: new ManualClock('2026-11-24T10:00:00Z'),
      logger,
      fetch: answering(month),
    });
    expect((await source.get('acme')).month).toEqual(month);
    expect(lines).toEqual([]);
  });

  it('a request of an organization whose month start is no date is served, never a 500', async () => {
    const bus = createInProcessBus();
    const gateway = await startGatewayService({
      file: {
        providers: [{ name: 'mock', type: 'mock' }],
        models: [
          {
            model_id: 'mock/chat',
            type: 'completion',
            provider_config: { provider: 'mock', model: 'mock-chat' },
          },
        ],
      },
      bus,
      fetch: fakeQuota((slug) =>
        orgSettings(slug, {
          limits: { 'llm.monthly_tokens': 1_000_000 },
          month: { start: 20261101 as unknown as string, tokens: 0, cost: 0 },
        }),
      ),
    });
    try {
      const res = await request(gateway.service.handler)
        .post('/v1/chat/completions')
        .set(ownerHeaders('acme'))
        .send({ model: 'mock/chat', messages: [{ role: 'user', content: 'hello' }] });
      expect(res.status).toBe(200);
    } finally {
      await gateway.stop();
      await bus.close();
    }
  });
});
