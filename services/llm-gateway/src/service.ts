import type { Bus } from '@platform/bus';
import {
  CredentialRevokedEvent,
  LlmCatalogueUpdatedEvent,
  LlmQuotaSettingsChangedEvent,
  OrgDeletedEvent,
  Subjects,
} from '@platform/contracts';
import {
  type BaseDeps,
  createServiceApp,
  edgePrincipal,
  OutageLog,
  openApiHandler,
  type PlatformService,
  type ServiceApp,
  serviceFetch,
} from '@platform/kernel';
import { type Store, StoreRateWindows } from '@platform/store';
import type { Express } from 'express';
import { Outbox } from './accounting/outbox';
import { type AdapterFactory, Catalogue } from './catalogue/catalogue';
import { CatalogueAdmin } from './catalogue/catalogue-admin';
import { catalogueCollections, seedCatalogue } from './catalogue/catalogue-store';
import { ProviderAdmin } from './catalogue/provider-admin';
import { SecretBox } from './catalogue/secret-box';
import { gatewayFileOf, type LlmGatewayConfig } from './config';
import { DeploymentBalancer } from './inference/deployment-balancer';
import { authorizeInference, type GatewayContext } from './inference/gateway-context';
import { createGatewayMetrics } from './metrics/gateway-metrics';
import { llmGatewayApiDocument } from './openapi';
import { defaultAdapterFactory } from './provider-factory';
import { ProviderDestinations } from './providers';
import { Admission } from './quota/admission';
import { type QuotaCounters, quotaCountersFor } from './quota/counters';
import { OrgSettingsSource } from './quota/org-settings';
import { COUNT_TOKENS_PATH, MESSAGES_PATH, mountAnthropicMessages } from './routes/anthropic-messages';
import { mountAudio } from './routes/audio';
import { mountCatalogueAdmin, mountProviderAdmin } from './routes/catalogue-admin';
import { mountChatCompletions } from './routes/chat-completions';
import { mountConversations } from './routes/conversations';
import { mountDefaults } from './routes/defaults';
import { mountEmbeddings } from './routes/embeddings';
import { mountImages } from './routes/images';
import { mountModels } from './routes/models';
import { mountRerank } from './routes/rerank';
import { mountResponses } from './routes/responses';
import { mountSmokeTest } from './routes/smoke-test';
import { mountStoredResponses } from './routes/stored-responses';
import { mountTextCompletions } from './routes/text-completions';
import { ConversationStore } from './stored-responses/conversation-store';
import { credentialOwner, ResponseStore, userOwner } from './stored-responses/response-store';

export interface LlmGatewayDeps extends BaseDeps<LlmGatewayConfig> {
  store: Store;
  bus: Bus;
  /** HTTP client for providers and llm-quota (tests may inject one); default: undici's request for providers, `serviceFetch` for llm-quota */
  fetch?: typeof fetch;
  /** builds provider adapters (default: the provider layer's factory) */
  createAdapter?: AdapterFactory;
  /** the rate windows and month counters (default: quotaCountersFor the store) */
  counters?: QuotaCounters;
  /** environment read for providers' `apiKeyEnv` (default: process.env) */
  env?: Record<string, string | undefined>;
}

export interface LlmGatewayParts {
  app: ServiceApp;
  context: GatewayContext;
  admin: CatalogueAdmin;
  /** the Responses API's stored responses */
  responses: ResponseStore;
  /** the Conversations API's conversations (decision 0110) */
  conversations: ConversationStore;
  /** closes the connections to llm-quota (and the restricted providers' pool) */
  closeQuotaClient(): Promise<void>;
}

/** The inference routes: each needs `models:read` in an active organization. */
const INFERENCE_PATHS = [
  '/v1/chat/completions',
  '/v1/completions',
  '/v1/responses',
  '/v1/embeddings',
  '/v1/rerank',
  '/v1/images/generations',
  '/v1/audio/transcriptions',
  '/v1/audio/translations',
  '/v1/audio/speech',
  MESSAGES_PATH,
  COUNT_TOKENS_PATH,
];

