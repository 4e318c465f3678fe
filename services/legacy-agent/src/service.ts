import type { Bus } from '@platform/bus';
import { type BaseDeps, createServiceApp, openApiHandler, type PlatformService } from '@platform/kernel';
import * as nluEngine from '@platform/nlu';
import type { Store } from '@platform/store';
import type { LegacyAgentConfig } from './config';
import type { LegacyDomain } from './domain';
import { Accounts } from './domain/accounts';
import { Assistants } from './domain/assistants';
import type { LegacyContext } from './domain/context';
import { Conversations } from './domain/conversations';
import { Dialogue } from './domain/dialogue';
import { Entities } from './domain/entities';
import { giveEntityNamesToOlderIntents } from './domain/entity-names-backfill';
import { giveExpiryToOlderRecords } from './domain/expiry-backfill';
import { Intents } from './domain/intents';
import { MessageLimits } from './domain/message-limits';
import { Retraining } from './domain/retraining';
import { type RetrainTimers, systemTimers } from './domain/timers';
import { TokenSealer } from './domain/tokens';
import { type NluEngine, Understanding } from './domain/understanding';
import { createLegacyMetrics } from './metrics';
import { legacyApiDocument } from './openapi';
import { openCollections } from './persistence/collections';
import { mountAccountRoutes } from './routes/accounts';
import { mountBotRoutes } from './routes/bots';
import { corsPreflight } from './routes/cors';
import { mountEntityRoutes } from './routes/entities';
import { mountIntentRoutes } from './routes/intents';
import { messagesBodyParser, mountMessageRoutes } from './routes/messages';
import { mountWidgetRoutes } from './routes/widget';

export interface LegacyAgentDeps extends BaseDeps<LegacyAgentConfig> {
  store: Store;
  bus: Bus;
  /** the NLU engine; @platform/nlu by default */
  nlu?: NluEngine;
  /** uniform in [0, 1), picks text alternatives; Math.random by default */
  random?: () => number;
  /** retraining's debounce timers; real ones by default */
  timers?: RetrainTimers;
}

/** The legacy agent as an operator's code runs it; tests speak to it through `handler`. */
export type LegacyAgentService = PlatformService;

/** Builds the use cases over the store; nothing runs until `start()`. */
export function createLegacyDomain(deps: LegacyAgentDeps): LegacyDomain {
  // the training queue is read at scrape time, once `understanding` exists
  const metrics = createLegacyMetrics({ trainingQueue: () => understanding.queuedTrainings() });
  const ctx: LegacyContext = {
    config: deps.config,
    logger: deps.logger,
    clock: deps.clock,
    cols: openCollections(deps.store),
    sealer: TokenSealer.fromConfig(deps.config),
    random: deps.random ?? Math.random,
    timers: deps.timers ?? systemTimers,
    metrics,
  };
  const understanding = new Understanding(ctx, deps.nlu ?? nluEngine);
  const accounts = new Accounts(ctx);
  const assistants = new Assistants(ctx);
  const retraining = new Retraining(ctx, assistants, understanding);
  const onDataChange = (assistantId: string) => retraining.changed(assistantId);
  const dialogue = new Dialogue(ctx, understanding, new Conversations(ctx));
  assistants.onRemoved((id) => {
    retraining.forget(id);
    understanding.forget(id);
    dialogue.forget(id);
  });
  return {
    ctx,
    accounts,
    assistants,
    intents: new Intents(ctx, onDataChange),
    entities: new Entities(ctx, onDataChange),
    understanding,
    retraining,
    dialogue,
    messageLimits: new MessageLimits(ctx, deps.store),
  };
}

export async function createLegacyAgentService(deps: LegacyAgentDeps): Promise<LegacyAgentService> {
  const domain = createLegacyDomain(deps);
  const app = createServiceApp({
    name: 'legacy-agent',
    logger: deps.logger,
    metrics: domain.ctx.metrics.http,
    bodyLimit: deps.config.LEGACY_BODY_LIMIT_BYTES,
    // legacy-agent publishes nothing: only its store can stop it serving
    readiness: { required: { store: () => deps.store.ping() } },
    trustProxy: deps.config.TRUST_PROXY,
    before: [
      corsPreflight(domain.assistants),
      messagesBodyParser(domain, deps.config.LEGACY_MESSAGES_BODY_LIMIT_BYTES, deps.logger),
    ],
    routes: (router) => {
      router.get('/openapi.json', openApiHandler(legacyApiDocument));
      mountAccountRoutes(router, domain);
      mountBotRoutes(router, domain);
      mountIntentRoutes(router, domain);
      mountEntityRoutes(router, domain);
      mountMessageRoutes(router, domain);
      mountWidgetRoutes(router, domain);
    },
  });
  return {
    name: 'legacy-agent',
    handler: app,
    admin: app.admin,
    start: async () => {
      await giveExpiryToOlderRecords(domain.ctx);
      await giveEntityNamesToOlderIntents(domain.ctx);
      await domain.understanding.start();
    },
    stop: () => {
      domain.retraining.stop();
      return domain.understanding.stop();
    },
  };
}
