import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { type Bus, createNatsBus } from '@platform/bus';
import { type LlmCompletionEvent, Subjects } from '@platform/contracts';
import { silentLogger } from '@platform/kernel';
import { type RunningPlatform, startPlatform } from '@platform/standalone';
import {
  describeWithNats,
  freePort,
  type NatsServerHandle,
  startNatsServer,
  tempDir,
  waitFor,
} from '@platform/testkit';
import { connect, Events } from 'nats';
import { REPO_ROOT } from '../deploy/services';
import { callJson } from '../harness';

/**
 * The platform with one NATS user per service, against the very permissions file deployments use
 * (deploy/nats/authorization.conf, decision 0095): each service does its work with its own credentials,
 * and NATS refuses whatever a service's user is not meant to do, forged usage events first.
 */
const AUTHORIZATION = path.join(REPO_ROOT, 'deploy', 'nats', 'authorization.conf');
const USERS = ['edge', 'auth', 'llm-gateway', 'llm-quota', 'legacy-agent'] as const;
type User = (typeof USERS)[number];
const SECRET = randomBytes(32).toString('base64url');
// 12e5...: nats-server would read it as a number, were it not quoted as compose quotes it
const passwords = Object.fromEntries(
  USERS.map((u) => [u, `12e5${randomBytes(12).toString('hex')}`]),
) as Record<User, string>;
const passwordVariable = (user: User) => `${user.toUpperCase().replace(/-/g, '_')}_NATS_PASSWORD`;

