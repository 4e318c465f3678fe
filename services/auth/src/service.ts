import { randomUUID } from 'node:crypto';
import path from 'node:path';
import type { Bus } from '@platform/bus';
import { Subjects } from '@platform/contracts';
import {
  type BaseDeps,
  createServiceApp,
  edgePrincipal,
  openApiHandler,
  type PlatformService,
} from '@platform/kernel';
import { keptSecret } from '@platform/runtime';
import type { Store } from '@platform/store';
import { AccountDeletion } from './accounts/account-deletion';
import { Accounts } from './accounts/accounts';
import { LoginThrottle } from './accounts/login-throttle';
import { createMailer } from './accounts/mailer';
import { Mfa } from './accounts/mfa';
import { RateLimiterStorePort } from './accounts/store-rate-limiter';
import { type AuthConfig, SIGNING_KEYS_ENCRYPTION_KEY_REQUIRED } from './config';
import type { AuthContext } from './context';
import { openCollections } from './data/collections';
import { CredentialIntrospection } from './domain/credential-introspection';
import { DataRetention } from './domain/data-retention';
import { AuthEvents } from './domain/events';
import { KeyRotation } from './domain/key-rotation';
import { encryptPlainPrivateKeys, holdsSealedKeys, PrivateKeyCodec } from './domain/signing-keys';
import { createAuthMetrics } from './metrics';
import { FIRST_PARTY_CLIENT_ID, OidcClients } from './oidc/clients';
import { mountInteractionPages } from './oidc/interaction-pages';
import { mountInternalClientRoutes } from './oidc/internal-clients';
import { OidcProviderHost, oidcIssuer } from './oidc/provider';
import { mountOidcRoutes, providerPages } from './oidc/routes';
import { authApiDocument } from './openapi';
import { mountAccountPages } from './pages/account-pages';
import { FormTokens } from './pages/csrf';
import { mountMailLinkPages } from './pages/mail-link-pages';
import { MfaChallenge } from './pages/page-session';
import { mountSignInPages } from './pages/sign-in-pages';
import { mountAccessTokenRoutes } from './routes/access-tokens';
import { mountAccountRoutes } from './routes/accounts';
import { mountInternalRoutes } from './routes/internal-principal';
import { mountJwksRoutes } from './routes/jwks';
import { mountLoginRoutes } from './routes/login';
import { meRoute, mountMeRoutes } from './routes/me';
import { mountOrgApiKeyRoutes } from './routes/org-api-keys';
import { mountOrgSecurityRoutes } from './routes/org-security';
import { mountOrgRoutes } from './routes/orgs';
import { mountRoleRoutes } from './routes/roles';
import { mountStatusRoutes } from './routes/status';
import { mountWorkspaceApiKeyRoutes } from './routes/workspace-api-keys';
import { mountWorkspaceRoutes } from './routes/workspaces';
import { mountInternalSsoRoutes } from './sso/internal-providers';
import { openSsoCollections, SsoClients } from './sso/providers';
import { mountSsoPages } from './sso/sign-in';

export interface AuthDeps extends BaseDeps<AuthConfig> {
  store: Store;
  bus: Bus;
}

/** The auth service as an operator's code runs it (tests reach its insides through `testing.ts`). */
export type AuthService = PlatformService;

export async function createAuthService(deps: AuthDeps): Promise<AuthService> {
  return (await buildAuthService(deps)).service;
}

