import { randomUUID } from 'node:crypto';
import { type LlmCompletionEvent, Subjects } from '@platform/contracts';
import { ManualClock } from '@platform/kernel';
import {
  describeWithNats,
  type NatsServerHandle,
  startNatsServer,
  tempDir,
  waitFor,
} from '@platform/testkit';
import { connect, type NatsConnection, StringCodec } from 'nats';
import { startTestPlatform, type TestPlatform } from '../harness';

/**
 * Usage is never lost while llm-quota is down: events published by a gateway while it is stopped wait
 * in the JetStream stream, and are all counted, once, when it is back.
 */

const codec = StringCodec();

describeWithNats('llm-quota stopped while a gateway keeps publishing', () => {
  let nats: NatsServerHandle;
  let nc: NatsConnection;
  let data: ReturnType<typeof tempDir>;
  let p: TestPlatform | null = null;
  // A fixed time, so that no month boundary can fall between a publish and a read.
  const clock = new ManualClock('2025-06-15T12:00:00Z');

  const call = async (
    base: string,
    method: string,
    path: string,
    headers: Record<string, string>,
    body?: unknown,
  ) => {
    const res = await fetch(`${base}${path}`, {
      method,
      headers: body === undefined ? headers : { ...headers, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    // biome-ignore lint/suspicious/noExplicitAny: asserted field by field
    return { status: res.status, body: (await res.json()) as any };
  };
  const publish = (event: LlmCompletionEvent) =>
    nc.publish(Subjects.llmCompletion, codec.encode(JSON.stringify(event)));
  const event = (i: number): LlmCompletionEvent => ({
    id: `restart-${i}`,
    version: 1,
    occurredAt: clock.now().toISOString(),
    orgSlug: 'restart-co',
    model: 'gpt-4o-mini',
    provider: 'openai',
    usage: { prompt_tokens: i, completion_tokens: 1, total_tokens: i + 1 },
    cost: 0.01,
  });
  const expectedTokens = (from: number, to: number) => {
    let sum = 0;
    for (let i = from; i < to; i++) sum += i + 1;
    return sum;
  };

  beforeAll(async () => {
    nats = await startNatsServer();
    nc = await connect({ servers: nats.url });
    data = tempDir('quota-restart-');
  });
  afterAll(async () => {
    await p?.stop();
    await nc.close();
    await nats.dispose();
    data.remove();
  });

  /** An organization of the running platform, and its monthly tokens as `GET /v1/quotas/usage` shows them. */
  const organization = async (slug: string) => {
    const owner = (await call(p!.baseUrl, 'POST', '/v2/login/anonymous', {})).body;
    const auth = { authorization: `Bearer ${owner.token}` };
    expect((await call(p!.baseUrl, 'POST', '/v2/orgs', auth, { slug, name: slug })).status).toBe(201);
    const key = (
      await call(p!.baseUrl, 'POST', `/v2/orgs/${slug}/apikeys`, auth, {
        name: `k-${randomUUID()}`,
        permissions: ['models:read'],
      })
    ).body.apiKey as string;
    const monthlyTokens = async (platform: TestPlatform) => {
      const reply = await call(platform.gatewayUrl, 'GET', '/v1/quotas/usage', { 'x-platform-api-key': key });
      expect(reply.status).toBe(200);
      return reply.body.enforced.find((g: { key: string }) => g.key === 'llm.monthly_tokens').used as number;
    };
    return { key, monthlyTokens };
  };
  /**
   * How often a test reads the usage: the edge answers a key's usage reads 60 a minute, and this clock stands still,
   * so polls at the default 20 ms spent them within about 2 s of a late count, then met only 429s; at this pace a
   * wait runs out first.
   */
  const usagePolls = { intervalMs: 500 };
  const allHandled = () =>
    waitFor(
      async () => {
        const after = await (await nc.jetstreamManager()).consumers.info('ANALYTICS', 'llm-quota');
        return after.num_pending + after.num_ack_pending === 0;
      },
      { what: 'every message handled' },
    );

  it('counts every event published while it was stopped, and none twice', async () => {
    p = await startTestPlatform({ clock, natsUrl: nats.url, dataDir: data.dir });
    const { key, monthlyTokens } = await organization('restart-co');

    for (let i = 0; i < 10; i++) publish(event(i));
    await waitFor(async () => (await monthlyTokens(p!)) === expectedTokens(0, 10), {
      ...usagePolls,
      what: 'the first ten',
    });

    // The whole platform goes down, llm-quota with it; the gateway keeps publishing (some twice).
    await p.stop();
    p = null;
    for (let i = 10; i < 210; i++) publish(event(i));
    for (let i = 0; i < 20; i++) publish(event(i));
    await nc.flush();
    // stored by the stream (asynchronously for core publishes), waiting for llm-quota
    await waitFor(
      async () =>
        (await (await nc.jetstreamManager()).consumers.info('ANALYTICS', 'llm-quota')).num_pending === 220,
      { what: 'the 220 messages kept while llm-quota is down' },
    );

    p = await startTestPlatform({ clock, natsUrl: nats.url, dataDir: data.dir });
    await waitFor(async () => (await monthlyTokens(p!)) >= expectedTokens(0, 210), {
      ...usagePolls,
      timeoutMs: 10_000,
      what: 'the backlog counted',
    });
    await allHandled();
    expect(await monthlyTokens(p)).toBe(expectedTokens(0, 210));
    const reply = await call(p.gatewayUrl, 'GET', '/v1/quotas/usage', { 'x-platform-api-key': key });
    expect(reply.body.enforced.find((g: { key: string }) => g.key === 'llm.monthly_cost').used).toBeCloseTo(
      2.1,
      6,
    );
  });

  it('does not count again, after a restart, an event counted alone (its batch recorded on its claim)', async () => {
    p ??= await startTestPlatform({ clock, natsUrl: nats.url, dataDir: data.dir });
    const { monthlyTokens } = await organization('restart-solo');
    const alone = { ...event(1_000), orgSlug: 'restart-solo' };
    publish(alone);
    await waitFor(async () => (await monthlyTokens(p!)) === 1_001, {
      ...usagePolls,
      what: 'the event counted',
    });
    await allHandled();
    await p.stop();
    p = await startTestPlatform({ clock, natsUrl: nats.url, dataDir: data.dir });
    publish(alone); // published again by a gateway whose acknowledgement was lost
    publish({ ...event(2_000), orgSlug: 'restart-solo' });
    await waitFor(async () => (await monthlyTokens(p!)) >= 1_001 + 2_001, {
      ...usagePolls,
      what: 'the new event counted',
    });
    await allHandled();
    expect(await monthlyTokens(p)).toBe(1_001 + 2_001);
  });
});
