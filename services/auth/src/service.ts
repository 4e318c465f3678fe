import { randomUUID } from 'node:crypto';
import type { Bus } from '@platform/bus';
import { Subjects } from '@platform/contracts';
import {
  type BaseDeps,
  createServiceApp,
  edgePrincipal,
  openApiHandler,
  type PlatformService,
} from '@platform/kernel';
import type { Store } from '@platform/store';
import type { AuthConfig } from './config';
import type { AuthContext } from './context';
import { openCollections } from './data/collections';
import { CredentialIntrospection } from './domain/credential-introspection';
import { AuthEvents } from './domain/events';
import { KeyRotation } from './domain/key-rotation';
import { PrivateKeyCodec } from './domain/signing-keys';
import { authApiDocument } from './openapi';
import { mountAccessTokenRoutes } from './routes/access-tokens';
import { mountInternalRoutes } from './routes/internal-principal';
import { mountJwksRoutes } from './routes/jwks';
import { mountLoginRoutes } from './routes/login';
import { mountMeRoutes } from './routes/me';
import { mountOrgApiKeyRoutes } from './routes/org-api-keys';
import { mountOrgRoutes } from './routes/orgs';
import { mountRoleRoutes } from './routes/roles';
import { mountStatusRoutes } from './routes/status';
import { mountWorkspaceApiKeyRoutes } from './routes/workspace-api-keys';
import { mountWorkspaceRoutes } from './routes/workspaces';

export interface AuthDeps extends BaseDeps<AuthConfig> {
  store: Store;
  bus: Bus;
}

/** The auth service, plus handles tests and benchmarks use (never exposed over HTTP). */
export interface AuthService extends PlatformService {
  readonly context: AuthContext;
}

export async function createAuthService(deps: AuthDeps): Promise<AuthService> {
  const { config, clock, logger, store, bus } = deps;
  const collections = openCollections(store);
  const events = new AuthEvents(bus, clock, logger);
  const keys = new KeyRotation({
    collections,
    clock,
    logger,
    events,
    codec: new PrivateKeyCodec(config.SIGNING_KEYS_ENCRYPTION_KEY),
    params: { kty: config.JWKS_KTY, alg: config.JWKS_ALG, size: config.JWKS_SIZE },
    rotationDays: config.JWKS_ROTATION_DAYS,
    publishDelaySeconds: config.JWKS_PUBLISH_DELAY_SECONDS,
    maxTokenAgeSeconds: config.ACCESS_TOKENS_MAX_AGE,
    skewSeconds: config.JWKS_RETENTION_SKEW_SECONDS,
    checkIntervalMs: config.JWKS_CHECK_INTERVAL_MS,
    instanceId: randomUUID(),
  });
  const context: AuthContext = {
    config,
    clock,
    logger,
    store,
    bus,
    collections,
    events,
    keys,
    introspection: new CredentialIntrospection(collections, clock),
  };

  const app = createServiceApp({
    name: 'auth',
    logger,
    // publishing is best effort (caches heal by their TTL): NATS down does not stop auth serving
    readiness: { store: () => store.ping(), bus: { check: () => bus.ping(), required: false } },
    before: [edgePrincipal(config.PLATFORM_INTERNAL_SECRET, clock)],
    routes: (router) => {
      router.get('/openapi.json', openApiHandler(authApiDocument));
      mountStatusRoutes(router, context);
      mountJwksRoutes(router, context);
      mountLoginRoutes(router, context);
      mountMeRoutes(router, context);
      mountAccessTokenRoutes(router, context);
      mountOrgRoutes(router, context);
      mountRoleRoutes(router, context);
      mountOrgApiKeyRoutes(router, context);
      mountWorkspaceRoutes(router, context);
      mountWorkspaceApiKeyRoutes(router, context);
      mountInternalRoutes(router, context);
    },
  });
  app.set('trust proxy', config.TRUSTED_PROXIES);

  let unsubscribe: (() => void) | undefined;
  return {
    name: 'auth',
    handler: app,
    context,
    async start() {
      // A peer's key change shows here at once, not at this instance's next check.
      unsubscribe = bus.subscribe(Subjects.gatewayJwksUpdated, () => keys.refresh());
      await keys.start();
    },
    async stop() {
      unsubscribe?.();
      await keys.stop();
    },
  };
}
