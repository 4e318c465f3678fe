import type { Bus } from '@platform/bus';
import { CredentialRevokedEvent, OrgDeletedEvent, Subjects } from '@platform/contracts';
import {
  type BaseDeps,
  type Clock,
  createServiceApp,
  edgePrincipal,
  openApiHandler,
  type PlatformService,
  systemClock,
} from '@platform/kernel';
import type { Store } from '@platform/store';
import { type LlmQuotaConfig, planCatalogOf } from './config';
import { quotaCollections } from './data/collections';
import { SettingsRepository } from './data/settings-repo';
import { planInForce } from './domain/usage-report';
import { Maintenance } from './ingest/maintenance';
import { UsageBatcher } from './ingest/usage-batcher';
import { UsageConsumer } from './ingest/usage-consumer';
import { UsageWriter } from './ingest/usage-writer';
import { createQuotaMetrics } from './metrics';
import { llmQuotaApiDocument } from './openapi';
import { mountBreakdownRoute } from './routes/breakdown';
import type { RouteDeps } from './routes/deps';
import { mountInternalRoutes } from './routes/internal';
import { mountSettingsRoutes } from './routes/settings';
import { mountUsageRoute } from './routes/usage';

export interface LlmQuotaDeps extends BaseDeps<LlmQuotaConfig> {
  store: Store;
  bus: Bus;
  /** real time for batch leases between instances; tests of recovery move it (default: the system clock) */
  leaseClock?: Clock;
}

const HOUR = 3_600_000;

/**
 * llm-quota: plans and organizations' quota settings, usage counters fed by the LLM gateway's
 * `analytics.llm.completion` events, and `GET /v1/quotas/usage`.
 */
