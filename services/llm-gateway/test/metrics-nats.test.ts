import {
  describeWithNats,
  metricSum,
  type NatsServerHandle,
  startNatsServer,
  waitFor,
} from '@platform/testkit';
import { type GatewayWorld, startGatewayWorld } from './support';

/**
 * A NATS outage as the metrics show it (docs/decisions/0097), on a real nats-server: every service reports
 * the bus down, the gateway's usage outbox fills while it is away and empties once it is back, and llm-quota
 * counts the waiting events late, which its ingestion lag says.
 */
describeWithNats('the metrics during a NATS outage', () => {
  let nats: NatsServerHandle;
  let w: GatewayWorld;
  beforeAll(async () => {
    nats = await startNatsServer();
    w = await startGatewayWorld({
      natsUrl: nats.url,
      env: { LLM_GATEWAY_OUTBOX_INTERVAL_MS: '200', LLM_GATEWAY_PUBLISH_TIMEOUT_MS: '300' },
    });
  }, 60_000);
  afterAll(async () => {
    await w?.stop();
    await nats?.dispose();
  });

  const SERVICES = ['edge', 'auth', 'llmGateway', 'llmQuota'] as const;
  const scrape = async (service: (typeof SERVICES)[number]) =>
    (await fetch(`${w.p.admin[service]}/metrics`)).text();
  const busUp = async (service: (typeof SERVICES)[number]) =>
    metricSum(await scrape(service), 'dependency_up', { dependency: 'bus' });
  const outbox = async () => metricSum(await scrape('llmGateway'), 'llm_gateway_usage_outbox_events');
  const lag = async () => {
    const text = await scrape('llmQuota');
    return {
      count: metricSum(text, 'llm_quota_ingestion_lag_seconds_count'),
      sum: metricSum(text, 'llm_quota_ingestion_lag_seconds_sum'),
    };
  };

  it('reports the bus down and the outbox backlog while NATS is away, and the late counting after', async () => {
    const { owner } = await w.org('metrics-nats');
    const as = { bearer: owner.token };
    for (const service of SERVICES) expect(await busUp(service)).toBe(1);
    expect(await outbox()).toBe(0);
    const before = await lag();

    await nats.stop();
    const completions = 5;
    for (let i = 0; i < completions; i++) {
      const reply = await w.call('gateway', 'POST', '/v1/chat/completions', as, {
        model: 'mock/chat',
        messages: [{ role: 'user', content: `while NATS is away ${i}` }],
      });
      expect(reply.status).toBe(200);
    }
    const lastSentAt = Date.now();
    // the bus refused the events (publication timeout): they wait in the outbox
    await waitFor(async () => (await outbox()) >= completions, {
      timeoutMs: 20_000,
      what: 'the outbox to hold the events',
    });
    for (const service of SERVICES) expect(await busUp(service)).toBe(0);

    const restartedAt = Date.now();
    await nats.start();
    await waitFor(async () => (await outbox()) === 0, { timeoutMs: 30_000, what: 'the outbox to empty' });
    for (const service of SERVICES)
      await waitFor(async () => (await busUp(service)) === 1, {
        timeoutMs: 20_000,
        what: `${service} on NATS`,
      });
    const after = await waitFor(
      async () => {
        const now = await lag();
        return now.count - before.count >= completions ? now : null;
      },
      { timeoutMs: 30_000, what: 'llm-quota to count the waiting events' },
    );
    // every event occurred before lastSentAt and was counted after NATS came back
    expect(after.sum - before.sum).toBeGreaterThanOrEqual((completions * (restartedAt - lastSentAt)) / 1000);
  }, 120_000);
});
