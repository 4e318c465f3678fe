import { randomUUID } from 'node:crypto';
import type { LlmCompletionEvent, Principal } from '@platform/contracts';
import { hasPermission } from '@platform/contracts';
import { type Clock, Forbidden, type Logger, noOrgContext, Unauthenticated } from '@platform/kernel';
import type { Request } from 'express';
import { estimateCarbon } from '../accounting/carbon';
import { costMicros, eventUsage } from '../accounting/cost';
import type { Outbox } from '../accounting/outbox';
import type { Catalogue, CatalogueModel } from '../catalogue/catalogue';
import type { LlmGatewayConfig } from '../config';
import type { GatewayMetrics } from '../metrics/gateway-metrics';
import { type Admission, type Caller, MonthlyBudgetExhausted, type Ticket } from '../quota/admission';
import type { OrgGatewaySettings, OrgSettingsSource } from '../quota/org-settings';
import { requestIdOf } from '../routes/client-abort';
import {
  AUTO_MODEL,
  apiKeyIdOf,
  budgetDowngrade,
  type ModelType,
  type RequestTraits,
  resolveModel,
} from './governance';
import { providerHeaders } from './header-policy';
import {
  type DeploymentCheck,
  failoverChain,
  type Pool,
  type RetryPolicy,
  servingPool,
} from './provider-calls';
import type { Usage } from './provider-port';

export interface GatewayContext {
  config: LlmGatewayConfig;
  clock: Clock;
  logger: Logger;
  catalogue: Catalogue;
  orgSettings: OrgSettingsSource;
  admission: Admission;
  outbox: Outbox;
  retry: RetryPolicy;
  metrics: GatewayMetrics;
}

/** Inference needs a caller with `models:read` in an active organization (org API keys: by their scopes). */
export function authorizeInference(req: Request): { principal: Principal; orgSlug: string } {
  const principal = req.principal;
  if (!principal) throw new Unauthenticated();
  const org = principal.session.org;
  if (!org) {
    throw noOrgContext();
  }
  if (!hasPermission(principal, 'models:read')) {
    throw new Forbidden('The models:read permission is needed in the active organization', {
      details: { permission: 'models:read', orgSlug: org.slug },
    });
  }
  return { principal, orgSlug: org.slug };
}

/**
 * What the answer says of the model governance chose: `x-platform-model-downgraded: <asked> -> <served>` when
 * soft_downgrade or a budget chose another model, `x-platform-model-routed: auto -> <routed>` when routing chose
 * (decision 0120).
 */
export function modelChoiceHeaders(
  prepared: Pick<Prepared, 'downgradedFrom'> & { routed?: string | null },
  served: { model_id: string },
): Record<string, string> {
  const headers: Record<string, string> = {};
  if (prepared.routed) headers['x-platform-model-routed'] = `${AUTO_MODEL} -> ${prepared.routed}`;
  if (prepared.downgradedFrom)
    headers['x-platform-model-downgraded'] = `${prepared.downgradedFrom} -> ${served.model_id}`;
  return headers;
}

export interface Prepared {
  principal: Principal;
  caller: Caller;
  settings: OrgGatewaySettings;
  model: CatalogueModel;
  /** the model the caller asked for, when governance or a budget replaced it */
  downgradedFrom: string | null;
  /** the model routing chose for `model: "auto"` (before any downgrade), else null */
  routed: string | null;
  /** the model's deployments that can serve the request, then each failover model's (`failoverChain`) */
  chain: readonly Pool[];
  /** the deployment the provider call called last, set as it goes: the one a failed request's usage event names */
  lastCalled: CatalogueModel | null;
  /** what failed attempts consumed by the provider's report (a stream's input before its cut), each on its deployment */
  spent: Array<{ model: CatalogueModel; usage: Usage }>;
  ticket: Ticket;
  promptTokens: number;
  startedAt: number;
}

/** Governance, then quotas: what every inference route does before calling a provider; a refusal is counted. */
export async function prepareInference(...args: Parameters<typeof admitInference>): Promise<Prepared> {
  try {
    return await admitInference(...args);
  } catch (err) {
    const [ctx] = args;
    ctx.metrics.refused(err);
    throw err;
  }
}

