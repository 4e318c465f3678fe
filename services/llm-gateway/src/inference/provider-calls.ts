import type { Catalogue, CatalogueModel } from '../catalogue/catalogue';
import type { ProviderCallMetrics, ProviderTiming } from '../metrics/gateway-metrics';
import type { CancelSignal } from '../providers/cancellation';
import type { OrgGatewaySettings } from '../quota/org-settings';
import { ProviderErrorAnswer, ProviderNoResponse, refusedForProvider } from './errors';
import { isAllowed } from './governance';
import { isProviderFailure, isProviderTimeout, type ProviderCall } from './provider-port';

export interface RetryPolicy {
  maxAttempts: number;
  baseDelayMs: number;
  /** a provider's Retry-After longer than this is not waited for: the next model (or the error) comes first */
  maxWaitMs: number;
  defaultTimeoutMs: number;
  /** where every attempt, retry and failover is counted */
  metrics?: ProviderCallMetrics;
}

/** The model, then its failover chain (operator-configured, allowed for the org, no cycles, at most 3 more). */
export function failoverChain(
  model: CatalogueModel,
  settings: OrgGatewaySettings,
  catalogue: Catalogue,
): CatalogueModel[] {
  const chain = [model];
  let next = model.failover;
  while (next && chain.length < 4 && !chain.some((m) => m.model_id === next)) {
    const m = catalogue.get(next);
    if (!m || m.type !== model.type) break;
    if (isAllowed(m.model_id, settings)) chain.push(m);
    next = m.failover;
  }
  return chain;
}

const abortError = () => Object.assign(new Error('client went away'), { name: 'AbortError' });

function wait(ms: number, signal: CancelSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(abortError());
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(abortError());
    };
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

/**
 * Runs one provider operation with the gateway's resilience: a 429 or 5xx is retried on the same
 * model with exponential backoff (or the provider's Retry-After when shorter than the cap), then the
 * next model of the failover chain is tried; no answer within the timeout goes to the next model at
 * once. A provider's other errors answer at once. The client's disconnect stops everything.
 */
export async function withResilience<T>(
  chain: CatalogueModel[],
  policy: RetryPolicy,
  signal: CancelSignal,
  headersFor: (model: CatalogueModel) => Record<string, string>,
  operation: (model: CatalogueModel, call: ProviderCall) => Promise<T>,
  /** what the operation's duration measures, for the metrics: a whole answer, or a stream's first chunk */
  timing: ProviderTiming = 'answer',
): Promise<{ result: T; model: CatalogueModel; attempts: number }> {
  const metrics = policy.metrics;
  let last: unknown;
  let attempts = 0;
  for (let m = 0; m < chain.length; m++) {
    const model = chain[m]!;
    const timeoutMs = model.timeout_ms ?? policy.defaultTimeoutMs;
    for (let attempt = 1; attempt <= policy.maxAttempts; attempt++) {
      attempts++;
      const started = performance.now();
      try {
        const call: ProviderCall = {
          model: model.provider_config.model,
          headers: headersFor(model),
          timeoutMs,
          signal,
        };
        const result = await operation(model, call);
        metrics?.answered(model, (performance.now() - started) / 1000, timing);
        return { result, model, attempts };
      } catch (err) {
        if (signal.aborted) throw err;
        last = err;
        metrics?.failed(model, err);
        if (isProviderTimeout(err)) break;
        if (!isProviderFailure(err) || !err.retryable) throw toAnswer(err, model, timeoutMs);
        if (attempt === policy.maxAttempts) break;
        const backoff = policy.baseDelayMs * 2 ** (attempt - 1) * (0.5 + Math.random() / 2);
        const delay = err.retryAfterSeconds !== null ? err.retryAfterSeconds * 1000 : backoff;
        if (delay > policy.maxWaitMs) break;
        await wait(delay, signal);
        metrics?.retried(model);
      }
    }
    if (m < chain.length - 1) metrics?.failedOver(model);
  }
  const lastModel = chain[chain.length - 1]!;
  throw toAnswer(last, lastModel, lastModel.timeout_ms ?? policy.defaultTimeoutMs);
}

/** A provider layer error as the envelope's error; anything else goes up unchanged (a 500). */
export function toAnswer(err: unknown, model: CatalogueModel, timeoutMs: number): unknown {
  if (isProviderTimeout(err)) return new ProviderNoResponse(model.providerName, model.model_id, timeoutMs);
  if (isProviderFailure(err))
    return err.refusedByGateway
      ? refusedForProvider(model.providerName, model.model_id, err.message)
      : new ProviderErrorAnswer(model.providerName, model.model_id, err);
  return err;
}