export async function createLlmQuotaService(deps: LlmQuotaDeps): Promise<PlatformService> {
  const { config, logger, clock, store, bus } = deps;
  const catalog = planCatalogOf(config);
  const collections = quotaCollections(store);
  const settings = new SettingsRepository(collections, clock, config.LLM_QUOTA_DEFAULT_PLAN);

  const metrics = createQuotaMetrics();

  const writer = new UsageWriter({
    collections,
    clock,
    leaseClock: deps.leaseClock ?? systemClock,
    leaseMs: config.LLM_QUOTA_BATCH_LEASE_MS,
    logger,
    onRecovery: (outcome) => metrics.batchRecovered(outcome),
  });
  const batcher = new UsageBatcher(
    writer,
    config.LLM_QUOTA_BATCH_MAX,
    (size) => metrics.batchWritten(size),
    config.LLM_QUOTA_BATCH_LINGER_MS,
  );
  const consumer = new UsageConsumer({
    bus,
    batcher,
    settings,
    clock,
    logger,
    stream: config.LLM_QUOTA_STREAM,
    durable: config.LLM_QUOTA_DURABLE,
    streamMaxAgeMs: config.LLM_QUOTA_STREAM_MAX_AGE_HOURS * HOUR,
    maxEventAgeMs: config.LLM_QUOTA_MAX_EVENT_AGE_HOURS * HOUR,
    concurrency: config.LLM_QUOTA_CONSUMER_CONCURRENCY,
    retryDelayMs: config.LLM_QUOTA_RETRY_DELAY_MS,
    onOutcome: (outcome, lagSeconds) => metrics.eventHandled(outcome, lagSeconds),
  });
  const maintenance = new Maintenance({
    collections,
    writer,
    clock,
    logger,
    intervalMs: config.LLM_QUOTA_SWEEP_INTERVAL_MS,
    eventIdRetentionMs: config.LLM_QUOTA_EVENT_ID_RETENTION_HOURS * HOUR,
    minuteRetentionMs: config.LLM_QUOTA_MINUTE_BUCKET_RETENTION_HOURS * HOUR,
    onStuckBatches: (count) => metrics.stuckBatches(count),
  });

  const routeDeps: RouteDeps = {
    config,
    clock,
    logger,
    collections,
    settings,
    catalog,
    planOf: (doc) => planInForce(doc, catalog, config.LLM_QUOTA_DEFAULT_PLAN, logger),
    // without the bus the gateways see the change when their cached copy expires (LLM_GATEWAY_SETTINGS_TTL_MS)
    settingsChanged: (orgSlug) =>
      bus
        .publish(Subjects.llmQuotaSettingsChanged, { version: 1, orgSlug, at: clock.now().toISOString() })
        .catch((err: unknown) =>
          logger.warn({ err, orgSlug }, 'llm.quota.settings.changed could not be published'),
        ),
  };
  const app = createServiceApp({
    name: 'llm-quota',
    logger,
    metrics: metrics.http,
    bodyLimit: config.LLM_QUOTA_BODY_LIMIT_BYTES,
    // NATS down degrades (events wait or are retried), it never stops requests being served.
    readiness: { required: { store: () => store.ping() }, reported: { bus: () => bus.ping() } },
    trustProxy: config.TRUST_PROXY,
    before: [edgePrincipal(config.PLATFORM_INTERNAL_SECRET, clock)],
    routes: (router) => {
      router.get('/openapi.json', openApiHandler(llmQuotaApiDocument));
      mountUsageRoute(router, routeDeps);
      mountBreakdownRoute(router, routeDeps);
      mountSettingsRoutes(router, routeDeps);
      mountInternalRoutes(router, routeDeps);
    },
  });

  /**
   * `auth.org.deleted`: stop serving the organization's settings, and tell the gateways to drop their copy. Core NATS:
   * auth's retention pass announces each deletion again for a day, for a llm-quota that was away; taken again, it
   * changes nothing (the earliest time is kept).
   */
  const onOrgDeleted = async (payload: unknown) => {
    const event = OrgDeletedEvent.safeParse(payload);
    if (!event.success) return logger.warn({ issues: event.error.issues }, 'malformed auth.org.deleted');
    const { orgSlug, at } = event.data;
    try {
      await settings.markDeleted(orgSlug, Number.isNaN(Date.parse(at)) ? clock.now() : new Date(at));
      logger.info({ orgSlug }, 'organization deleted: its quota settings are no longer served');
      await routeDeps.settingsChanged(orgSlug);
    } catch (err) {
      logger.error({ err, orgSlug }, 'auth.org.deleted could not be recorded');
    }
  };

  /**
   * `auth.credential.revoked`: a revoked organization API key's own limits, and a deleted user's overrides, go from
   * the settings of every organization holding them (decision 0117). Core NATS, as above: one missed leaves an entry
   * that matches nothing.
   */
  const onCredentialRevoked = async (payload: unknown) => {
    const event = CredentialRevokedEvent.safeParse(payload);
    if (!event.success)
      return logger.warn({ issues: event.error.issues }, 'malformed auth.credential.revoked');
    const { kind, id } = event.data;
    const field = kind === 'org_api_key' ? 'by_api_key' : kind === 'user' ? 'overrides' : null;
    if (!field) return;
    try {
      for (const orgSlug of await settings.forget(field, id)) {
        logger.info({ orgSlug, field, id }, 'quota entry of a revoked credential removed');
        await routeDeps.settingsChanged(orgSlug);
      }
    } catch (err) {
      logger.error({ err, kind, id }, 'auth.credential.revoked could not be applied to quota settings');
    }
  };

  let started = false;
  let unsubscribe: (() => void) | undefined;
  let unsubscribeRevoked: (() => void) | undefined;
  return {
    name: 'llm-quota',
    handler: app,
    admin: app.admin,
    async start() {
      if (started) return;
      unsubscribe = bus.subscribe(Subjects.orgDeleted, (payload) => onOrgDeleted(payload));
      unsubscribeRevoked = bus.subscribe(Subjects.credentialRevoked, (payload) =>
        onCredentialRevoked(payload),
      );
      await consumer.start();
      maintenance.start();
      started = true;
    },
    async stop() {
      if (!started) return;
      started = false;
      unsubscribe?.();
      unsubscribeRevoked?.();
      await consumer.stop();
      await maintenance.stop();
    },
  };
}