async function admitInference(
  ctx: GatewayContext,
  req: Request,
  type: ModelType,
  requestedModel: string | undefined,
  promptTokens: number,
  /**
   * whether a deployment can serve the request (the provider has the endpoint, supported dimensions): the
   * deployments that cannot are never drawn, a failover model none of whose can is passed over, and a model
   * none of whose can is refused with the check's error before any quota is consumed
   */
  checkModel?: DeploymentCheck,
  /** what `model: "auto"` is routed by (completion requests; decision 0120) */
  traits?: RequestTraits,
): Promise<Prepared> {
  const startedAt = performance.now();
  const { principal, orgSlug } = authorizeInference(req);
  const settings = await ctx.orgSettings.get(orgSlug);
  // a deployment whose header policy needs caller identity the credential lacks cannot serve the request either:
  // refused (HEADER_POLICY_VIOLATION) or passed over before any quota is consumed
  const check: DeploymentCheck = (deployment) => {
    checkModel?.(deployment);
    providerHeaders(deployment, principal, req.headers, requestIdOf(req));
  };
  // a downgrade (governance's, the budget's) to a model that cannot serve the request is none (decision 0115)
  const serves = (m: CatalogueModel) => servingPool(m, check).pool.length > 0;
  const caller: Caller = {
    orgSlug,
    userId: principal.user.id,
    roleSlug: principal.session.org?.role.slug ?? null,
    apiKeyId: apiKeyIdOf(principal),
  };
  const choice = { apiKeyId: caller.apiKeyId, serves, traits };
  const resolved = resolveModel(requestedModel, type, settings, ctx.catalogue, choice);
  const serving = (m: CatalogueModel): Pool => {
    const { pool, refusal } = servingPool(m, check);
    if (pool.length === 0) throw refusal;
    return pool;
  };
  let pool = serving(resolved.model);
  let model = resolved.model;
  let downgradedFrom = resolved.downgradedFrom;
  let ticket: Ticket;
  try {
    ticket = await ctx.admission.admit(settings, caller, promptTokens, { checkMonth: true });
  } catch (err) {
    if (!(err instanceof MonthlyBudgetExhausted)) throw err;
    const cheaper = budgetDowngrade(model, settings, ctx.catalogue, choice);
    if (!cheaper) throw err.toRateLimited();
    downgradedFrom = downgradedFrom ?? model.model_id;
    pool = serving(cheaper);
    model = cheaper;
    ticket = await ctx.admission.admit(settings, caller, promptTokens, { checkMonth: false });
  }
  const chain = failoverChain(model, pool, settings, ctx.catalogue, caller.apiKeyId, check);
  return {
    principal,
    caller,
    settings,
    model,
    downgradedFrom,
    // what routing chose, before soft_downgrade replaced it (x-platform-model-downgraded says that apart)
    routed: resolved.routed ? (resolved.downgradedFrom ?? resolved.model.model_id) : null,
    chain,
    lastCalled: null,
    spent: [],
    ticket,
    promptTokens,
    startedAt,
  };
}

export type Outcome = NonNullable<LlmCompletionEvent['outcome']>;

export interface Finished {
  model: CatalogueModel;
  usage: Usage;
  usageSource: 'provider' | 'tokenizer';
  outcome: Outcome;
  endpoint: NonNullable<LlmCompletionEvent['endpoint']>;
  stream: boolean;
  requestId: string;
}

export interface Figures {
  cost: number;
  costMicros: number;
  durationMs: number;
  carbon: { energy_kwh: number; gwp_kgco2eq: number } | null;
}

/** The figures an answer reports and the event carries: cost from the pricing, duration, carbon. */
export function figuresOf(
  ctx: GatewayContext,
  prepared: Prepared,
  model: CatalogueModel,
  usage: Usage,
): Figures {
  const micros = costMicros(usage, model.pricing);
  const durationMs = Math.round((performance.now() - prepared.startedAt) * 100) / 100;
  return {
    cost: micros / 1_000_000,
    costMicros: micros,
    durationMs,
    carbon: estimateCarbon({
      outputTokens: usage.completion_tokens,
      parametersBillion: model.parameters_billion,
      requestSeconds: durationMs / 1000,
      pue: ctx.config.LLM_GATEWAY_PUE,
      gridKgCo2PerKwh: ctx.config.LLM_GATEWAY_GRID_KGCO2_PER_KWH,
    }),
  };
}

