import { createInProcessBus } from '@platform/bus';
import type { Principal } from '@platform/contracts';
import {
  type Clock,
  loadConfig,
  ManualClock,
  mountedRoutes,
  openPrincipal,
  type PlatformService,
  type RouteDoc,
  sealPrincipal,
  silentLogger,
} from '@platform/kernel';
import { createLlmQuotaService, llmQuotaConfigSchema } from '@platform/llm-quota';
import { createEmbeddedStore } from '@platform/store';
import request from 'supertest';
import { authConfigSchema, createAuthService } from '../../services/auth/src';
import { AUTH_ROUTES } from '../../services/auth/src/openapi';
import type { RootName } from '../../services/edge/src/routing/roots';
import { compileRoutes } from '../../services/edge/src/routing/route-table';
import {
  bearer,
  request as edgeRequest,
  makeSigningKey,
  principalOf,
  SECRET,
  signSession,
  startEdge,
  startFakeAuth,
  startUpstream,
  type TestEdge,
} from '../../services/edge/test/support';
import { createLegacyAgentService, legacyAgentConfigSchema } from '../../services/legacy-agent/src';
import { LEGACY_ROUTES } from '../../services/legacy-agent/src/openapi';
import { createLlmGatewayService, llmGatewayConfigSchema } from '../../services/llm-gateway/src';
import { LLM_GATEWAY_ROUTES } from '../../services/llm-gateway/src/openapi';
import { LLM_QUOTA_ROUTES } from '../../services/llm-quota/src/openapi';

/**
 * Issue 13 item 3: the same security checks generated for every route the services mount, looked up in
 * the edge's route table, so a route is covered the day it is added:
 * - no credential: 401 at the edge (routes the table makes public reach the service instead);
 * - client-sent `x-platform-*` headers (any case, `_` for `-`) never reach the service;
 * - a forged or stale principal seal sent straight to a service: 401;
 * - a credential without the route's permission: 403 at the edge and at the service.
 */

const clock: Clock = new ManualClock('2026-01-15T12:00:00Z');
const config = <S extends Parameters<typeof loadConfig>[0]>(schema: S) =>
  loadConfig(schema, {
    PLATFORM_INTERNAL_SECRET: SECRET,
    LOG_LEVEL: 'silent',
    LLM_QUOTA_URL: 'http://127.0.0.1:9',
  });
const deps = () => ({
  clock,
  logger: silentLogger(),
  store: createEmbeddedStore(),
  bus: createInProcessBus(),
});

interface ServiceUnderTest {
  name: string;
  root: RootName;
  /** the root's path prefix on the edge */
  prefix: string;
  /** whether the service reads the edge's sealed principal (legacy-agent has credentials of its own) */
  trustsEdgeIdentity: boolean;
  build(): Promise<PlatformService>;
}

const SERVICES: ServiceUnderTest[] = [
  {
    name: 'auth',
    root: 'base',
    prefix: '',
    trustsEdgeIdentity: true,
    build: async () => createAuthService({ ...deps(), config: config(authConfigSchema) }),
  },
  {
    name: 'llm-quota',
    root: 'gateway',
    prefix: '/llm',
    trustsEdgeIdentity: true,
    build: () => createLlmQuotaService({ ...deps(), config: config(llmQuotaConfigSchema) }),
  },
  {
    name: 'llm-gateway',
    root: 'gateway',
    prefix: '/llm',
    trustsEdgeIdentity: true,
    build: () => createLlmGatewayService({ ...deps(), config: config(llmGatewayConfigSchema) }),
  },
  {
    name: 'legacy-agent',
    root: 'legacy',
    prefix: '/legacy',
    trustsEdgeIdentity: false,
    build: () => createLegacyAgentService({ ...deps(), config: config(legacyAgentConfigSchema) }),
  },
];

const ROUTE_DOCS: Record<string, RouteDoc[]> = {
  auth: AUTH_ROUTES,
  'llm-quota': LLM_QUOTA_ROUTES,
  'llm-gateway': LLM_GATEWAY_ROUTES,
  'legacy-agent': LEGACY_ROUTES,
};
const OPERATIONAL = new Set(['/healthz', '/readyz', '/metrics']);
/**
 * auth's HTML pages and OpenID Connect endpoints: public routes of the table that check their own session
 * cookie and per-form CSRF tokens (test/e2e/accounts, oidc-provider and the browser test cover them).
 */
