import { createHmac, createPublicKey } from 'node:crypto';
import { type Bus, createInProcessBus, createNatsBus } from '@platform/bus';
import { Subjects } from '@platform/contracts';
import { ManualClock, openPrincipal } from '@platform/kernel';
import { describeWithNats, type NatsServerHandle, startNatsServer, waitFor } from '@platform/testkit';
import jwt from 'jsonwebtoken';
import {
  AUDIENCE,
  bearer,
  type FakeAuth,
  forwardedPrincipal,
  ISSUER,
  makeSigningKey,
  principalOf,
  request,
  SECRET,
  type SigningKey,
  signSession,
  startEdge,
  startFakeAuth,
  startUpstream,
  type TestEdge,
  type Upstream,
} from './support';

const b64 = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url');
const claims = (now: Date) => ({
  sub: 'user-1',
  platformSessionId: 'session-1',
  iat: Math.floor(now.getTime() / 1000),
  exp: Math.floor(now.getTime() / 1000) + 600,
  iss: ISSUER,
  aud: AUDIENCE,
});

describe('session JWTs at the edge', () => {
  let auth: FakeAuth;
  let key: SigningKey;
  let clock: ManualClock;
  let edge: TestEdge;
  let service: Upstream;

  beforeAll(async () => {
    service = await startUpstream('llm-quota');
  });
  afterAll(async () => {
    await service.close();
  });

  beforeEach(async () => {
    auth = await startFakeAuth();
    key = makeSigningKey();
    auth.state.keys.push(key);
    clock = new ManualClock('2026-11-23T10:00:00Z');
    edge = await startEdge({
      authUrl: auth.url,
      llmQuotaUrl: service.url,
      clock,
      env: { SESSION_PRINCIPAL_SOURCE: 'jwt', JWKS_UNKNOWN_KID_COOLDOWN_MS: '10000' },
    });
  });
  afterEach(async () => {
    await edge.close();
    await auth.close();
  });

  const call = (token: string, extra: Record<string, string> = {}) =>
    request(edge.url, '/llm/v1/models', { headers: { ...bearer(token), ...extra } });

  it('accepts a valid RS256 token and hands the service a sealed principal it can check', async () => {
    const answer = await call(
      signSession(key, { now: clock.now(), sub: 'user-42', platformSessionId: 's-42' }),
    );
    expect(answer.status).toBe(200);
    const headers = answer.json.headers;
    expect(headers['x-platform-user-id']).toBe('user-42');
    expect(headers.authorization).toBeUndefined();
    const principal = openPrincipal(headers['x-platform-principal'], SECRET, clock);
    expect(principal).toMatchObject({
      user: { id: 'user-42' },
      session: { id: 's-42', org: null },
      credential: { kind: 'session' },
    });
  });

  it('accepts the access-token cookie of a browser session and keeps the other cookies', async () => {
    const token = signSession(key, { now: clock.now() });
    const answer = await request(edge.url, '/llm/v1/models', {
      headers: { cookie: `theme=dark; access-token=${token}; lang=fr` },
    });
    expect(answer.status).toBe(200);
    expect(answer.json.headers['x-platform-user-id']).toBe('user-1');
    expect(answer.json.headers.cookie).toBe('theme=dark; lang=fr');
  });

  it('an application’s access token without the `api` scope reaches userinfo only: 403 INSUFFICIENT_SCOPE elsewhere', async () => {
    const app = (scope: string) =>
      signSession(key, {
        now: clock.now(),
        scope,
        clientId: 'notes-app',
        typ: 'at+jwt',
        platformSessionId: 'grant-1',
      });
    const signIn = app('openid email');
    for (const path of ['/llm/v1/models', '/v2/me', '/v2/orgs/acme/api-keys']) {
      const refused = await request(edge.url, path, { headers: bearer(signIn) });
      expect(refused.status).toBe(403);
      expect(refused.json).toMatchObject({
        status: 403,
        code: 'INSUFFICIENT_SCOPE',
        message: expect.stringContaining('api scope'),
        requestId: expect.any(String),
      });
      // RFC 6750: the challenge names what the token lacks
      expect(refused.headers['www-authenticate']).toBe(
        'Bearer realm="platform", error="insufficient_scope", scope="api"',
      );
    }
    for (const method of ['GET', 'POST']) {
      const info = await request(edge.url, '/oidc/me', { method, headers: bearer(signIn) });
      expect(info.status).toBe(200);
      expect(forwardedPrincipal(info, clock)).toMatchObject({
        session: { id: 'grant-1' },
      });
    }
    // A public route sees no one: the account pages cannot be driven with it.
    const page = await request(edge.url, '/account', { headers: bearer(signIn) });
    expect(page.status).toBe(200);
    expect(page.json.headers['x-platform-principal']).toBeUndefined();

    // Granted `api` (consented, or a first-party client), and the platform's own sessions: the whole API.
    expect((await call(app('openid email api'))).status).toBe(200);
    expect((await call(signSession(key, { now: clock.now(), scope: 'openid email profile' }))).status).toBe(
      200,
    );
  });

  it('refuses alg none, HS256 signed with the public key, other algorithms and forged signatures', async () => {
    const now = clock.now();
    const none = `${b64({ alg: 'none', kid: key.kid })}.${b64(claims(now))}.`;
    const jwkPem = createPublicKey({ key: key.jwk as never, format: 'jwk' }).export({
      format: 'pem',
      type: 'spki',
    });
    const hsInput = `${b64({ alg: 'HS256', kid: key.kid, typ: 'JWT' })}.${b64(claims(now))}`;
    const hs = `${hsInput}.${createHmac('sha256', jwkPem).update(hsInput).digest('base64url')}`;
    const rs512 = jwt.sign(claims(now), key.privateKey, { algorithm: 'RS512', keyid: key.kid });
    const other = makeSigningKey(key.kid); // same kid, different key
    const forged = signSession(other, { now });
    for (const token of [none, hs, rs512, forged, 'a.b.c', `${signSession(key, { now })}x`]) {
      const answer = await call(token);
      expect(answer.status).toBe(401);
      expect(answer.json).toMatchObject({ error: 'Unauthorized', status: 401 });
    }
  });

  it('checks issuer, audience and expiry with at most 60 s of skew', async () => {
    const now = clock.now();
    expect((await call(signSession(key, { now, iss: 'https://evil.example' }))).status).toBe(401);
    expect((await call(signSession(key, { now, aud: 'someone-else' }))).status).toBe(401);
    // Expired 30 s ago: within the skew.
    expect(
      (await call(signSession(key, { now: new Date(now.getTime() - 90_000), expiresIn: 60 }))).status,
    ).toBe(200);
    // Expired 90 s ago: beyond it.
    expect(
      (await call(signSession(key, { now: new Date(now.getTime() - 150_000), expiresIn: 60 }))).status,
    ).toBe(401);
  });

  it('remembers a verified token, and the remembered token still expires', async () => {
    const token = signSession(key, { now: clock.now(), expiresIn: 120 });
    expect((await call(token)).status).toBe(200);
    expect(edge.service.internals.jwt.size).toBe(1);
    expect((await call(token)).status).toBe(200);
    clock.advance(179_000);
    expect((await call(token)).status).toBe(200);
    clock.advance(2_000); // exp + 60 s passed
    expect((await call(token)).status).toBe(401);
  });

  it('refetches the JWKS for an unknown kid at most once per cooldown, concurrent requests sharing one fetch', async () => {
    const fresh = makeSigningKey();
    auth.state.keys.push(fresh);
    const before = auth.state.jwksFetches;
    const answers = await Promise.all(
      Array.from({ length: 10 }, () => call(signSession(fresh, { now: clock.now() }))),
    );
    expect(answers.map((a) => a.status)).toEqual(Array(10).fill(200));
    expect(auth.state.jwksFetches - before).toBe(1);

    // Unknown kids within the cooldown cost nothing; after it, one more fetch.
    const stranger = makeSigningKey();
    expect((await call(signSession(stranger, { now: clock.now() }))).status).toBe(401);
    expect((await call(signSession(stranger, { now: clock.now() }))).status).toBe(401);
    expect(auth.state.jwksFetches - before).toBe(1);
    clock.advance(10_001);
    auth.state.keys.push(stranger);
    expect((await call(signSession(stranger, { now: clock.now() }))).status).toBe(200);
    expect(auth.state.jwksFetches - before).toBe(2);

    // the host's clock set back an hour: the last fetch is not an hour-long cooldown
    clock.set(clock.now().getTime() - 3_600_000);
    const rotated = makeSigningKey();
    auth.state.keys.push(rotated);
    expect((await call(signSession(rotated, { now: clock.now() }))).status).toBe(200);
    expect(auth.state.jwksFetches - before).toBe(3);
  });

  it('keeps verifying with cached keys while auth is unreachable', async () => {
    auth.state.jwksDown = true;
    await edge.service.internals.reconcile();
    expect(edge.service.internals.keys.kids).toEqual([key.kid]);
    expect((await call(signSession(key, { now: clock.now() }))).status).toBe(200);
    await auth.close();
    await edge.service.internals.reconcile();
    expect((await call(signSession(key, { now: clock.now(), platformSessionId: 'other' }))).status).toBe(200);
    auth = await startFakeAuth(); // for afterEach
  });

  it('forgets a deleted key at once on gateway.jwks.updated, remembered tokens included', async () => {
    const token = signSession(key, { now: clock.now() });
    expect((await call(token)).status).toBe(200);
    const next = makeSigningKey();
    auth.state.keys.splice(0, 1, next);
    await edge.bus.publish(Subjects.gatewayJwksUpdated, {
      version: 1,
      created: [next.kid],
      deleted: [key.kid],
      at: clock.now().toISOString(),
    });
    await waitFor(() => edge.service.internals.keys.get(next.kid) !== undefined);
    expect((await call(token)).status).toBe(401);
    expect((await call(signSession(next, { now: clock.now() }))).status).toBe(200);
  });

  it('reports not ready until a JWKS was loaded', async () => {
    const down = await startFakeAuth();
    down.state.keys.push(key);
    down.state.jwksDown = true;
    const cold = await startEdge({ authUrl: down.url, env: { SESSION_PRINCIPAL_SOURCE: 'jwt' } });
    try {
      const notReady = await request(cold.adminUrl, '/readyz');
      expect(notReady.status).toBe(503);
      expect(notReady.json.checks.jwks).toMatch(/JWKS/);
      down.state.jwksDown = false;
      await cold.service.internals.reconcile();
      expect((await request(cold.adminUrl, '/readyz')).status).toBe(200);
    } finally {
      await cold.close();
      await down.close();
    }
  });

  it('resolves a session principal at auth (memberships, active org) and passes the path organization', async () => {
    const viaAuth = await startEdge({ authUrl: auth.url, clock });
    try {
      auth.state.answers.set('session:s-9', (orgSlug) => ({
        principal: principalOf({
          kind: 'session',
          id: 's-9',
          sessionId: 's-9',
          userId: 'u-9',
          org: { slug: orgSlug ?? 'home', permissions: ['models:read'] },
        }),
        expiresAt: null,
        cacheTtlSeconds: 30,
      }));
      const token = signSession(key, { now: clock.now(), sub: 'u-9', platformSessionId: 's-9' });
      const answer = await request(viaAuth.url, '/v2/orgs/acme/members', { headers: bearer(token) });
      expect(answer.status).toBe(200);
      expect(forwardedPrincipal(answer, clock)?.session.org?.slug).toBe('acme');
      expect(auth.state.principalCalls.at(-1)).toEqual({
        credential: { kind: 'session', userId: 'u-9', sessionId: 's-9' },
        orgSlug: 'acme',
      });
      // Revoked session: auth answers 401, the edge refuses the (still validly signed) JWT.
      auth.state.answers.delete('session:s-9');
      await viaAuth.bus.publish(Subjects.credentialRevoked, {
        version: 1,
        kind: 'session',
        id: 's-9',
        at: clock.now().toISOString(),
      });
      await waitFor(
        async () =>
          (await request(viaAuth.url, '/v2/orgs/acme/members', { headers: bearer(token) })).status === 401,
      );
    } finally {
      await viaAuth.close();
    }
  });
});

