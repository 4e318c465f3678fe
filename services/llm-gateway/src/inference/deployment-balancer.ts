import type { Clock } from '@platform/kernel';
import type { CatalogueModel } from '../catalogue/catalogue';
import { isProviderFailure, isProviderTimeout } from './provider-port';

export interface CooldownOptions {
  clock: Clock;
  /** how long a deployment sits out after a failure that names no Retry-After (ms) */
  windowMs: number;
  /** the longest a provider's Retry-After keeps a deployment out (ms) */
  maxMs: number;
  /** uniform in [0, 1): Math.random, or a fixed sequence in tests */
  random?: () => number;
}

/**
 * A failure that belongs to the deployment rather than to the request: no answer in time, no
 * connection (or an address refused), a 408, 429 or 5xx, whatever the provider's `x-should-retry`
 * says (OpenAI's out-of-credit 429 says false, and another key may well have credit).
 */
export function isDeploymentFault(err: unknown): boolean {
  if (isProviderTimeout(err)) return true;
  if (!isProviderFailure(err) || err.refusedByGateway) return false;
  const status = err.upstreamStatus;
  return status === null || status === 408 || status === 429 || status >= 500;
}

/**
 * Which deployment of a model an attempt calls, and which deployments sit out after a failure, on
 * this instance (decision 0101). A pick is a weighted draw among the deployments the request has not
 * tried yet (`tried`: one bit per pool index) that are not cooling down; when there is none, the one
 * whose cooldown ends first. A model of one deployment never reads the clock nor draws.
 */
export class DeploymentBalancer {
  private readonly random: () => number;

  constructor(private readonly options: CooldownOptions) {
    this.random = options.random ?? Math.random;
  }

  /** the pool index the next attempt calls */
  pick(pool: readonly CatalogueModel[], tried: number): number {
    if (pool.length === 1) return 0;
    let now = -1;
    let total = 0;
    for (let i = 0; i < pool.length; i++) {
      if (tried & (1 << i)) continue;
      const until = pool[i]!.health.coolUntil;
      if (until !== 0) {
        if (now < 0) now = this.options.clock.now().getTime();
        if (until > now) continue;
      }
      total += pool[i]!.weight;
    }
    if (total > 0) {
      let left = this.random() * total;
      let chosen = 0;
      for (let i = 0; i < pool.length; i++) {
        if (tried & (1 << i)) continue;
        const until = pool[i]!.health.coolUntil;
        if (until !== 0 && until > now) continue;
        chosen = i;
        left -= pool[i]!.weight;
        if (left < 0) return i;
      }
      return chosen;
    }
    // every deployment tried or cooling down: the one back soonest (with equal windows, the least recently failed)
    let soonest = 0;
    for (let i = 1; i < pool.length; i++)
      if (pool[i]!.health.coolUntil < pool[soonest]!.health.coolUntil) soonest = i;
    return soonest;
  }

  /** whether a deployment the request has not tried yet is in service */
  hasFresh(pool: readonly CatalogueModel[], tried: number): boolean {
    let now = -1;
    for (let i = 0; i < pool.length; i++) {
      if (tried & (1 << i)) continue;
      const until = pool[i]!.health.coolUntil;
      if (until === 0) return true;
      if (now < 0) now = this.options.clock.now().getTime();
      if (until <= now) return true;
    }
    return false;
  }

  /**
   * A failed attempt on `deployment`: when the failure is the deployment's own and the model has others,
   * the deployment sits out the provider's Retry-After (at most `maxMs`), else `windowMs`; a cooldown
   * already running longer is kept. Answers whether it cooled down.
   */
  failed(deployment: CatalogueModel, err: unknown): boolean {
    if (deployment.pool.length < 2 || !isDeploymentFault(err)) return false;
    const retryAfter = isProviderFailure(err) ? err.retryAfterSeconds : null;
    const ms = retryAfter !== null ? Math.min(retryAfter * 1000, this.options.maxMs) : this.options.windowMs;
    const until = this.options.clock.now().getTime() + ms;
    if (until > deployment.health.coolUntil) deployment.health.coolUntil = until;
    return true;
  }
}