/** Builds the gateway's parts: the catalogue, quota enforcement, accounting and the express app (never listens). */
export function createGatewayParts(deps: LlmGatewayDeps): LlmGatewayParts {
  const { config, logger, clock, store, bus } = deps;
  const quota = deps.fetch ? { fetch: deps.fetch, close: async () => undefined } : serviceFetch();
  const metrics = createGatewayMetrics({ outboxEvents: () => context.outbox.size() });
  const box = new SecretBox(config.LLM_GATEWAY_ENCRYPTION_KEY ?? config.PLATFORM_INTERNAL_SECRET);
  const destinations = new ProviderDestinations(config.LLM_GATEWAY_PROVIDER_PRIVATE_NETWORKS);
  const catalogue = new Catalogue({
    collections: catalogueCollections(store),
    box,
    createAdapter: deps.createAdapter ?? defaultAdapterFactory({ fetch: deps.fetch, clock, destinations }),
    logger,
    defaults: gatewayFileOf(config).defaults,
  });
  const admin = new CatalogueAdmin({
    store,
    collections: catalogueCollections(store),
    clock,
    logger,
    changed: async () => {
      await catalogue.reload();
      try {
        await bus.publish(Subjects.llmCatalogueUpdated, { version: 1, at: clock.now().toISOString() });
      } catch (err) {
        logger.error(
          { err },
          'llm.catalogue.updated could not be published; other instances reload at start',
        );
      }
    },
  });
  const counters = deps.counters ?? quotaCountersFor(store, clock);
  const responses = new ResponseStore(store, clock, {
    retentionDays: config.LLM_GATEWAY_RESPONSES_RETENTION_DAYS,
    maxChain: config.LLM_GATEWAY_RESPONSES_MAX_CHAIN,
    maxChainBytes: config.LLM_GATEWAY_RESPONSES_MAX_CHAIN_BYTES,
  });
  const conversations = new ConversationStore(store, clock, {
    retentionDays: config.LLM_GATEWAY_CONVERSATIONS_RETENTION_DAYS,
    maxItems: config.LLM_GATEWAY_CONVERSATIONS_MAX_ITEMS,
    maxBytes: config.LLM_GATEWAY_CONVERSATIONS_MAX_BYTES,
  });
  const context: GatewayContext = {
    config,
    clock,
    logger,
    catalogue,
    orgSettings: new OrgSettingsSource({
      quotaUrl: config.LLM_QUOTA_URL,
      secret: config.PLATFORM_INTERNAL_SECRET,
      ttlMs: config.LLM_GATEWAY_SETTINGS_TTL_MS,
      maxEntries: config.LLM_GATEWAY_SETTINGS_CACHE_MAX_ENTRIES,
      clock,
      logger,
      fetch: quota.fetch,
    }),
    admission: new Admission({
      limiters: { requests: counters.requests, tokens: counters.tokens },
      months: counters.months,
      clock,
    }),
    outbox: new Outbox({
      store,
      bus,
      clock,
      logger,
      intervalMs: config.LLM_GATEWAY_OUTBOX_INTERVAL_MS,
      lingerMs: config.LLM_GATEWAY_OUTBOX_LINGER_MS,
      publishTimeoutMs: config.LLM_GATEWAY_PUBLISH_TIMEOUT_MS,
      onPublished: (outcome) => metrics.usageEvent(outcome),
    }),
    retry: {
      maxAttempts: config.LLM_GATEWAY_MAX_ATTEMPTS,
      baseDelayMs: config.LLM_GATEWAY_RETRY_BASE_MS,
      maxWaitMs: config.LLM_GATEWAY_RETRY_MAX_WAIT_MS,
      defaultTimeoutMs: config.LLM_GATEWAY_DEFAULT_TIMEOUT_MS,
      balancer: new DeploymentBalancer({
        clock,
        windowMs: config.LLM_GATEWAY_DEPLOYMENT_COOLDOWN_MS,
        maxMs: config.LLM_GATEWAY_DEPLOYMENT_COOLDOWN_MAX_MS,
      }),
      metrics,
    },
    metrics,
  };
  const app = createServiceApp({
    name: 'llm-gateway',
    logger,
    metrics: metrics.http,
    bodyLimit: config.LLM_GATEWAY_BODY_LIMIT_BYTES,
    readiness: { required: { store: () => store.ping() }, reported: { bus: () => bus.ping() } },
    trustProxy: config.TRUST_PROXY,
    before: [edgePrincipal(config.PLATFORM_INTERNAL_SECRET, clock)],
    routes: (router) => {
      router.get('/openapi.json', openApiHandler(llmGatewayApiDocument));
      // who may call inference is settled before the body is read: 401, 400 NO_ORG_CONTEXT, 403, then 400
      for (const path of INFERENCE_PATHS) {
        router.post(path, (req, _res, next) => {
          authorizeInference(req);
          next();
        });
      }
      mountChatCompletions(router, context);
      mountTextCompletions(router, context);
      mountResponses(router, context, responses, conversations);
      mountStoredResponses(router, responses);
      mountConversations(router, conversations);
      mountEmbeddings(router, context);
      mountRerank(router, context);
      mountModels(router, context);
      mountDefaults(router, context);
      mountSmokeTest(router, context, {
        store,
        limiter: new StoreRateWindows(store, clock, { name: 'llm:smoke', durationMs: 60_000 }),
      });
      mountImages(router, context);
      mountAudio(router, context);
      mountAnthropicMessages(router, context);
      mountProviderAdmin(
        router,
        context,
        new ProviderAdmin({ collections: catalogueCollections(store), box, catalogue: admin, destinations }),
      );
      mountCatalogueAdmin(router, context, {
        admin,
        // an hour's window: on the store's documents on every engine, so a restart does not reset it
        bulkLimiter: new StoreRateWindows(store, clock, {
          name: 'llm:catalogue-bulk',
          durationMs: 3_600_000,
        }),
      });
    },
  });
  const close = async () => {
    await quota.close();
    await destinations.close();
  };
  return { app, context, admin, responses, conversations, closeQuotaClient: close };
}

