import { randomBytes } from 'node:crypto';
import { type Bus, createNatsBus } from '@platform/bus';
import { type JwksUpdatedEvent, Subjects } from '@platform/contracts';
import { listen, loadConfig, type RunningServer, silentLogger } from '@platform/kernel';
import {
  describeWithNats,
  type NatsServerHandle,
  startNatsServer,
  tempDir,
  waitFor,
} from '@platform/testkit';
import jwt from 'jsonwebtoken';
import { edgeConfigSchema } from '../../services/edge/src';
import { createEdgeServiceForTests, type EdgeServiceUnderTest } from '../../services/edge/src/testing';
import { callJson, startTestPlatform, type TestPlatform } from '../harness';

/**
 * A leaked signing key revoked (decision 0102), seen as a client sees it: through the edges of a whole platform.
 * Edges here never refresh the JWKS on their own timer unless a test says so, and their unknown-kid refetch is
 * spent for an hour once used: what they learn, they learn from auth's announcement on NATS (or, NATS down, from
 * the periodic refresh the test runs).
 */

const HOUR_MS = '3600000';
const PASSWORD = 'correct horse battery';

const kidOf = (token: string) => jwt.decode(token, { complete: true })!.header.kid!;
const meStatus = async (baseUrl: string, token: string) =>
  (await callJson(`${baseUrl}/v2/me`, 'GET', { bearer: token })).status;
const jwksKids = async (baseUrl: string): Promise<string[]> =>
  ((await (await fetch(`${baseUrl}/oidc/jwks`)).json()) as { keys: Array<{ kid: string }> }).keys.map(
    (k) => k.kid,
  );
const anonymous = async (p: TestPlatform): Promise<string> =>
  (await callJson(`${p.baseUrl}/v2/login/anonymous`, 'POST')).body.token;

async function revoke(p: TestPlatform, secret: string, kid: string) {
  const res = await fetch(`${p.upstreams.auth}/internal/signing-keys/${kid}/revoke`, {
    method: 'POST',
    headers: { 'x-platform-internal-secret': secret },
  });
  expect(res.status).toBe(200);
  return (await res.json()) as { kid: string; result: string; signingKid: string };
}

/** Another edge replica in front of the platform's services, on its own NATS connection. */
async function startEdgeReplica(
  p: TestPlatform,
  natsUrl: string,
  secret: string,
  env: Record<string, string>,
): Promise<{ url: string; service: EdgeServiceUnderTest; stop(): Promise<void> }> {
  const bus: Bus = await createNatsBus({ url: natsUrl, name: 'edge-replica' });
  const service = await createEdgeServiceForTests({
    config: loadConfig(edgeConfigSchema, {
      PLATFORM_INTERNAL_SECRET: secret,
      AUTH_URL: p.upstreams.auth,
      LLM_QUOTA_URL: p.upstreams.llmQuota,
      LEGACY_AGENT_URL: p.upstreams.legacyAgent,
      LOG_LEVEL: 'silent',
      ...env,
    }),
    logger: silentLogger(),
    clock: { now: () => new Date() },
    bus,
  });
  await service.start();
  const server: RunningServer = await listen(service.handler, 0, '127.0.0.1');
  return {
    url: server.url,
    service,
    stop: async () => {
      await server.close(100);
      await service.stop();
      await bus.close();
    },
  };
}

describeWithNats('revoking a signing key: two edges on one NATS', () => {
  const secret = randomBytes(32).toString('base64url');
  let nats: NatsServerHandle;
  let p: TestPlatform;
  let second: Awaited<ReturnType<typeof startEdgeReplica>>;
  let observer: Bus;
  const events: JwksUpdatedEvent[] = [];

  beforeAll(async () => {
    nats = await startNatsServer();
    observer = await createNatsBus({ url: nats.url, name: 'observer' });
    observer.subscribe(Subjects.gatewayJwksUpdated, (e) => {
      events.push(e as JwksUpdatedEvent);
    });
    await observer.ping();
    const env = { JWKS_RECONCILE_INTERVAL_MS: HOUR_MS, JWKS_UNKNOWN_KID_COOLDOWN_MS: HOUR_MS };
    p = await startTestPlatform({
      natsUrl: nats.url,
      env: { ...env, PLATFORM_INTERNAL_SECRET: secret, PASSWORD_SCRYPT_N: '1024', PASSWORD_SCRYPT_P: '1' },
    });
    second = await startEdgeReplica(p, nats.url, secret, env);
  });
  afterAll(async () => {
    await second?.stop();
    await p?.stop();
    await observer?.close();
    await nats?.dispose();
  });

  it('its JWTs: 200 on both edges before, 401 on both after; the new key’s at once; sessions refresh', async () => {
    const edges = [p.baseUrl, second.url];
    const email = `leak-${Date.now()}@example.com`;
    const signup = await callJson(`${p.baseUrl}/v2/signup`, 'POST', { body: { email, password: PASSWORD } });
    expect(signup.status).toBe(201);
    const { token: signedIn, refreshToken, sessionId } = signup.body;
    const anonymousToken = await anonymous(p);
    const leaked = kidOf(signedIn);
    // both edges verify (and remember) the tokens
    for (const edge of edges) {
      expect(await meStatus(edge, signedIn)).toBe(200);
      expect(await meStatus(edge, anonymousToken)).toBe(200);
    }

    const revoked = await revoke(p, secret, leaked);
    expect(revoked).toMatchObject({ kid: leaked, result: 'revoked' });
    expect(revoked.signingKid).not.toBe(leaked);

    // A token of the new key: accepted by both edges at once, whether or not the announcement arrived yet.
    const fresh = await anonymous(p);
    expect(kidOf(fresh)).toBe(revoked.signingKid);
    for (const edge of edges) expect(await meStatus(edge, fresh)).toBe(200);

    // The announcement makes each edge drop the key and the tokens it remembered.
    for (const edge of edges)
      for (const token of [signedIn, anonymousToken])
        await waitFor(async () => (await meStatus(edge, token)) === 401, {
          what: `${edge} refusing the token`,
        });
    await waitFor(() => events.some((e) => e.deleted.includes(leaked)), { what: 'the announcement' });
    expect(events.find((e) => e.deleted.includes(leaked))).toMatchObject({
      created: [revoked.signingKid],
      deleted: [leaked],
    });
    expect(await jwksKids(p.baseUrl)).toEqual([revoked.signingKid]);

    // A signed-in session is not lost: its refresh token (opaque, not signed by any key) gets a new JWT.
    const refreshed = await callJson(`${p.baseUrl}/v2/login/refresh`, 'POST', { body: { refreshToken } });
    expect(refreshed.status).toBe(200);
    expect(refreshed.body.sessionId).toBe(sessionId);
    expect(kidOf(refreshed.body.token)).toBe(revoked.signingKid);
    for (const edge of edges) expect(await meStatus(edge, refreshed.body.token)).toBe(200);
  });
});

