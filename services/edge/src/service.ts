import type { Bus } from '@platform/bus';
import {
  CredentialRevokedEvent,
  JwksUpdatedEvent,
  MembershipChangedEvent,
  Subjects,
} from '@platform/contracts';
import {
  type BaseDeps,
  compileTrustProxy,
  createAdminHandler,
  type PlatformService,
  registerDependencyGauge,
  serviceFetch,
  serviceLookup,
} from '@platform/kernel';
import { watchBus } from './auth/bus-watch';
import { PrincipalResolver } from './auth/principal-resolver';
import { SessionJwtVerifier } from './auth/session-jwt';
import { SigningKeys } from './auth/signing-keys';
import type { EdgeConfig } from './config';
import { createEdgeHandler } from './http/edge-handler';
import { createEdgeMetrics, observeEdgeListenAnswers } from './http/edge-metrics';
import { createSecurityHeaders } from './http/security-headers';
import { createUndiciProxy } from './http/undici-proxy';
import { createRateLimits } from './limits/rate-limits';
import { createRootResolver } from './routing/roots';
import { compileRoutes, ROUTES, type RouteRule } from './routing/route-table';
import { buildVersionTable } from './versioning/lifecycle';

export interface EdgeDeps extends BaseDeps<EdgeConfig> {
  bus: Bus;
  /** the route table (defaults to ROUTES) */
  routes?: RouteRule[];
}

/** The edge as an operator's code runs it (tests reach its insides through `testing.ts`). */
export type EdgeService = PlatformService;

/** The edge's insides, for tests and benchmarks only. */
export interface EdgeInternals {
  keys: SigningKeys;
  jwt: SessionJwtVerifier;
  principals: PrincipalResolver;
  /** runs one JWKS reconciliation now */
  reconcile(): Promise<void>;
}

/**
 * The edge gateway: every public request goes through it (DESIGN.md "Identity"). `handler` is a plain
 * node:http listener; `start` loads the JWKS, subscribes to key and credential events and starts the
 * periodic reconciliation; `stop` ends them and closes upstream sockets.
 */
export async function createEdgeService(deps: EdgeDeps): Promise<EdgeService> {
  return (await buildEdgeService(deps)).service;
}