const PAGES = (path: string) =>
  path.startsWith('/account') || (path.startsWith('/oidc/') && path !== '/oidc/jwks');
const lookup = compileRoutes();

interface RouteCase {
  service: ServiceUnderTest;
  method: string;
  template: string;
  /** a concrete path: parameters filled in */
  path: string;
  access: 'public' | 'authenticated';
  permission: string | null;
}

/** Every route of every service, from the route lists each service's OpenAPI test holds equal to its router. */
const cases: RouteCase[] = SERVICES.flatMap((service) =>
  ROUTE_DOCS[service.name]!.map((doc) => {
    const method = doc.method.toUpperCase();
    const template = doc.path.replace(/\{(\w+)\}/g, ':$1');
    const path = template.replace(/:orgSlug/g, 'acme').replace(/:(\w+)/g, 'x1');
    const compiled = lookup(service.root, method, path);
    return { service, method, template, path, access: compiled.access, permission: compiled.permission };
  }),
);

const label = (c: RouteCase) => `${c.service.name} ${c.method} ${c.template}`;

describe('the generated checks cover what the services really mount', () => {
  it.each(SERVICES)('$name', async (service) => {
    const built = await service.build();
    const mounted = mountedRoutes(built.handler)
      .filter((r) => {
        const path = r.split(' ')[1]!;
        // the OpenAPI document itself is public
        return (
          !OPERATIONAL.has(path) && !path.startsWith('/internal/') && !PAGES(path) && path !== '/openapi.json'
        );
      })
      .map(shapeOf);
    await built.stop();
    const covered = cases
      .filter((c) => c.service === service && c.template !== '/openapi.json')
      .map((c) => shapeOf(`${c.method} ${c.template}`));
    expect([...new Set(covered)].sort()).toEqual([...new Set(mounted)].sort());
  });
});

/** A route as `METHOD /PATH` with every parameter (`:id`, `*id` for ids with slashes) written `:P`. */
const shapeOf = (route: string) => route.replace(/[:*]\w+/g, ':P').toUpperCase();