describeWithNats('JWKS rotation across edge instances', () => {
  let nats: NatsServerHandle;
  let auth: FakeAuth;
  const buses: Bus[] = [];
  const edges: TestEdge[] = [];

  beforeAll(async () => {
    nats = await startNatsServer();
    auth = await startFakeAuth();
    auth.state.keys.push(makeSigningKey());
  });
  afterAll(async () => {
    // every one closed even if another fails: a NATS connection left open reconnects for ever and keeps
    // jest from exiting (this was the handle behind jest's forceExit)
    await Promise.allSettled(edges.map((e) => e.close()));
    await Promise.allSettled(buses.map((b) => b.close()));
    await auth.close();
    await nats.dispose();
  });

  const natsEdge = async (env: Record<string, string> = {}) => {
    const bus = await createNatsBus({ url: nats.url, name: 'edge-test' });
    buses.push(bus);
    const edge = await startEdge({
      authUrl: auth.url,
      bus,
      env: { SESSION_PRINCIPAL_SOURCE: 'jwt', JWKS_UNKNOWN_KID_COOLDOWN_MS: '3600000', ...env },
    });
    edges.push(edge);
    return edge;
  };

  // Their unknown-kid refetch spent and their reconciliation a minute away, only the event explains the two edges
  // accepting the new key. How fast (the issue's 1 s) is not asserted (a loaded machine is not the product);
  // bench/edge/propagation.ts measures another of auth's events (revocations) reaching two edges the same way.
  it('two edges on one NATS both pick up a rotation from its event; one that missed it catches up by reconciliation', async () => {
    const [a, b] = [await natsEdge(), await natsEdge()];
    const isolated = await startEdge({
      authUrl: auth.url,
      bus: createInProcessBus(),
      env: {
        SESSION_PRINCIPAL_SOURCE: 'jwt',
        JWKS_UNKNOWN_KID_COOLDOWN_MS: '3600000',
        JWKS_RECONCILE_INTERVAL_MS: '200',
      },
    });
    edges.push(isolated);
    const publisher = await createNatsBus({ url: nats.url, name: 'auth-test' });
    buses.push(publisher);

    // Spend each edge's unknown-kid refetch (cooldown: one hour) so only the event or reconciliation can help.
    const stranger = signSession(makeSigningKey());
    for (const e of [a, b, isolated])
      expect((await request(e.url, '/v2/me', { headers: bearer(stranger) })).status).toBe(401);

    const rotated = makeSigningKey();
    auth.state.keys.push(rotated);
    const token = signSession(rotated);
    const accepted = (e: TestEdge) => async () =>
      (await request(e.url, '/v2/me', { headers: bearer(token) })).status === 200;

    await publisher.publish(Subjects.gatewayJwksUpdated, {
      version: 1,
      created: [rotated.kid],
      deleted: [],
      at: new Date().toISOString(),
    });
    await Promise.all(
      [a, b].map((e) => waitFor(accepted(e), { timeoutMs: 10_000, what: 'the new key accepted' })),
    );
    // The edge on another bus never saw the event: its periodic reconciliation heals it.
    await waitFor(accepted(isolated), { what: 'the new key accepted by its reconciliation' });
  });

  it('refetches the JWKS when its NATS connection comes back (messages may have been missed)', async () => {
    const edge = await natsEdge();
    const stranger = signSession(makeSigningKey());
    expect((await request(edge.url, '/v2/me', { headers: bearer(stranger) })).status).toBe(401);
    await nats.stop();
    const rotated = makeSigningKey();
    auth.state.keys.push(rotated);
    const token = signSession(rotated);
    await nats.start();
    await waitFor(
      async () => (await request(edge.url, '/v2/me', { headers: bearer(token) })).status === 200,
      {
        timeoutMs: 10_000,
      },
    );
  });
});