/** The service and the context its routes share; the context and the retention job are for tests and benchmarks only. */
export async function buildAuthService(
  deps: AuthDeps,
): Promise<{ service: AuthService; context: AuthContext; retention: DataRetention }> {
  const { config, clock, logger, store, bus } = deps;
  const collections = openCollections(store);
  const events = new AuthEvents(bus, clock, logger);
  // Private keys are never stored in plain text: the configured secret, else (embedded store) one kept in a 0600
  // file in DATA_DIR, made at the first start and never replaced (a file there that does not hold one stops the
  // start, and so does a missing one once keys are sealed). MongoDB deployments must configure one (shared by
  // instances); the configuration refuses MONGO_URL without it, this refuses a MongoDB store handed in some other way.
  const keySecret =
    config.SIGNING_KEYS_ENCRYPTION_KEY ??
    (store.engine === 'embedded'
      ? keptSecret(
          config.DATA_DIR,
          {
            file: 'signing-keys.secret',
            what: 'signing-keys secret',
            variable: 'SIGNING_KEYS_ENCRYPTION_KEY',
          },
          (await holdsSealedKeys(collections.signingKeys)) ? { sealedWithIt: 'the stored signing keys' } : {},
        )
      : undefined);
  if (!keySecret) throw new Error(`SIGNING_KEYS_ENCRYPTION_KEY: ${SIGNING_KEYS_ENCRYPTION_KEY_REQUIRED}`);
  const codec = new PrivateKeyCodec(
    keySecret,
    config.SIGNING_KEYS_ENCRYPTION_KEY
      ? 'SIGNING_KEYS_ENCRYPTION_KEY'
      : path.resolve(config.DATA_DIR, 'signing-keys.secret'),
  );
  const keys = new KeyRotation({
    collections,
    clock,
    logger,
    events,
    codec,
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

  const mailer = createMailer(
    { smtpUrl: config.SMTP_URL, from: config.MAIL_FROM, logMailText: store.engine === 'embedded' },
    logger,
  );
  const metrics = createAuthMetrics();
  const accounts = new Accounts(
    context,
    mailer,
    new LoginThrottle(collections.rateCounters, clock, config),
    new Mfa(context),
    metrics,
  );
  const mailLimiter = new RateLimiterStorePort({
    collection: collections.rateCounters,
    clock,
    keyPrefix: 'account-mail',
    points: config.ACCOUNT_MAIL_RATE_LIMIT,
    duration: 3600,
  });

  const formTokens = new FormTokens(config.PLATFORM_INTERNAL_SECRET);
  // OIDC clients' and external providers' client secrets are sealed with the same secret as private keys, each for
  // another purpose.
  const sso = new SsoClients(openSsoCollections(store), keySecret);
  const oidc = new OidcProviderHost(context, new OidcClients(store, keySecret), providerPages(context));
  const deletion = new AccountDeletion(context, accounts, sso);

  const app = createServiceApp({
    name: 'auth',
    logger,
    metrics: metrics.http,
    // NATS down degrades (events wait or are retried), it never stops requests being served.
    readiness: { required: { store: () => store.ping() }, reported: { bus: () => bus.ping() } },
    trustProxy: config.TRUST_PROXY,
    before: [edgePrincipal(config.PLATFORM_INTERNAL_SECRET, clock)],
    leanRoutes: [meRoute(context)],
    routes: (router) => {
      router.get('/openapi.json', openApiHandler(authApiDocument));
      mountStatusRoutes(router, context);
      mountJwksRoutes(router, context);
      mountLoginRoutes(router, context);
      mountAccountRoutes(router, context, accounts, mailLimiter);
      mountMailLinkPages(router, context, accounts);
      const signIn = mountSignInPages(
        router,
        context,
        accounts,
        formTokens,
        new MfaChallenge(context),
        sso,
        mailLimiter,
      );
      mountSsoPages(router, context, sso, signIn.finishPassword);
      mountAccountPages(router, context, accounts, formTokens, deletion);
      mountInteractionPages(router, context, oidc, accounts, formTokens, signIn.finishPassword, sso);
      mountOidcRoutes(router, context, oidc);
      mountMeRoutes(router, context, deletion);
      mountAccessTokenRoutes(router, context);
      mountOrgRoutes(router, context);
      mountOrgSecurityRoutes(router, context);
      mountRoleRoutes(router, context);
      mountOrgApiKeyRoutes(router, context);
      mountWorkspaceRoutes(router, context);
      mountWorkspaceApiKeyRoutes(router, context);
      mountInternalRoutes(router, context);
      mountInternalClientRoutes(router, context, oidc);
      mountInternalSsoRoutes(router, context, sso);
    },
  });

  const retention = new DataRetention(context);
  let unsubscribe: (() => void) | undefined;
  const service: AuthService = {
    name: 'auth',
    handler: app.listener,
    admin: app.admin,
    async start() {
      // a secret that cannot open the key that signs seals nothing
      await keys.checkSecret();
      await encryptPlainPrivateKeys(collections.signingKeys, codec);
      await oidc.clients.sealPlainSecrets();
      await sso.sealPlainSecrets();
      await keys.start();
      // A peer's key change shows here at once, not at this instance's next check. Only once the keys opened: the first
      // key a peer sealed under another secret would fail each reload here too, logged beside the start's one error.
      unsubscribe = bus.subscribe(Subjects.gatewayJwksUpdated, () => keys.refresh());
      // The platform's own pages are a first-party public client from the start.
      const { base } = oidcIssuer(context);
      await oidc.clients.register(
        {
          clientId: FIRST_PARTY_CLIENT_ID,
          name: config.PLATFORM_NAME,
          redirectUris: config.OIDC_FIRST_PARTY_REDIRECT_URIS?.split(',').map((u) => u.trim()) ?? [
            `${base}/account/callback`,
          ],
          postLogoutRedirectUris: [`${base}/account/login`],
          firstParty: true,
        },
        clock.now(),
      );
      retention.start();
    },
    async stop() {
      unsubscribe?.();
      await retention.stop();
      await keys.stop();
    },
  };
  return { service, context, retention };
}