describeWithNats('NATS with one user per service (deploy/nats/authorization.conf)', () => {
  let nats: NatsServerHandle;
  const buses: Bus[] = [];
  /** what each bus reported (the service would log it), by user */
  const reports: Record<string, string[]> = {};
  const urlOf = (user: User, password = passwords[user]) =>
    `nats://${user}:${password}@127.0.0.1:${nats.port}`;
  const openBus = async (user: User, label: string = user, password?: string) => {
    reports[label] = [];
    const bus = await createNatsBus({
      url: urlOf(user, password),
      name: label,
      onError: (err, context) =>
        reports[label]!.push(`${context}: ${err instanceof Error ? err.message : err}`),
    });
    buses.push(bus);
    return bus;
  };
  /** the platform in one process, each service on the bus of its own user (`password` overrides one) */
  const platformOn = async (dataDir: string, wrong: Partial<Record<User, string>> = {}) => {
    const own: Record<string, Bus> = {};
    for (const user of USERS) own[user] = await openBus(user, user, wrong[user]);
    return startPlatform({
      env: {
        PLATFORM_INTERNAL_SECRET: SECRET,
        DATA_DIR: dataDir,
        LOG_LEVEL: 'silent',
        LLM_GATEWAY_OUTBOX_INTERVAL_MS: '200',
        LLM_GATEWAY_PUBLISH_TIMEOUT_MS: '500',
      },
      buses: own,
      logger: silentLogger(),
      port: 0,
      adminPort: 0,
      host: '127.0.0.1',
    });
  };
  const closeBuses = () => Promise.all(buses.splice(0).map((b) => b.close()));

  beforeAll(async () => {
    nats = await startNatsServer({
      file: AUTHORIZATION,
      env: Object.fromEntries(USERS.map((u) => [passwordVariable(u), `"${passwords[u]}"`])),
    });
  });
  afterAll(async () => {
    await closeBuses();
    await nats?.dispose();
  });

  const chat = (p: RunningPlatform, bearer: string) =>
    callJson(`${p.gatewayUrl}/v1/chat/completions`, 'POST', {
      bearer,
      body: { model: 'mock/chat', messages: [{ role: 'user', content: 'hi' }] },
    });
  /**
   * Polls of `monthTokens`, one a second: the edge answers one user's usage reads 60 a minute, so polls at the
   * default 20 ms spent them within about 2 s of a late count, then met only 429s until the wait ran out.
   */
  const usagePolls = { timeoutMs: 20_000, intervalMs: 1_000 };
  const monthTokens = async (p: RunningPlatform, bearer: string) => {
    const usage = await callJson(`${p.gatewayUrl}/v1/quotas/usage`, 'GET', { bearer });
    const gauge = usage.body?.enforced?.find((g: { key: string }) => g.key === 'llm.monthly_tokens');
    return usage.status === 200 ? ((gauge?.used as number | undefined) ?? 0) : -1;
  };
  /** a new user owning a new organization (its active one) */
  const ownerOf = async (p: RunningPlatform, slug: string) => {
    const { token } = (await callJson(`${p.baseUrl}/v2/login/anonymous`, 'POST')).body as { token: string };
    const made = await callJson(`${p.baseUrl}/v2/orgs`, 'POST', {
      bearer: token,
      body: { slug, name: slug },
    });
    expect(made.status).toBe(201);
    return token;
  };

  describe('each service as its own user', () => {
    const data = tempDir('nats-permissions-');
    let p: RunningPlatform;
    let owner: string;
    let counted = 0;
    beforeAll(async () => {
      p = await platformOn(data.dir);
      owner = await ownerOf(p, 'perm-acme');
    }, 60_000);
    afterAll(async () => {
      await p?.stop();
      await closeBuses();
      data.remove();
    });

    it('does its work: usage is counted exactly once, key and settings changes reach their listeners, nothing is refused', async () => {
      for (let i = 0; i < 3; i++) {
        const reply = await chat(p, owner);
        expect(reply.status).toBe(200);
        counted += reply.body.usage.total_tokens as number;
      }
      await waitFor(async () => (await monthTokens(p, owner)) >= counted, { ...usagePolls, what: 'usage' });
      expect(await monthTokens(p, owner)).toBe(counted);

      // a second edge and a second gateway instance, as deployed, hear what auth and llm-quota announce
      const keyChanges: unknown[] = [];
      (await openBus('edge', 'edge-2')).subscribe(Subjects.gatewayJwksUpdated, (e) => {
        keyChanges.push(e);
      });
      const settingsChanges: unknown[] = [];
      const gateway2 = await openBus('llm-gateway', 'llm-gateway-2');
      gateway2.subscribe(Subjects.llmQuotaSettingsChanged, (e) => {
        settingsChanges.push(e);
      });
      await gateway2.ping();
      const rotated = await fetch(`${p.upstreams.auth}/internal/signing-keys/rotate`, {
        method: 'POST',
        headers: { 'x-platform-internal-secret': SECRET },
      });
      expect(rotated.status).toBe(200);
      await waitFor(() => keyChanges.length > 0, { what: 'gateway.jwks.updated at the second edge' });
      const patched = await callJson(`${p.gatewayUrl}/v1/quotas/settings`, 'PATCH', {
        bearer: owner,
        body: { models: { allowed: ['mock/chat'] } },
      });
      expect(patched.status).toBe(200);
      await waitFor(() => settingsChanges.length > 0, { what: 'llm.quota.settings.changed at the gateway' });

      // no service was refused anything: llm-quota's stream, consumer, pulls and acks included
      expect(reports).toEqual(Object.fromEntries(Object.keys(reports).map((label) => [label, []])));
    });

    it("refuses every user but llm-gateway's a usage event, which is never counted", async () => {
      const forged: LlmCompletionEvent = {
        id: `forged-${randomBytes(6).toString('hex')}`,
        version: 1,
        occurredAt: new Date().toISOString(),
        orgSlug: 'perm-acme',
        model: 'mock/chat',
        provider: 'mock',
        usage: { prompt_tokens: 500_000, completion_tokens: 500_000, total_tokens: 1_000_000 },
        cost: 1_000,
      };
      for (const user of ['edge', 'auth', 'llm-quota', 'legacy-agent'] as const) {
        const bus = await openBus(user, `forger-${user}`);
        await bus.publish(Subjects.llmCompletion, forged);
        await bus.ping();
        await waitFor(() => reports[`forger-${user}`]!.length > 0, { what: `${user}'s refusal` });
        expect(reports[`forger-${user}`]).toEqual([
          `NATS at nats://${user}:***@127.0.0.1:${nats.port}: NATS refused this user the permission to publish "${Subjects.llmCompletion}" (permissions violation)`,
        ]);
      }
      // a real completion after the forged ones is counted, and alone: the stream never took them
      const reply = await chat(p, owner);
      counted += reply.body.usage.total_tokens as number;
      await waitFor(async () => (await monthTokens(p, owner)) >= counted, { ...usagePolls, what: 'usage' });
      expect(await monthTokens(p, owner)).toBe(counted);
    });

    it("no service reads the answers to another's requests, and each one's own still come (decision 0104)", async () => {
      // llm-quota's user listens where llm-gateway's JetStream acknowledgements come
      const spy = await connect({
        servers: `127.0.0.1:${nats.port}`,
        user: 'llm-quota',
        pass: passwords['llm-quota'],
      });
      const refused: string[] = [];
      void (async () => {
        for await (const s of spy.status()) {
          if (s.type === Events.Error && s.permissionContext)
            refused.push(`${s.permissionContext.operation} ${s.permissionContext.subject}`);
        }
      })();
      const heard: string[] = [];
      spy.subscribe('_INBOX.llm-gateway.>', { callback: (_err, m) => heard.push(m.subject) });
      await spy.flush();
      await waitFor(() => refused.includes('subscription _INBOX.llm-gateway.>'), { what: 'the refusal' });

      // the gateway's publication is acknowledged on its own inbox, and llm-quota pulls it on its own
      const reply = await chat(p, owner);
      expect(reply.status).toBe(200);
      counted += reply.body.usage.total_tokens as number;
      await waitFor(async () => (await monthTokens(p, owner)) >= counted, { ...usagePolls, what: 'usage' });
      expect(await monthTokens(p, owner)).toBe(counted);
      await spy.flush();
      expect(heard).toEqual([]);
      await spy.close();
      // and no service's own requests were refused
      expect(USERS.map((user) => reports[user])).toEqual(USERS.map(() => []));
    });
  });

  it('lets each user publish and subscribe to exactly the subjects of its service, and no one the stream API', async () => {
    const subjects = [
      ...Object.values(Subjects),
      '$JS.API.STREAM.PURGE.ANALYTICS',
      '$JS.API.STREAM.DELETE.ANALYTICS',
      // where the answers to each service's requests come (decision 0104), and nats.js's default inbox
      '_INBOX.llm-gateway.reply',
      '_INBOX.llm-quota.reply',
      '_INBOX.reply',
    ];
    const allowed = async (user: User) => {
      const nc = await connect({ servers: `127.0.0.1:${nats.port}`, user, pass: passwords[user] });
      const refused: string[] = [];
      void (async () => {
        for await (const s of nc.status()) {
          if (s.type === Events.Error && s.permissionContext) {
            refused.push(`${s.permissionContext.operation} ${s.permissionContext.subject}`);
          }
        }
      })();
      for (const subject of subjects) {
        nc.publish(subject);
        nc.subscribe(subject, { callback: () => undefined });
      }
      nc.subscribe('>', { callback: () => undefined });
      await nc.flush();
      // the server answers a connection's commands in order, and every user is refused `>`, sent last: once that
      // refusal is in, so is every earlier one
      await waitFor(() => refused.includes('subscription >'), { what: `${user}'s refusals` });
      await nc.close();
      const granted = (operation: string) => subjects.filter((s) => !refused.includes(`${operation} ${s}`));
      return {
        publish: granted('publish'),
        subscribe: granted('subscription'),
        all: !refused.includes('subscription >'),
      };
    };
    const found = Object.fromEntries(await Promise.all(USERS.map(async (u) => [u, await allowed(u)])));
    expect(found).toEqual({
      edge: {
        publish: [],
        subscribe: ['gateway.jwks.updated', 'auth.credential.revoked', 'auth.membership.changed'],
        all: false,
      },
      auth: {
        publish: [
          'gateway.jwks.updated',
          'runtime.jwks.updated',
          'auth.credential.revoked',
          'auth.membership.changed',
          'auth.org.deleted',
        ],
        subscribe: ['gateway.jwks.updated'],
        all: false,
      },
      'llm-gateway': {
        publish: ['analytics.llm.completion', 'llm.catalogue.updated'],
        subscribe: [
          'auth.credential.revoked',
          'auth.org.deleted',
          'llm.catalogue.updated',
          'llm.quota.settings.changed',
          '_INBOX.llm-gateway.reply',
        ],
        all: false,
      },
      'llm-quota': {
        publish: ['analytics.llm.completion.dead', 'llm.quota.settings.changed'],
        subscribe: ['auth.credential.revoked', 'auth.org.deleted', '_INBOX.llm-quota.reply'],
        all: false,
      },
      'legacy-agent': { publish: [], subscribe: [], all: false },
    });
  });

  it('a refused password: llm-gateway serves, says why it is degraded, and keeps usage in its outbox until it connects', async () => {
    const data = tempDir('nats-wrong-password-');
    try {
      const wrong = `wrong${randomBytes(8).toString('hex')}`;
      const first = await platformOn(data.dir, { 'llm-gateway': wrong });
      let owner = '';
      let tokens = 0;
      try {
        owner = await ownerOf(first, 'perm-wrong');
        const reply = await chat(first, owner);
        expect(reply.status).toBe(200);
        tokens = reply.body.usage.total_tokens;
        const ready = await callJson(`${first.admin.llmGateway}/readyz`, 'GET');
        expect([ready.status, ready.body.degraded, ready.body.checks.bus]).toEqual([
          200,
          ['bus'],
          'NATS is not connected yet: NATS refused the credentials (Authorization Violation)',
        ]);
        expect(reports['llm-gateway']).toEqual([
          expect.stringContaining(
            `connect to nats://llm-gateway:***@127.0.0.1:${nats.port}: NATS refused the credentials (Authorization Violation)`,
          ),
        ]);
        expect(JSON.stringify(reports)).not.toContain(wrong);
      } finally {
        await first.stop();
        await closeBuses();
      }
      // the operator fixes the password: what waited in the outbox is counted, once
      const second = await platformOn(data.dir);
      try {
        await waitFor(async () => (await monthTokens(second, owner)) >= tokens, {
          ...usagePolls,
          what: 'the usage kept in the outbox',
        });
        expect(await monthTokens(second, owner)).toBe(tokens);
      } finally {
        await second.stop();
        await closeBuses();
      }
    } finally {
      data.remove();
    }
  }, 60_000);

  it('a service process given a refused password logs why, without the password, and stays up and ready', async () => {
    const data = tempDir('nats-process-');
    const [port, admin] = [await freePort(), await freePort()];
    const wrong = `wrong${randomBytes(8).toString('hex')}`;
    let output = '';
    const child: ChildProcess = spawn(
      process.execPath,
      ['--require', 'tsx/cjs', 'services/llm-quota/src/main.ts'],
      {
        cwd: REPO_ROOT,
        env: {
          PATH: process.env.PATH,
          PLATFORM_INTERNAL_SECRET: SECRET,
          NATS_URL: urlOf('llm-quota', wrong),
          DATA_DIR: data.dir,
          PORT: String(port),
          HOST: '127.0.0.1',
          ADMIN_PORT: String(admin),
          ADMIN_HOST: '127.0.0.1',
        },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    child.stdout?.on('data', (chunk) => {
      output += chunk;
    });
    child.stderr?.on('data', (chunk) => {
      output += chunk;
    });
    try {
      const ready = await waitFor(
        async () => {
          const reply = await callJson(`http://127.0.0.1:${admin}/readyz`, 'GET');
          return reply.status === 200 ? reply : null;
        },
        { timeoutMs: 30_000, what: 'llm-quota ready' },
      );
      expect(ready.body).toMatchObject({ status: 'degraded', degraded: ['bus'] });
      await waitFor(() => output.includes('NATS refused the credentials'), { what: 'the log line' });
      expect(output).toContain(`nats://llm-quota:***@127.0.0.1:${nats.port}`);
      expect(output).not.toContain(wrong);
      expect(child.exitCode).toBeNull();
    } finally {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await exited;
      data.remove();
    }
  }, 60_000);
});
