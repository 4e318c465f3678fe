import { mkdirSync, renameSync, rmdirSync } from 'node:fs';
import path from 'node:path';
import { describeWithNats, type NatsServerHandle, startNatsServer, waitFor } from '@platform/testkit';
import { callJson, startTestPlatform, type TestPlatform } from '../harness';

/** Issue 13 item 1: the platform degrades and never falls over when its store or NATS fails. */

/** The disk under one of a service's collections fails: its file becomes a folder (unwritable even for root). */
function breakCollection(dataDir: string, service: string, collection: string): () => void {
  const file = path.join(dataDir, service, `${collection}.db`);
  renameSync(file, `${file}.away`);
  mkdirSync(file);
  return () => {
    rmdirSync(file);
    renameSync(`${file}.away`, file);
  };
}

const readiness = async (adminUrl: string) => {
  const res = await fetch(`${adminUrl}/readyz`);
  return {
    status: res.status,
    body: (await res.json()) as { checks: Record<string, string>; degraded: string[] },
  };
};

describe('when a service cannot write its store', () => {
  let p: TestPlatform;
  beforeAll(async () => {
    p = await startTestPlatform();
  });
  afterAll(() => p.stop());

  it('answers 503 in the envelope, keeps what it acknowledged, and recovers without a restart', async () => {
    const before = await callJson(`${p.baseUrl}/v2/login/anonymous`, 'POST');
    expect(before.status).toBe(200);
    const repair = breakCollection(p.dataDir, 'auth', 'sessions');

    const res = await fetch(`${p.baseUrl}/v2/login/anonymous`, { method: 'POST' });
    expect(res.status).toBe(503);
    expect(res.headers.get('retry-after')).toBe('1');
    const body = await res.json();
    expect(body).toMatchObject({ error: 'StoreUnavailable', status: 503, requestId: expect.any(String) });
    expect(JSON.stringify(body)).not.toMatch(/EISDIR|sessions\.db|stack/);
    const unready = await readiness(p.admin.auth!);
    expect(unready.status).toBe(503);
    expect(unready.body.checks.store).toMatch(/sessions/);

    repair();
    await waitFor(async () => (await readiness(p.admin.auth!)).status === 200, {
      what: 'auth ready again',
    });
    const after = await callJson(`${p.baseUrl}/v2/login/anonymous`, 'POST');
    expect(after.status).toBe(200);
    // the session acknowledged before the failure still works
    expect((await callJson(`${p.baseUrl}/v2/me`, 'GET', { bearer: before.body.token })).status).toBe(200);
    expect((await callJson(`${p.baseUrl}/v2/me`, 'GET', { bearer: after.body.token })).status).toBe(200);
  });

  it('counts a completion the gateway could not write to its outbox: the event goes to the bus directly', async () => {
    const session = (await callJson(`${p.baseUrl}/v2/login/anonymous`, 'POST')).body.token as string;
    const org = await callJson(`${p.baseUrl}/v2/orgs`, 'POST', {
      bearer: session,
      body: { slug: 'outbox-away', name: 'Outbox away' },
    });
    expect(org.status).toBe(201);
    const monthlyTokens = async () => {
      const reply = await callJson(`${p.gatewayUrl}/v1/quotas/usage`, 'GET', { bearer: session });
      if (reply.status !== 200) return null;
      return reply.body.enforced.find((g: { key: string }) => g.key === 'llm.monthly_tokens').used as number;
    };
    await waitFor(async () => (await monthlyTokens()) === 0, { what: 'the new org on the quota endpoint' });
    const chat = async (text: string) => {
      const reply = await callJson(`${p.gatewayUrl}/v1/chat/completions`, 'POST', {
        bearer: session,
        body: { model: 'mock/chat', messages: [{ role: 'user', content: text }] },
      });
      expect(reply.status).toBe(200);
      return reply.body.usage.total_tokens as number;
    };
    const first = await chat('one answer counted the usual way');
    await waitFor(async () => (await monthlyTokens()) === first, { what: 'the first completion counted' });

    const repair = breakCollection(p.dataDir, 'llm-gateway', 'outbox');
    let second = 0;
    try {
      second = await chat('and one while the outbox cannot be written');
      await waitFor(async () => (await monthlyTokens()) === first + second, {
        what: 'the second completion counted',
      });
    } finally {
      repair();
    }
    // counted once: nothing more arrives once the outbox can be written again
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(await monthlyTokens()).toBe(first + second);
  });
});

describeWithNats('when NATS is away', () => {
  let nats: NatsServerHandle;
  let p: TestPlatform;
  beforeAll(async () => {
    nats = await startNatsServer();
    p = await startTestPlatform({ natsUrl: nats.url });
  });
  afterAll(async () => {
    await p.stop();
    await nats.dispose();
  });

  it('auth, llm-quota and legacy-agent stay ready (reporting the bus), and requests are served', async () => {
    const login = await callJson(`${p.baseUrl}/v2/login/anonymous`, 'POST');
    await nats.stop();
    for (const service of ['auth', 'llmQuota'] as const) {
      const r = await waitFor(
        async () => {
          const ready = await readiness(p.admin[service]!);
          return ready.body.checks.bus !== 'ok' ? ready : null;
        },
        { what: `${service} to notice NATS is away` },
      );
      expect(r.status).toBe(200);
      expect(r.body.checks.store).toBe('ok');
      expect(r.body.degraded).toEqual(['bus']);
    }
    const legacy = await readiness(p.admin.legacyAgent!);
    expect(legacy.status).toBe(200);
    expect(legacy.body.checks).toEqual({ store: 'ok' });

    expect((await callJson(`${p.baseUrl}/v2/me`, 'GET', { bearer: login.body.token })).status).toBe(200);
    expect((await callJson(`${p.baseUrl}/v2/login/anonymous`, 'POST')).status).toBe(200);

    await nats.start();
    await waitFor(async () => (await readiness(p.admin.auth!)).body.checks.bus === 'ok', {
      timeoutMs: 15_000,
      what: 'auth back on NATS',
    });
  });
});