describeWithNats('revoking a signing key while NATS is down', () => {
  const secret = randomBytes(32).toString('base64url');
  let nats: NatsServerHandle;
  let p: TestPlatform;
  let second: Awaited<ReturnType<typeof startEdgeReplica>>;

  beforeAll(async () => {
    nats = await startNatsServer();
    // the platform's edge refreshes its JWKS every 200 ms; the replica only when the test runs its refresh
    p = await startTestPlatform({
      natsUrl: nats.url,
      env: {
        PLATFORM_INTERNAL_SECRET: secret,
        JWKS_RECONCILE_INTERVAL_MS: '200',
        JWKS_UNKNOWN_KID_COOLDOWN_MS: HOUR_MS,
      },
    });
    second = await startEdgeReplica(p, nats.url, secret, {
      JWKS_RECONCILE_INTERVAL_MS: HOUR_MS,
      JWKS_UNKNOWN_KID_COOLDOWN_MS: HOUR_MS,
    });
  });
  afterAll(async () => {
    await second?.stop();
    await p?.stop();
    await nats?.dispose();
  });

  it('each edge drops the key at its periodic refresh, and accepts a replacement key’s tokens at once', async () => {
    const first = await anonymous(p);
    for (const edge of [p.baseUrl, second.url]) expect(await meStatus(edge, first)).toBe(200);
    await nats.stop();

    const { signingKid } = await revoke(p, secret, kidOf(first));
    await waitFor(async () => (await meStatus(p.baseUrl, first)) === 401, { what: 'the periodic refresh' });
    await second.service.internals.reconcile();
    // its tokens keep coming (clients not yet refreshed, or whoever holds the key): refused each time
    for (let i = 0; i < 3; i++) expect(await meStatus(second.url, first)).toBe(401);
    const secondToken = await anonymous(p);
    expect(kidOf(secondToken)).toBe(signingKid);
    expect(await meStatus(second.url, secondToken)).toBe(200);

    // The operator finds that key leaked too. Its replacement signs at once; the replica, with no NATS and no
    // refresh since, meets a kid it has never seen: its unknown-kid refetch, never spent on the revoked key's
    // tokens, finds it.
    const third = await revoke(p, secret, signingKid);
    const thirdToken = await anonymous(p);
    expect(kidOf(thirdToken)).toBe(third.signingKid);
    expect(await meStatus(second.url, thirdToken)).toBe(200);
    await waitFor(async () => (await meStatus(p.baseUrl, thirdToken)) === 200, { what: 'the platform edge' });
    await waitFor(async () => (await meStatus(p.baseUrl, secondToken)) === 401, { what: 'its refresh' });
  });
});

describe('a revoked signing key after a restart of auth', () => {
  it('stays out of the JWKS, its tokens stay refused, and it is listed as revoked', async () => {
    const secret = randomBytes(32).toString('base64url');
    const data = tempDir('platform-key-revocation-');
    const env = { PLATFORM_INTERNAL_SECRET: secret };
    let p = await startTestPlatform({ dataDir: data.dir, env });
    try {
      const token = await anonymous(p);
      const leaked = kidOf(token);
      const { signingKid } = await revoke(p, secret, leaked);
      await p.stop();
      p = await startTestPlatform({ dataDir: data.dir, env });
      expect(await jwksKids(p.baseUrl)).toEqual([signingKid]);
      expect(await meStatus(p.baseUrl, token)).toBe(401);
      expect(kidOf(await anonymous(p))).toBe(signingKid);
      const listed = (await (
        await fetch(`${p.upstreams.auth}/internal/signing-keys`, {
          headers: { 'x-platform-internal-secret': secret },
        })
      ).json()) as { keys: unknown[] };
      expect(listed.keys).toEqual(
        expect.arrayContaining([
          expect.objectContaining({ kid: leaked, state: 'revoked' }),
          expect.objectContaining({ kid: signingKid, state: 'active' }),
        ]),
      );
    } finally {
      await p.stop();
      data.remove();
    }
  });
});