describe('generated route security checks', () => {
  let auth: Awaited<ReturnType<typeof startFakeAuth>>;
  let upstreams: Record<RootName, Awaited<ReturnType<typeof startUpstream>>>;
  let edge: TestEdge;
  const key = makeSigningKey();
  const full = signSession(key, { platformSessionId: 'full', now: new Date() });
  const none = signSession(key, { platformSessionId: 'none', now: new Date() });
  const permissionsOf = (c: RouteCase) => (c.permission ? [c.permission] : []);

  beforeAll(async () => {
    auth = await startFakeAuth();
    auth.state.keys.push(key);
    upstreams = {
      base: auth,
      gateway: await startUpstream('llm-quota'),
      legacy: await startUpstream('legacy-agent'),
    };
    const every = [...new Set(cases.flatMap(permissionsOf))];
    auth.state.answers.set('session:full', () => ({
      principal: principalOf({
        kind: 'session',
        sessionId: 'full',
        org: { slug: 'acme', permissions: every },
      }),
      expiresAt: null,
      cacheTtlSeconds: 30,
    }));
    auth.state.answers.set('session:none', () => ({
      principal: principalOf({ kind: 'session', sessionId: 'none', org: { slug: 'acme', permissions: [] } }),
      expiresAt: null,
      cacheTtlSeconds: 30,
    }));
    edge = await startEdge({
      authUrl: auth.url,
      llmQuotaUrl: upstreams.gateway.url,
      legacyUrl: upstreams.legacy.url,
      env: { API_VERSIONS: '{}', LEGACY_V1_RETIREMENT_DATE: '2999-01-01' },
    });
  });
  afterAll(async () => {
    await edge.close();
    for (const u of Object.values(upstreams)) await u.close();
  });

  const received = (c: RouteCase) => upstreams[c.service.root].received;

  const authenticated = cases.filter((c) => c.access === 'authenticated');
  it.each(authenticated.map((c) => [label(c), c] as const))(
    '%s: no credential is 401 in the envelope, and the service never sees it',
    async (_name, c) => {
      const before = received(c).length;
      const res = await edgeRequest(edge.url, `${c.service.prefix}${c.path}`, { method: c.method });
      expect(res.status).toBe(401);
      if (c.method !== 'HEAD') expect(res.json).toMatchObject({ status: 401, requestId: expect.any(String) });
      expect(received(c).length).toBe(before);
    },
  );

  // the stand-in auth answers GET /oidc/jwks itself (the edge's own key source), so it records nothing there
  const observable = cases.filter((c) => !(c.service.root === 'base' && c.template === '/oidc/jwks'));
  it.each(observable.map((c) => [label(c), c] as const))(
    '%s: client-sent x-platform-* headers never reach the service',
    async (_name, c) => {
      const before = received(c).length;
      const res = await edgeRequest(edge.url, `${c.service.prefix}${c.path}`, {
        method: c.method,
        headers: [
          'host',
          '127.0.0.1',
          ...Object.entries(bearer(full)).flat(),
          'X-Platform-User-Id',
          'evil',
          'x_platform_principal',
          'forged',
          'X-PLATFORM-ROLE',
          'admin',
          'x-platform-org-slug',
          'evil-corp',
        ],
      });
      const echo = received(c)[before];
      if (!echo) throw new Error(`not forwarded: ${res.status} ${res.text.slice(0, 300)}`);
      const platformHeaders = Object.keys(echo!.headers).filter((h) => /^x[-_]platform[-_]/i.test(h));
      expect(
        // what the edge itself sets: identity, and the version it resolved (docs/internal-api.md)
        platformHeaders.filter(
          (h) => !['x-platform-user-id', 'x-platform-principal', 'x-platform-api-version'].includes(h),
        ),
      ).toEqual([]);
      const userId = echo!.headers['x-platform-user-id'];
      if (userId !== undefined) expect(userId).toBe('user-1');
      const seal = echo!.headers['x-platform-principal'];
      if (seal !== undefined) expect(openPrincipal(String(seal), SECRET)).not.toBeNull();
    },
  );

  const guarded = cases.filter((c) => c.permission);
  it.each(guarded.map((c) => [label(c), c] as const))(
    "%s: a credential without the route's permission is 403 at the edge",
    async (_name, c) => {
      const res = await edgeRequest(edge.url, `${c.service.prefix}${c.path}`, {
        method: c.method,
        headers: bearer(none),
      });
      expect(res.status).toBe(403);
    },
  );
});

describe('generated principal-seal checks, straight to each service', () => {
  const built = new Map<string, PlatformService>();
  beforeAll(async () => {
    for (const s of SERVICES.filter((x) => x.trustsEdgeIdentity)) built.set(s.name, await s.build());
  });
  afterAll(async () => {
    for (const s of built.values()) await s.stop();
  });

  const principal: Principal = principalOf({
    kind: 'session',
    sessionId: 's',
    org: { slug: 'acme', permissions: [] },
  });
  const sealedBy = (secret: string, at: Clock) => sealPrincipal(principal, secret, at);

  const sealed = cases.filter((x) => x.service.trustsEdgeIdentity);
  const stale = new ManualClock(clock.now().getTime() - 10 * 60_000);
  const send = (c: RouteCase, seal: string) =>
    request(built.get(c.service.name)!.handler)
      [c.method.toLowerCase() as 'get'](c.path)
      .set('x-platform-principal', seal)
      .set('x-platform-user-id', 'user-1');

  it.each(sealed.map((c) => [label(c), c] as const))(
    '%s: a forged, stale or malformed principal seal is 401 at the service',
    async (_name, c) => {
      expect((await send(c, sealedBy('another-secret-0123456789abcdef0123456789', clock))).status).toBe(401);
      expect((await send(c, sealedBy(SECRET, stale))).status).toBe(401);
      expect((await send(c, 'not.a.seal')).status).toBe(401);
    },
  );

  it.each(sealed.filter((c) => c.permission).map((c) => [label(c), c] as const))(
    "%s: a valid seal without the route's permission is 403 at the service",
    async (_name, c) => {
      expect((await send(c, sealedBy(SECRET, clock))).status).toBe(403);
    },
  );
});
