import type { LlmCompletionEvent } from '@platform/contracts';
import {
  AppError,
  type CounterSeries,
  counterFamily,
  createHttpMetrics,
  type HistogramSeries,
  type HttpMetrics,
  histogramFamily,
} from '@platform/kernel';
import { Gauge } from 'prom-client';
import type { CatalogueModel } from '../catalogue/catalogue';
import { isProviderFailure, isProviderTimeout } from '../inference/provider-port';

/** Models with a series of their own; the catalogue's later ones share `model="other"` (per provider). */
export const MODEL_LABEL_CAP = 50;
/** Providers with a label of their own; later ones are `provider="other"`. */
export const PROVIDER_LABEL_CAP = 20;

type Outcome = NonNullable<LlmCompletionEvent['outcome']>;
type UsageEventOutcome = 'published' | 'deferred' | 'republished' | 'held' | 'lost';
type ProviderErrorType = 'timeout' | 'rate_limited' | 'server_error' | 'client_error' | 'connection';
type RefusalReason =
  | 'requests_per_minute'
  | 'tokens_per_minute'
  | 'monthly_tokens'
  | 'monthly_cost'
  | 'model_not_allowed';
/** what a provider call's duration measures: its whole answer, or a stream's first chunk */
export type ProviderTiming = 'answer' | 'first_chunk';

type ModelRef = Pick<CatalogueModel, 'model_id' | 'providerName'>;

/** What the provider calls report (inference/provider-calls.ts): one call per attempt. */
export interface ProviderCallMetrics {
  answered(model: ModelRef, seconds: number, timing: ProviderTiming): void;
  /** an attempt failed (the client leaving is not a failure) */
  failed(model: ModelRef, err: unknown): void;
  /** the same model is tried again after a 429 or 5xx */
  retried(model: ModelRef): void;
  /** the model's attempts are over and the next model of its failover chain is tried */
  failedOver(model: ModelRef): void;
}

export interface GatewayMetrics extends ProviderCallMetrics {
  /** request count and latency by route (the kernel's), and the registry behind /metrics */
  http: HttpMetrics;
  /** one accounted request (its `analytics.llm.completion`): requests, tokens and cost by model */
  accounted(event: LlmCompletionEvent): void;
  /** a request refused before any provider call; only quota and governance refusals are counted */
  refused(err: unknown): void;
  /** what became of a usage event on the bus (accounting/outbox.ts) */
  usageEvent(outcome: UsageEventOutcome): void;
}

const DURATION_BUCKETS = [0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120];
const FIRST_TOKEN_BUCKETS = [0.025, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30];

const REFUSAL_BY_KEY: Record<string, RefusalReason> = {
  'llm.rpm': 'requests_per_minute',
  'llm.tpm': 'tokens_per_minute',
  'llm.monthly_tokens': 'monthly_tokens',
  'llm.monthly_cost': 'monthly_cost',
};

/** The refusal's reason when it is a quota or governance refusal, else null (a 401, a bad body, ...). */
function refusalReason(err: unknown): RefusalReason | null {
  if (!(err instanceof AppError)) return null;
  if (err.code === 'MODEL_NOT_ALLOWED') return 'model_not_allowed';
  if (err.kind !== 'rate_limited') return null;
  const key = err.details?.key;
  return typeof key === 'string' ? (REFUSAL_BY_KEY[key] ?? null) : null;
}

/** A provider attempt's failure by kind; null for what is not the provider's (the gateway refused it itself). */
function providerErrorType(err: unknown): ProviderErrorType | null {
  if (isProviderTimeout(err)) return 'timeout';
  if (!isProviderFailure(err) || err.refusedByGateway) return null;
  const status = err.upstreamStatus;
  if (status === null) return 'connection';
  if (status === 429) return 'rate_limited';
  return status >= 500 ? 'server_error' : 'client_error';
}

type Family<S> = { series(labels: Readonly<Record<string, string>>): S };