/**
 * Ends a request's accounting: settles its quota reservation with what was really consumed and
 * records one `analytics.llm.completion` in the outbox. Runs after the answer has gone out.
 */
export async function account(ctx: GatewayContext, prepared: Prepared, done: Finished, figures: Figures) {
  ({ done, figures } = withSpent(prepared, done, figures));
  // the month llm-quota counts the event in (its occurredAt) is the one the gateway's counters settle in
  const at = ctx.clock.now();
  try {
    await prepared.ticket.settle(
      { totalTokens: done.usage.total_tokens, costMicros: figures.costMicros },
      at,
    );
  } catch (err) {
    ctx.logger.error({ err }, 'could not settle a quota reservation');
  }
  const event: LlmCompletionEvent = {
    id: randomUUID(),
    version: 1,
    occurredAt: at.toISOString(),
    orgSlug: prepared.caller.orgSlug,
    model: done.model.model_id,
    provider: done.model.providerName,
    usage: eventUsage(done.usage),
    cost: figures.cost,
    requestId: done.requestId,
    endpoint: done.endpoint,
    outcome: done.outcome,
    stream: done.stream,
    usageSource: done.usageSource,
    durationMs: figures.durationMs,
    currency: prepared.settings.plan.currency,
  };
  if (prepared.caller.userId !== null) event.userId = prepared.caller.userId;
  if (prepared.caller.apiKeyId !== null) event.apiKeyId = prepared.caller.apiKeyId;
  // what the caller asked: `auto` when routing chose, else the model a downgrade replaced
  if (prepared.routed) event.requestedModel = AUTO_MODEL;
  else if (prepared.downgradedFrom) event.requestedModel = prepared.downgradedFrom;
  if (figures.carbon) event.carbon = figures.carbon;
  ctx.metrics.accounted(event);
  // never rejects: what the store refuses goes to the bus, or waits in memory (outbox.ts)
  await ctx.outbox.record(event);
}

/**
 * The request's usage and cost with what its failed attempts consumed added, each priced on the deployment it called:
 * a stream cut after the provider reported its input (Anthropic's message_start) consumed that input, retried or not.
 */
function withSpent(
  prepared: Prepared,
  done: Finished,
  figures: Figures,
): { done: Finished; figures: Figures } {
  if (prepared.spent.length === 0) return { done, figures };
  const usage = { ...done.usage };
  let micros = figures.costMicros;
  for (const spent of prepared.spent) {
    usage.prompt_tokens += spent.usage.prompt_tokens;
    usage.completion_tokens += spent.usage.completion_tokens;
    usage.total_tokens += spent.usage.total_tokens;
    const [mine, theirs] = [usage.prompt_tokens_details, spent.usage.prompt_tokens_details];
    if (theirs)
      usage.prompt_tokens_details = {
        ...mine,
        cached_tokens: (mine?.cached_tokens ?? 0) + (theirs.cached_tokens ?? 0),
        cache_write_tokens: (mine?.cache_write_tokens ?? 0) + (theirs.cache_write_tokens ?? 0),
      };
    micros += costMicros(spent.usage, spent.model.pricing);
  }
  return { done: { ...done, usage }, figures: { ...figures, costMicros: micros, cost: micros / 1_000_000 } };
}

export const zeroUsage = (): Usage => ({ prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 });

/** The deployment a request that got no answer is accounted to: the one last called, else the model admitted. */
export const failedOn = (prepared: Prepared): CatalogueModel => prepared.lastCalled ?? prepared.model;

/**
 * The event of a request whose provider call failed or whose client left before any answer: nothing consumed, but
 * what the provider reported its failed attempts consumed.
 */
export function accountFailure(
  ctx: GatewayContext,
  prepared: Prepared,
  call: { endpoint: Finished['endpoint']; stream: boolean; requestId: string; aborted: boolean },
): void {
  const usage = zeroUsage();
  const model = failedOn(prepared);
  void account(
    ctx,
    prepared,
    {
      model,
      usage,
      usageSource: 'tokenizer',
      outcome: call.aborted ? 'client_cancelled' : 'provider_error',
      endpoint: call.endpoint,
      stream: call.stream,
      requestId: call.requestId,
    },
    figuresOf(ctx, prepared, model, usage),
  );
}
