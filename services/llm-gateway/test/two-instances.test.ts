import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { createEdgeService, edgeConfigSchema } from '@platform/edge';
import { listen, loadConfig, type RunningServer, silentLogger, systemClock } from '@platform/kernel';
import { createEmbeddedStore, type Store } from '@platform/store';
import { clearOfMinuteEnd, tempDir } from '@platform/testkit';
import { llmGatewayConfigSchema } from '../src/config';
import { createLlmGatewayService } from '../src/service';
import {
  type GatewayWorld,
  gatewayFile,
  gauge,
  INTERNAL_SECRET,
  minuteNow,
  startGatewayWorld,
} from './support';

/**
 * Issue 9, must show: two gateway instances sharing one store, 200 concurrent requests against an org
 * rpm of 50, exactly 50 admitted. Each instance is a gateway service with its own HTTP listener and
 * its own edge in front of it (the platform's auth, llm-quota and bus behind both edges); the two
 * instances share one embedded store (its folder, its counters). Requests go over real HTTP to the
 * two edges, half to each, all at once.
 */
describe('two gateway instances sharing one store', () => {
  let w: GatewayWorld;
  const data = tempDir('two-gateways-');
  let store: Store;
  const servers: RunningServer[] = [];
  const stops: Array<() => Promise<void>> = [];
  const edges: string[] = [];

  beforeAll(async () => {
    w = await startGatewayWorld();
    const file = path.join(data.dir, 'gateway.json');
    writeFileSync(file, JSON.stringify(gatewayFile(w.sim)));
    store = createEmbeddedStore({ dataDir: path.join(data.dir, 'store') });
    for (let i = 0; i < 2; i++) {
      const gateway = await createLlmGatewayService({
        config: loadConfig(llmGatewayConfigSchema, {
          PLATFORM_INTERNAL_SECRET: INTERNAL_SECRET,
          LLM_QUOTA_URL: w.p.upstreams.llmQuota!,
          LLM_GATEWAY_CONFIG: file,
          LOG_LEVEL: 'silent',
        }),
        logger: silentLogger(),
        clock: systemClock,
        store,
        bus: w.p.bus,
      });
      await gateway.start();
      stops.push(() => gateway.stop());
      const gatewayServer = await listen(gateway.handler, 0, '127.0.0.1');
      servers.push(gatewayServer);
      const edge = await createEdgeService({
        config: loadConfig(edgeConfigSchema, {
          PLATFORM_INTERNAL_SECRET: INTERNAL_SECRET,
          AUTH_URL: w.p.upstreams.auth!,
          LLM_QUOTA_URL: w.p.upstreams.llmQuota!,
          LLM_GATEWAY_URL: gatewayServer.url,
          LEGACY_AGENT_URL: w.p.upstreams.legacyAgent!,
          LOG_LEVEL: 'silent',
        }),
        logger: silentLogger(),
        clock: systemClock,
        bus: w.p.bus,
      });
      await edge.start();
      stops.push(() => edge.stop());
      const edgeServer = await listen(edge.handler, 0, '127.0.0.1');
      servers.push(edgeServer);
      edges.push(`${edgeServer.url}/llm`);
    }
  }, 60_000);

  afterAll(async () => {
    for (const server of servers.reverse()) await server.close(5_000);
    for (const stop of stops.reverse()) await stop();
    await store?.close();
    await w?.stop();
    data.remove();
  });

  it('200 concurrent chat requests through two edges against an org rpm of 50: exactly 50 admitted, usage shows 50', async () => {
    const { owner } = await w.org('two-gateways', 'rpm50');
    // 200 requests on a loaded machine take seconds: all in one minute, or the next one's 50 are admitted too
    await clearOfMinuteEnd();
    const sentIn = minuteNow();
    const replies = await Promise.all(
      Array.from({ length: 200 }, async (_, i) => {
        const res = await fetch(`${edges[i % 2]}/v1/chat/completions`, {
          method: 'POST',
          headers: { authorization: `Bearer ${owner.token}`, 'content-type': 'application/json' },
          body: JSON.stringify({
            model: 'sim/gpt',
            messages: [{ role: 'user', content: `request ${i}` }],
          }),
        });
        // biome-ignore lint/suspicious/noExplicitAny: answers are asserted field by field
        return { instance: i % 2, status: res.status, body: (await res.json()) as any };
      }),
    );
    const admitted = replies.filter((r) => r.status === 200);
    const refused = replies.filter((r) => r.status === 429);
    expect(admitted).toHaveLength(50);
    expect(refused).toHaveLength(150);
    // both instances served and refused: the limit was shared, not split
    expect(new Set(admitted.map((r) => r.instance))).toEqual(new Set([0, 1]));
    expect(new Set(refused.map((r) => r.instance))).toEqual(new Set([0, 1]));
    for (const r of refused) {
      expect(r.body).toMatchObject({
        code: 'RATE_LIMITED',
        details: { key: 'llm.rpm', scope: 'org', limit: 50, window: 'minute' },
      });
    }
    const tokens = admitted.reduce((sum, r) => sum + r.body.usage.total_tokens, 0);

    // llm-quota's minute gauge shows the requests while their minute lasts (the test may straddle its end)
    const usage = await w.counted('two-gateways', { bearer: owner.token }, { requests: 50, tokens, sentIn });
    expect(gauge(usage, 'llm.monthly_tokens').used).toBe(tokens);
    if (minuteNow() === sentIn) expect(gauge(usage, 'llm.rpm')).toMatchObject({ used: 50, limit: 50 });
  }, 60_000);
});