interface Families {
  requests: Family<CounterSeries>;
  tokens: Family<CounterSeries>;
  cost: Family<CounterSeries>;
  errors: Family<CounterSeries>;
  retries: Family<CounterSeries>;
  failovers: Family<CounterSeries>;
  duration: Family<HistogramSeries>;
  firstToken: Family<HistogramSeries>;
}

/**
 * Every series of one (model, provider) label pair, each bound at its first use: an update on the hot path is
 * a property read and an addition. Series that never moved are not rendered (a model never streamed has no
 * time to first token).
 */
class ModelSeries {
  private readonly requests: Partial<Record<Outcome, CounterSeries>> = {};
  private readonly errors: Partial<Record<ProviderErrorType, CounterSeries>> = {};
  private promptTokens: CounterSeries | undefined;
  private completionTokens: CounterSeries | undefined;
  private cost: CounterSeries | undefined;
  private retries: CounterSeries | undefined;
  private failovers: CounterSeries | undefined;
  private duration: HistogramSeries | undefined;
  private firstToken: HistogramSeries | undefined;

  constructor(
    private readonly labels: Readonly<{ model: string; provider: string }>,
    private readonly f: Families,
  ) {}

  accounted(outcome: Outcome, usage: LlmCompletionEvent['usage'], cost: number): void {
    let requests = this.requests[outcome];
    if (!requests) {
      requests = this.f.requests.series({ ...this.labels, outcome });
      this.requests[outcome] = requests;
    }
    requests.value++;
    this.promptTokens ??= this.f.tokens.series({ ...this.labels, type: 'prompt' });
    this.completionTokens ??= this.f.tokens.series({ ...this.labels, type: 'completion' });
    this.cost ??= this.f.cost.series(this.labels);
    this.promptTokens.value += usage.prompt_tokens;
    this.completionTokens.value += usage.completion_tokens;
    this.cost.value += cost;
  }

  answered(seconds: number, timing: ProviderTiming): void {
    if (timing === 'answer') {
      this.duration ??= this.f.duration.series(this.labels);
      this.duration.observe(seconds);
    } else {
      this.firstToken ??= this.f.firstToken.series(this.labels);
      this.firstToken.observe(seconds);
    }
  }

  failed(type: ProviderErrorType): void {
    let errors = this.errors[type];
    if (!errors) {
      errors = this.f.errors.series({ ...this.labels, type });
      this.errors[type] = errors;
    }
    errors.value++;
  }

  retried(): void {
    this.retries ??= this.f.retries.series(this.labels);
    this.retries.value++;
  }

  failedOver(): void {
    this.failovers ??= this.f.failovers.series(this.labels);
    this.failovers.value++;
  }
}

/**
 * The gateway's Prometheus metrics (docs/decisions/0097): what it served by model and provider (requests,
 * tokens, cost), how its providers behave (errors, retries, failovers, latency, time to first token), what
 * quotas refused, and the usage outbox. Labels are bounded: models and providers come from the catalogue
 * (capped), reasons and outcomes are closed sets; never an organization, a user or a request's text.
 */
