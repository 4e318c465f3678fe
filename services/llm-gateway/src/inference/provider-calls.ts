import type { Catalogue, CatalogueModel } from '../catalogue/catalogue';
import type { ProviderCallMetrics, ProviderTiming } from '../metrics/gateway-metrics';
import type { CancelSignal } from '../providers/cancellation';
import type { OrgGatewaySettings } from '../quota/org-settings';
import type { DeploymentBalancer } from './deployment-balancer';
import { ProviderErrorAnswer, ProviderNoResponse, refusedForProvider } from './errors';
import { isAllowed, visibleTo } from './governance';
import { isProviderFailure, isProviderTimeout, type ProviderCall } from './provider-port';

export interface RetryPolicy {
  maxAttempts: number;
  baseDelayMs: number;
  /** a provider's Retry-After longer than this is not waited for: the next model (or the error) comes first */
  maxWaitMs: number;
  defaultTimeoutMs: number;
  /** which deployment of a model each attempt calls, and which sit out after failures */
  balancer: DeploymentBalancer;
  /** where every attempt, retry and failover is counted */
  metrics?: ProviderCallMetrics;
}

/** The deployments of one model that can serve a request: a pick draws among these alone. */
export type Pool = readonly CatalogueModel[];

/** A route's check that a deployment can serve its request (its provider has the endpoint, `dimensions`): throws why not. */
export type DeploymentCheck = (deployment: CatalogueModel) => void;

/**
 * The deployments of `model` that pass `check` (its whole pool without one, or when all pass), and the
 * first refusal when some do not.
 */
export function servingPool(
  model: CatalogueModel,
  check?: DeploymentCheck,
): { pool: Pool; refusal: unknown } {
  if (!check) return { pool: model.pool, refusal: null };
  let serving: CatalogueModel[] | null = null;
  let refusal: unknown = null;
  for (let i = 0; i < model.pool.length; i++) {
    const deployment = model.pool[i]!;
    try {
      check(deployment);
      serving?.push(deployment);
    } catch (err) {
      refusal ??= err;
      serving ??= model.pool.slice(0, i);
    }
  }
  return { pool: serving ?? model.pool, refusal };
}

/**
 * The model's pool, then its failover chain (operator-configured, no cycles, at most 3 more): each as the
 * deployments that pass `check`. A failover model the organization may not use (not allowed, or restricted to
 * other organizations) or none of whose deployments can serve the request is passed over for its own failover.
 * `pool` is the model's own, already checked.
 */
export function failoverChain(
  model: CatalogueModel,
  pool: Pool,
  settings: OrgGatewaySettings,
  catalogue: Catalogue,
  /** the calling organization API key: a failover model outside its list is passed over too */
  apiKeyId: string | null,
  check?: DeploymentCheck,
): Pool[] {
  const chain = [pool];
  const seen = [model.model_id];
  let next = model.failover;
  while (next && chain.length < 4 && !seen.includes(next)) {
    const m = catalogue.get(next);
    if (!m || m.type !== model.type) break;
    seen.push(m.model_id);
    if (isAllowed(m.model_id, settings, apiKeyId) && visibleTo(m, settings.orgSlug)) {
      const serving = servingPool(m, check).pool;
      if (serving.length > 0) chain.push(serving);
    }
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
 * Runs one provider operation with the gateway's resilience. Each attempt calls one deployment of the
 * model, picked by weight among those of its pool (the ones that can serve the request) in service
 * (decision 0101). A 429 or 5xx is retried: at once on another deployment of the model not yet tried and
 * not cooling down (as is a timeout, a lost connection or a refused key's 429), else with exponential
 * backoff (or the provider's Retry-After when shorter than the cap); then the next model of the failover
 * chain is tried. No answer within the timeout and no other deployment goes to the next model at once. A
 * provider's other errors answer at once. The client's disconnect stops everything.
 */
export async function withResilience<T>(
  /** the deployments of each model in turn that may serve the request; none empty */
  chain: readonly Pool[],
  policy: RetryPolicy,
  signal: CancelSignal,
  headersFor: (model: CatalogueModel) => Record<string, string>,
  operation: (model: CatalogueModel, call: ProviderCall) => Promise<T>,
  /** what the operation's duration measures, for the metrics: a whole answer, or a stream's first chunk */
  timing: ProviderTiming = 'answer',
): Promise<{ result: T; model: CatalogueModel; attempts: number }> {
  const metrics = policy.metrics;
  const balancer = policy.balancer;
  let last: unknown;
  let lastServed = chain[chain.length - 1]![0]!;
  let attempts = 0;
  for (let m = 0; m < chain.length; m++) {
    const pool = chain[m]!;
    const timeoutMs = pool[0]!.timeout_ms ?? policy.defaultTimeoutMs;
    // the deployments this request has called, one bit per pool index (at most 16)
    let tried = 0;
    for (let attempt = 1; attempt <= policy.maxAttempts; attempt++) {
      const index = balancer.pick(pool, tried);
      const served = pool[index]!;
      tried |= 1 << index;
      attempts++;
      const started = performance.now();
      try {
        const call: ProviderCall = {
          model: served.provider_config.model,
          headers: headersFor(served),
          timeoutMs,
          signal,
          reasons: served.capabilities?.reasoning !== false,
          shape: served.requestShape,
        };
        const result = await operation(served, call);
        metrics?.answered(served, (performance.now() - started) / 1000, timing);
        return { result, model: served, attempts };
      } catch (err) {
        if (signal.aborted) throw err;
        last = err;
        lastServed = served;
        metrics?.failed(served, err);
        const timeout = isProviderTimeout(err);
        const retryable = timeout || (isProviderFailure(err) && err.retryable);
        const retryAfter = isProviderFailure(err) ? err.retryAfterSeconds : null;
        const ownFault = balancer.failed(served, err);
        if (!retryable && !ownFault) throw toAnswer(err, served, timeoutMs);
        // another deployment in service is tried at once: the failure was the deployment's, not the request's
        if (!(ownFault && attempt < policy.maxAttempts && balancer.hasFresh(pool, tried))) {
          if (!retryable) throw toAnswer(err, served, timeoutMs);
          if (timeout || attempt === policy.maxAttempts) break;
          const backoff = policy.baseDelayMs * 2 ** (attempt - 1) * (0.5 + Math.random() / 2);
          const delay = retryAfter !== null ? retryAfter * 1000 : backoff;
          if (delay > policy.maxWaitMs) break;
          await wait(delay, signal);
        }
        metrics?.retried(served);
      }
    }
    if (m < chain.length - 1) metrics?.failedOver(lastServed);
  }
  throw toAnswer(last, lastServed, lastServed.timeout_ms ?? policy.defaultTimeoutMs);
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