/** The edge and its insides; the insides are for tests and benchmarks only. */
export async function buildEdgeService(
  deps: EdgeDeps,
): Promise<{ service: EdgeService; internals: EdgeInternals }> {
  const { config, logger, clock, bus } = deps;
  const log = logger.child({ component: 'edge' });

  // The key map tells the verifier which kids disappeared; the verifier is made right after it.
  let jwt: SessionJwtVerifier | undefined;
  const keys = new SigningKeys({
    jwksUri: config.JWKS_URL ?? new URL('/oidc/jwks', config.AUTH_URL).toString(),
    clock,
    logger: log,
    unknownKidCooldownMs: config.JWKS_UNKNOWN_KID_COOLDOWN_MS,
    fetchTimeoutMs: config.JWKS_FETCH_TIMEOUT_MS,
    algorithm: config.JWT_ALGORITHM,
    onKeysRemoved: (kids) => jwt?.forgetKeys(kids),
  });
  jwt = new SessionJwtVerifier({
    keys,
    clock,
    issuer: config.JWT_ISSUER,
    audience: config.JWT_AUDIENCE,
    algorithm: config.JWT_ALGORITHM,
    clockSkewSeconds: config.JWT_CLOCK_SKEW_SECONDS,
    cacheMaxEntries: config.JWT_CACHE_MAX_ENTRIES,
  });
  // the services' names, resolved off libuv's thread pool and kept briefly, for the proxy and the calls to auth
  // alike (decision 0084)
  const lookup = serviceLookup();
  const toAuth = serviceFetch(lookup);
  const principals = new PrincipalResolver({
    fetch: toAuth.fetch,
    authUrl: config.AUTH_URL,
    secret: config.PLATFORM_INTERNAL_SECRET,
    clock,
    logger: log,
    timeoutMs: config.PRINCIPAL_LOOKUP_TIMEOUT_MS,
    maxEntries: config.PRINCIPAL_CACHE_MAX_ENTRIES,
    maxTtlSeconds: config.PRINCIPAL_CACHE_MAX_TTL_SECONDS,
    sessionSource: config.SESSION_PRINCIPAL_SOURCE,
  });
  const verifier = jwt;
  const resolver = principals;

  // the driver is loaded only for MongoDB (~20 MiB of the process otherwise; `require` as in @platform/store)
  // Server selection bounded to 1 s (a timeout in the URL is the operator's): a limited request waits at most that
  // for an unreachable MongoDB before this instance's memory answers.
  const mongo = config.MONGO_URL
    ? new (require('mongodb') as typeof import('mongodb')).MongoClient(
        config.MONGO_URL,
        /[?&]serverSelectionTimeoutMS=/i.test(config.MONGO_URL) ? {} : { serverSelectionTimeoutMS: 1_000 },
      )
    : undefined;
  const rateLimits = createRateLimits({ mongo, dbName: config.RATE_LIMIT_MONGO_DB, logger: log, clock });
  const proxy = createUndiciProxy({
    targets: {
      base: config.AUTH_URL,
      gateway: config.LLM_GATEWAY_URL ?? config.LLM_QUOTA_URL,
      quota: config.LLM_QUOTA_URL,
      legacy: config.LEGACY_AGENT_URL,
    },
    timeoutMs: config.UPSTREAM_TIMEOUT_MS,
    answerTimeoutMs: { gateway: config.LLM_GATEWAY_URL ? config.GATEWAY_UPSTREAM_TIMEOUT_MS : undefined },
    maxSockets: config.UPSTREAM_MAX_SOCKETS,
    logger: log,
    lookup,
  });
  const metrics = createEdgeMetrics({
    jwksKeys: () => keys.kids.length,
    jwtCacheEntries: () => verifier.size,
    principalCacheEntries: () => resolver.size,
  });

  // Without NATS the edge keeps verifying with the keys it has (and refetches the JWKS periodically):
  // the bus is reported, never a reason to leave the load balancer.
  const readiness = {
    required: {
      jwks: () => {
        if (!keys.loaded) throw new Error('JWKS not loaded yet');
      },
    },
    reported: { bus: () => bus.ping() },
  };
  const admin = createAdminHandler({ name: 'edge', readiness, metrics: metrics.registry });
  registerDependencyGauge(metrics.registry, readiness);

  const reconcile = async () => {
    try {
      await keys.refresh();
    } catch {
      metrics.jwksFetchFailures.inc();
    }
  };

  const handler = createEdgeHandler({
    clock,
    logger: log,
    roots: createRootResolver({
      gatewayPrefix: config.GATEWAY_PATH_PREFIX,
      legacyPrefix: config.LEGACY_PATH_PREFIX,
      gatewayHosts: config.GATEWAY_HOSTS,
      legacyHosts: config.LEGACY_HOSTS,
    }),
    routes: compileRoutes(deps.routes ?? ROUTES),
    versions: buildVersionTable({
      legacyV1DeprecatedAt: config.LEGACY_V1_DEPRECATION_DATE,
      legacyV1RetiredAt: config.LEGACY_V1_RETIREMENT_DATE,
      legacyV1MigrationDocUrl: config.LEGACY_V1_MIGRATION_DOC_URL,
      overrides: config.API_VERSIONS,
    }),
    jwt: verifier,
    principals: resolver,
    rateLimits,
    proxy,
    metrics,
    securityHeaders: createSecurityHeaders({ hstsMaxAgeSeconds: config.HSTS_MAX_AGE_SECONDS }),
    trustProxy: compileTrustProxy(config.TRUST_PROXY),
    bodyLimitBytes: config.BODY_LIMIT_BYTES,
    uploadLimitBytes: config.UPLOAD_BODY_LIMIT_BYTES,
    accessLogSampleRate: config.ACCESS_LOG_SAMPLE_RATE,
  });
  observeEdgeListenAnswers(handler, metrics, log);

  const unsubscribes: Array<() => void> = [];
  let timer: NodeJS.Timeout | undefined;

  const service: EdgeService = {
    name: 'edge',
    handler,
    admin,
    async start() {
      unsubscribes.push(
        bus.subscribe(Subjects.gatewayJwksUpdated, (payload) => {
          const event = JwksUpdatedEvent.safeParse(payload);
          if (!event.success)
            return log.warn({ issues: event.error.issues }, 'malformed gateway.jwks.updated');
          keys.remove(event.data.deleted);
          return reconcile();
        }),
        bus.subscribe(Subjects.credentialRevoked, (payload) => {
          const event = CredentialRevokedEvent.safeParse(payload);
          if (!event.success)
            return log.warn({ issues: event.error.issues }, 'malformed auth.credential.revoked');
          resolver.onCredentialRevoked(event.data);
          if (event.data.kind === 'session') verifier.forgetSession(event.data.id);
          if (event.data.kind === 'user') verifier.forgetUser(event.data.id);
        }),
        bus.subscribe(Subjects.membershipChanged, (payload) => {
          const event = MembershipChangedEvent.safeParse(payload);
          if (!event.success)
            return log.warn({ issues: event.error.issues }, 'malformed auth.membership.changed');
          resolver.onMembershipChanged(event.data);
        }),
        // Whatever was published while the connection was down was missed: catch up. This is the one time cached
        // principals are all dropped; the watch below hearing the bus again later drops nothing more.
        bus.onReconnect(() => {
          resolver.clear();
          void reconcile();
        }),
        // While it is down, cached principals are checked with auth again after a few seconds.
        watchBus(bus, resolver),
      );
      // A failed first fetch does not stop the edge: readiness reports the JWKS until one succeeds.
      await reconcile();
      timer = setInterval(() => void reconcile(), config.JWKS_RECONCILE_INTERVAL_MS);
      timer.unref();
    },
    async stop() {
      if (timer) clearInterval(timer);
      for (const unsubscribe of unsubscribes.splice(0)) unsubscribe();
      proxy.close();
      await toAuth.close();
      await mongo?.close();
    },
  };
  return { service, internals: { keys, jwt: verifier, principals: resolver, reconcile } };
}
