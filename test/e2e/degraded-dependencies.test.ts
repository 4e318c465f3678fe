import { randomBytes } from 'node:crypto';
import { mkdirSync, renameSync, rmdirSync } from 'node:fs';
import { type RequestListener, request } from 'node:http';
import path from 'node:path';
import { createNatsBus } from '@platform/bus';
import { listen, loadConfig, ManualClock, type RunningServer, silentLogger } from '@platform/kernel';
import {
  describeWithNats,
  type NatsServerHandle,
  startNatsServer,
  tempDir,
  waitFor,
} from '@platform/testkit';
import { edgeConfigSchema } from '../../services/edge/src';
import { createEdgeServiceForTests } from '../../services/edge/src/testing';
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
    // the edge answers one user's usage reads 60 a minute: polled faster, a count 2 s late met only 429s
    const oncePerSecond = 1_000;
    await waitFor(async () => (await monthlyTokens()) === 0, {
      intervalMs: oncePerSecond,
      what: 'the new org on the quota endpoint',
    });
    const chat = async (text: string) => {
      const reply = await callJson(`${p.gatewayUrl}/v1/chat/completions`, 'POST', {
        bearer: session,
        body: { model: 'mock/chat', messages: [{ role: 'user', content: text }] },
      });
      expect(reply.status).toBe(200);
      return reply.body.usage.total_tokens as number;
    };
    const first = await chat('one answer counted the usual way');
    await waitFor(async () => (await monthlyTokens()) === first, {
      intervalMs: oncePerSecond,
      what: 'the first completion counted',
    });

    const repair = breakCollection(p.dataDir, 'llm-gateway', 'outbox');
    let second = 0;
    try {
      second = await chat('and one while the outbox cannot be written');
      await waitFor(async () => (await monthlyTokens()) === first + second, {
        intervalMs: oncePerSecond,
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

describe('when a service starts while its store cannot be loaded (a restart on a full disk)', () => {
  it('answers 503 in the envelope, and serves what it had acknowledged once the file can be read', async () => {
    const data = tempDir('platform-unloadable-');
    try {
      const first = await startTestPlatform({ dataDir: data.dir });
      const before = await callJson(`${first.baseUrl}/v2/login/anonymous`, 'POST').finally(() =>
        first.stop(),
      );
      expect(before.status).toBe(200);
      const repair = breakCollection(data.dir, 'auth', 'sessions');
      const p = await startTestPlatform({ dataDir: data.dir });
      try {
        const res = await fetch(`${p.baseUrl}/v2/login/anonymous`, { method: 'POST' });
        expect(res.status).toBe(503);
        expect(await res.json()).toMatchObject({ error: 'StoreUnavailable', status: 503 });
        expect((await readiness(p.admin.auth!)).body.checks.store).toMatch(/sessions/);

        repair();
        await waitFor(async () => (await readiness(p.admin.auth!)).status === 200, {
          what: 'auth ready again',
        });
        expect((await callJson(`${p.baseUrl}/v2/me`, 'GET', { bearer: before.body.token })).status).toBe(200);
        expect((await callJson(`${p.baseUrl}/v2/login/anonymous`, 'POST')).status).toBe(200);
      } finally {
        await p.stop();
      }
    } finally {
      data.remove();
    }
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

describeWithNats('when NATS is away, the edge does not trust what it remembers for long', () => {
  const secret = randomBytes(32).toString('base64url');
  // the edges' principal caches run on this clock: a few seconds pass when the test says so
  const clock = new ManualClock('2026-11-28T09:00:00Z');
  let nats: NatsServerHandle;
  let p: TestPlatform;
  let owner: string;

  beforeAll(async () => {
    nats = await startNatsServer();
    p = await startTestPlatform({ clock, natsUrl: nats.url, env: { PLATFORM_INTERNAL_SECRET: secret } });
    owner = (await callJson(`${p.baseUrl}/v2/login/anonymous`, 'POST')).body.token;
    const org = await callJson(`${p.baseUrl}/v2/orgs`, 'POST', {
      bearer: owner,
      body: { slug: 'bus-away', name: 'Bus away' },
    });
    expect(org.status).toBe(201);
  });
  afterAll(async () => {
    await p.stop();
    await nats.dispose();
  });

  const mintKey = async () => {
    const res = await callJson(`${p.baseUrl}/v2/orgs/bus-away/apikeys`, 'POST', {
      bearer: owner,
      body: { name: `k-${randomBytes(4).toString('hex')}`, permissions: ['models:read'] },
    });
    expect(res.status).toBe(201);
    return res.body as { apiKey: string; _id: string };
  };
  const revokeKey = async (key: { _id: string }) =>
    expect(
      (await callJson(`${p.baseUrl}/v2/orgs/bus-away/apikeys/${key._id}`, 'DELETE', { bearer: owner }))
        .status,
    ).toBe(204);
  /**
   * A request llm-quota serves on the principal the edge hands it (auth's own routes check a key in its store too).
   * Polled at most 50 times in 10 s: the endpoint allows 60 a minute.
   */
  const usage = async (edgeUrl: string, key: { apiKey: string }) =>
    (await callJson(`${edgeUrl}/llm/v1/quotas/usage`, 'GET', { apiKey: key.apiKey })).status;
  const poll = { timeoutMs: 10_000, intervalMs: 200 };
  const busAwayAt = (adminUrl: string) =>
    waitFor(
      async () => {
        const res = await fetch(`${adminUrl}/readyz`);
        const body = (await res.json()) as { degraded: string[] };
        return body.degraded.includes('bus') ? res.status : null;
      },
      { timeoutMs: 10_000, what: 'the edge to notice NATS is away' },
    );

  it('a key revoked meanwhile is refused a few seconds later, not at the end of its cache life; once NATS is back, at once', async () => {
    const key = await mintKey();
    expect(await usage(p.baseUrl, key)).toBe(200); // remembered by the edge (30 s)
    let other: Awaited<ReturnType<typeof mintKey>> | undefined;
    await nats.stop();
    try {
      expect(await busAwayAt(p.admin.edge!)).toBe(200);
      await revokeKey(key); // auth's announcement cannot reach the edge
      clock.advance(6_000);
      await waitFor(async () => (await usage(p.baseUrl, key)) === 401, {
        ...poll,
        what: 'the revoked key refused',
      });

      // remembered while NATS is away, revoked, then NATS back: what was published meanwhile may have been missed
      other = await mintKey();
      expect(await usage(p.baseUrl, other)).toBe(200);
      await revokeKey(other);
    } finally {
      await nats.start();
    }
    await waitFor(async () => (await usage(p.baseUrl, other!)) === 401, {
      ...poll,
      what: 'the key refused once NATS is back',
    });
  });

  it('auth away too: the edge stays ready, and a remembered key gets 503 AuthUnavailable, not the old answer', async () => {
    // an edge whose way to auth (introspection and JWKS) the test can cut; the JWKS it loaded stays with it
    let authAway = false;
    const toAuth: RequestListener = (req, res) => {
      if (authAway) return req.socket.destroy();
      const upstream = request(new URL(req.url!, p.upstreams.auth), {
        method: req.method,
        headers: req.headers,
      });
      upstream.on('response', (answer) => {
        res.writeHead(answer.statusCode!, answer.headers);
        answer.pipe(res);
      });
      upstream.on('error', () => res.destroy());
      req.pipe(upstream);
    };
    const forwarder: RunningServer = await listen(toAuth, 0, '127.0.0.1');
    const bus = await createNatsBus({ url: nats.url, name: 'edge-auth-away' });
    const edge = await createEdgeServiceForTests({
      config: loadConfig(edgeConfigSchema, {
        PLATFORM_INTERNAL_SECRET: secret,
        AUTH_URL: forwarder.url,
        LLM_QUOTA_URL: p.upstreams.llmQuota,
        LEGACY_AGENT_URL: p.upstreams.legacyAgent,
        LOG_LEVEL: 'silent',
      }),
      logger: silentLogger(),
      clock,
      bus,
    });
    await edge.start();
    const server = await listen(edge.handler, 0, '127.0.0.1');
    const admin = await listen(edge.admin, 0, '127.0.0.1');
    try {
      const key = await mintKey();
      expect(await usage(server.url, key)).toBe(200);
      await nats.stop();
      try {
        authAway = true;
        expect(await busAwayAt(admin.url)).toBe(200);
        clock.advance(6_000);
        await waitFor(async () => (await usage(server.url, key)) === 503, {
          ...poll,
          what: 'the key not trusted',
        });
        const answer = await callJson(`${server.url}/llm/v1/quotas/usage`, 'GET', {
          apiKey: key.apiKey,
        });
        expect(answer.body).toMatchObject({ status: 503, error: 'AuthUnavailable' });
        const ready = await fetch(`${admin.url}/readyz`);
        expect(ready.status).toBe(200);
      } finally {
        await nats.start();
      }
      authAway = false;
      await waitFor(async () => (await usage(server.url, key)) === 200, {
        ...poll,
        what: 'the key served again',
      });
    } finally {
      await admin.close(100);
      await server.close(100);
      await edge.stop();
      await bus.close();
      await forwarder.close(100);
    }
  });
});
