import { describeWithNats, type NatsServerHandle, startNatsServer, waitFor } from '@platform/testkit';
import { type GatewayWorld, gauge, startGatewayWorld } from './support';

/**
 * The durable outbox against a real nats-server: NATS is stopped while 1,000 completions go through
 * the gateway and started again; llm-quota then counts every one of them exactly once.
 */
/** A gateway world on a real nats-server, which is stopped before the platform starts when `natsAway`. */
function natsWorld(natsAway: boolean): { nats: NatsServerHandle; w: GatewayWorld } {
  const world = {} as { nats: NatsServerHandle; w: GatewayWorld };
  beforeAll(async () => {
    world.nats = await startNatsServer();
    if (natsAway) await world.nats.stop();
    world.w = await startGatewayWorld({
      natsUrl: world.nats.url,
      env: { LLM_GATEWAY_OUTBOX_INTERVAL_MS: '200', LLM_GATEWAY_PUBLISH_TIMEOUT_MS: '300' },
    });
  }, 60_000);
  afterAll(async () => {
    await world.w?.stop();
    await world.nats?.dispose();
  });
  return world;
}

/** llm-quota's count of the organization's tokens once it has reached `tokens` (it must not pass it) */
async function countedTokens(w: GatewayWorld, as: { bearer: string }, tokens: number, what: string) {
  const usage = await waitFor(
    async () => {
      const reply = await w.call('gateway', 'GET', '/v1/quotas/usage', as);
      return reply.status === 200 && gauge(reply, 'llm.monthly_tokens').used >= tokens ? reply : null;
    },
    { timeoutMs: 60_000, intervalMs: 1_000, what }, // the edge answers 60 usage reads a minute per caller
  );
  return gauge(usage, 'llm.monthly_tokens').used;
}

describeWithNats('usage events survive a NATS outage', () => {
  const world = natsWorld(false);

  it('NATS stopped during 1,000 completions and restarted: each is counted exactly once', async () => {
    const { nats, w } = world;
    const { owner } = await w.org('nats-outage');
    const as = { bearer: owner.token };
    const total = 1_000;
    const metric = async (outcome: string) => {
      const text = await (await fetch(`${w.p.admin.llmGateway}/metrics`)).text();
      const m = new RegExp(`llm_gateway_usage_events_total\\{outcome="${outcome}"[^}]*\\} (\\d+)`).exec(text);
      return m ? Number(m[1]) : 0;
    };
    let sent = 0;
    let tokens = 0;
    const failures: string[] = [];
    const worker = async () => {
      while (sent < total) {
        const i = sent++;
        if (i === 300) await nats.stop();
        if (i === 700) {
          // the outage lasts until the bus has refused some events for good
          await waitFor(async () => (await metric('deferred')) > 0, {
            timeoutMs: 20_000,
            what: 'deferred events',
          });
          await nats.start();
        }
        const reply = await w.call('gateway', 'POST', '/v1/chat/completions', as, {
          model: 'mock/chat',
          messages: [{ role: 'user', content: `request number ${i}` }],
        });
        if (reply.status !== 200)
          failures.push(`${i}: ${reply.status} ${JSON.stringify(reply.body).slice(0, 200)}`);
        else tokens += reply.body.usage.total_tokens;
      }
    };
    await Promise.all(Array.from({ length: 8 }, worker));
    expect(failures).toEqual([]);

    // The outage was real: the bus refused some events, which waited in the outbox.
    expect(await metric('deferred')).toBeGreaterThan(0);
    // every event left the outbox: the first publication or a later one reached the stream
    await waitFor(async () => (await metric('published')) + (await metric('republished')) >= total, {
      timeoutMs: 60_000,
      what: 'the outbox to deliver every event',
    });
    expect(await countedTokens(w, as, tokens, 'llm-quota to count every completion')).toBe(tokens);
  }, 180_000);
});

describeWithNats('a platform started while NATS is away', () => {
  const world = natsWorld(true);

  it('starts and serves, every service ready and reporting the bus; once NATS is there the usage is counted', async () => {
    const { nats, w } = world;
    for (const service of ['auth', 'llmQuota', 'llmGateway'] as const) {
      const ready = await fetch(`${w.p.admin[service]}/readyz`);
      expect(ready.status).toBe(200);
      expect(await ready.json()).toMatchObject({ degraded: ['bus'] });
    }
    const { owner } = await w.org('nats-late');
    const as = { bearer: owner.token };
    let tokens = 0;
    for (let i = 0; i < 5; i++) {
      const reply = await w.call('gateway', 'POST', '/v1/chat/completions', as, {
        model: 'mock/chat',
        messages: [{ role: 'user', content: `before NATS ${i}` }],
      });
      expect(reply.status).toBe(200);
      tokens += reply.body.usage.total_tokens;
    }

    await nats.start();
    for (const service of ['auth', 'llmQuota', 'llmGateway'] as const)
      await waitFor(
        async () => {
          const ready = (await (await fetch(`${w.p.admin[service]}/readyz`)).json()) as {
            checks: Record<string, string>;
          };
          return ready.checks.bus === 'ok';
        },
        { timeoutMs: 20_000, what: `${service} on NATS` },
      );
    expect(await countedTokens(w, as, tokens, 'llm-quota to count the completions made before NATS')).toBe(
      tokens,
    );
  }, 120_000);
});