export function createGatewayMetrics(read: { outboxEvents: () => Promise<number> }): GatewayMetrics {
  const http = createHttpMetrics('llm-gateway');
  const registry = http.registry;
  const families: Families = {
    requests: counterFamily(
      registry,
      'llm_gateway_requests_total',
      'Inference requests that reached a provider call, by served model, provider and outcome',
    ),
    tokens: counterFamily(
      registry,
      'llm_gateway_tokens_total',
      'Tokens accounted (billed), by served model, provider and type (prompt, completion)',
    ),
    cost: counterFamily(
      registry,
      'llm_gateway_cost_total',
      "Cost accounted, in the catalogue pricing's currency, by served model and provider",
    ),
    errors: counterFamily(
      registry,
      'llm_gateway_provider_errors_total',
      'Failed provider attempts, by model, provider and type (timeout, rate_limited, server_error, client_error, connection)',
    ),
    retries: counterFamily(
      registry,
      'llm_gateway_provider_retries_total',
      'Provider attempts sent again on the same model after a 429 or 5xx',
    ),
    failovers: counterFamily(
      registry,
      'llm_gateway_provider_failovers_total',
      'Requests that left this model for the next one of its failover chain',
    ),
    duration: histogramFamily(
      registry,
      'llm_gateway_provider_request_duration_seconds',
      'Successful non-streamed provider calls: request sent to answer read',
      DURATION_BUCKETS,
    ),
    firstToken: histogramFamily(
      registry,
      'llm_gateway_provider_time_to_first_token_seconds',
      "Streamed provider calls: request sent to the provider's first chunk",
      FIRST_TOKEN_BUCKETS,
    ),
  };
  const refusalFamily = counterFamily(
    registry,
    'llm_gateway_quota_refusals_total',
    'Requests refused before any provider call, by reason (minute windows, monthly budget, model governance)',
  );
  const refusals = {} as Record<RefusalReason, CounterSeries>;
  for (const reason of [...Object.values(REFUSAL_BY_KEY), 'model_not_allowed' as const])
    refusals[reason] = refusalFamily.series({ reason });
  const eventsFamily = counterFamily(
    registry,
    'llm_gateway_usage_events_total',
    'analytics.llm.completion events, by what happened on the bus',
  );
  const events = {} as Record<UsageEventOutcome, CounterSeries>;
  for (const outcome of ['published', 'deferred', 'republished', 'held', 'lost'] as const)
    events[outcome] = eventsFamily.series({ outcome });
  new Gauge({
    name: 'llm_gateway_usage_outbox_events',
    help: 'Usage events waiting for the bus: in the outbox collection (shared by instances on one store) or held in memory',
    registers: [registry],
    async collect() {
      // a store that cannot be read leaves no value rather than a stale one
      await read.outboxEvents().then(
        (n) => this.set(n),
        () => this.reset(),
      );
    },
  });

  // model id -> provider -> series (a model of several deployments has one per provider); the series by
  // their labels, so capped ones share
  const byModel = new Map<string, Map<string, ModelSeries>>();
  const byLabels = new Map<string, ModelSeries>();
  const ownModels = new Set<string>();
  const ownProviders = new Set<string>();
  const capped = (own: Set<string>, cap: number, value: string) => {
    if (own.has(value)) return value;
    if (own.size >= cap) return 'other';
    own.add(value);
    return value;
  };
  const seriesOf = (modelId: string, provider: string): ModelSeries => {
    let providers = byModel.get(modelId);
    const known = providers?.get(provider);
    if (known !== undefined) return known;
    // first sight of this model on this provider: not on the hot path
    if (providers === undefined) {
      providers = new Map();
      byModel.set(modelId, providers);
    }
    const labels = {
      model: capped(ownModels, MODEL_LABEL_CAP, modelId),
      provider: capped(ownProviders, PROVIDER_LABEL_CAP, provider),
    };
    const key = `${labels.model}\n${labels.provider}`;
    let series = byLabels.get(key);
    if (series === undefined) {
      series = new ModelSeries(labels, families);
      byLabels.set(key, series);
    }
    providers.set(provider, series);
    return series;
  };

  return {
    http,
    accounted(event) {
      seriesOf(event.model, event.provider).accounted(event.outcome ?? 'success', event.usage, event.cost);
    },
    refused(err) {
      const reason = refusalReason(err);
      if (reason) refusals[reason].value++;
    },
    usageEvent(outcome) {
      events[outcome].value++;
    },
    answered(model, seconds, timing) {
      seriesOf(model.model_id, model.providerName).answered(seconds, timing);
    },
    failed(model, err) {
      const type = providerErrorType(err);
      if (type) seriesOf(model.model_id, model.providerName).failed(type);
    },
    retried(model) {
      seriesOf(model.model_id, model.providerName).retried();
    },
    failedOver(model) {
      seriesOf(model.model_id, model.providerName).failedOver();
    },
  };
}