/** The gateway's express app alone (tests of routes); the catalogue is loaded by the service's start. */
export function createApp(deps: LlmGatewayDeps): Express {
  return createGatewayParts(deps).app;
}

/**
 * llm-gateway: the OpenAI-compatible proxy over the configured providers, applying each
 * organization's governance and quotas and emitting `analytics.llm.completion` for every request.
 */
export async function createLlmGatewayService(deps: LlmGatewayDeps): Promise<PlatformService> {
  const { app, context, admin, responses, conversations, closeQuotaClient } = createGatewayParts(deps);
  const box = new SecretBox(deps.config.LLM_GATEWAY_ENCRYPTION_KEY ?? deps.config.PLATFORM_INTERNAL_SECRET);
  const unsubscribes: Array<() => void> = [];
  let started = false;
  return {
    name: 'llm-gateway',
    handler: app,
    admin: app.admin,
    async start() {
      if (started) return;
      await admin.recover();
      // Once the catalogue has been changed through the API, the store is the truth: the file is not re-applied.
      if (await admin.managedByApi())
        deps.logger.info(
          'the model catalogue is managed through the API; LLM_GATEWAY_CONFIG models are not re-applied',
        );
      else
        await seedCatalogue(catalogueCollections(deps.store), gatewayFileOf(deps.config), {
          box,
          clock: deps.clock,
          env: deps.env ?? process.env,
        });
      await context.catalogue.reload();
      unsubscribes.push(
        deps.bus.subscribe(Subjects.llmCatalogueUpdated, (payload) => {
          if (!LlmCatalogueUpdatedEvent.safeParse(payload).success) return;
          context.catalogue.reload().catch((err) => deps.logger.error({ err }, 'catalogue reload failed'));
        }),
      );
      // llm-quota says when an organization's settings change: the next request reads them fresh
      unsubscribes.push(
        deps.bus.subscribe(Subjects.llmQuotaSettingsChanged, (payload) => {
          const event = LlmQuotaSettingsChangedEvent.safeParse(payload);
          if (event.success) context.orgSettings.forget(event.data.orgSlug);
        }),
      );
      // Stored responses and conversations go with their organization, their user or their organization API key
      // (decisions 0108, 0110); one missed while this instance was away from the bus goes at the end of its retention
      const forget = (what: Record<string, string>, deleting: Promise<number>, kind = 'stored responses') =>
        deleting
          .then((deleted) => {
            if (deleted > 0) deps.logger.info({ ...what, deleted }, `${kind} deleted`);
          })
          .catch((err) => deps.logger.error({ err, ...what }, `${kind} could not be deleted`));
      const forgetOwner = (what: Record<string, string>, owner: string) => {
        void forget(what, responses.forgetOwner(owner));
        void forget(what, conversations.forgetOwner(owner), 'conversations');
      };
      unsubscribes.push(
        deps.bus.subscribe(Subjects.orgDeleted, (payload) => {
          const event = OrgDeletedEvent.safeParse(payload);
          if (!event.success) return;
          const { orgSlug } = event.data;
          void forget({ orgSlug }, responses.forgetOrganization(orgSlug));
          void forget({ orgSlug }, conversations.forgetOrganization(orgSlug), 'conversations');
        }),
      );
      unsubscribes.push(
        deps.bus.subscribe(Subjects.credentialRevoked, (payload) => {
          const event = CredentialRevokedEvent.safeParse(payload);
          if (!event.success) return;
          const { kind, id } = event.data;
          if (kind === 'user') forgetOwner({ userId: id }, userOwner(id));
          else if (kind === 'org_api_key') forgetOwner({ apiKeyId: id }, credentialOwner(kind, id));
        }),
      );
      // A change announced while this instance was away from the bus is picked up from the store.
      let seen = await admin.version();
      if (deps.config.LLM_GATEWAY_CATALOGUE_POLL_MS > 0) {
        // a store away fails every check: said when it starts, once a minute, and when a check succeeds again
        const checks = new OutageLog(deps, {
          starts:
            'catalogue version check failed: a change whose notice this instance missed is not served until a check succeeds',
          lasts: 'catalogue version checks still fail',
          ends: 'catalogue version checks succeed again',
        });
        const poll = setInterval(() => {
          admin
            .version()
            .then(async (v) => {
              if (v !== seen) {
                await context.catalogue.reload();
                // only once reloaded: a reload that failed is tried again at the next check
                seen = v;
              }
              checks.ended();
            })
            .catch(async (err) => {
              if (!checks.refused(err)) await checks.remind();
            });
        }, deps.config.LLM_GATEWAY_CATALOGUE_POLL_MS);
        poll.unref();
        unsubscribes.push(() => clearInterval(poll));
      }
      context.outbox.start();
      void context.outbox.flushQuietly();
      started = true;
    },
    async stop() {
      if (!started) return;
      started = false;
      for (const u of unsubscribes.splice(0)) u();
      await context.outbox.stop();
      await closeQuotaClient();
    },
  };
}
