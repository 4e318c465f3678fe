import type { Request } from 'express';
import type { CatalogueModel } from '../catalogue/catalogue';
import type { GatewayContext, Prepared } from '../inference/gateway-context';
import { providerHeaders } from '../inference/header-policy';
import { withResilience } from '../inference/provider-calls';
import { consumedBy, type ProviderCall } from '../inference/provider-port';
import type { ProviderTiming } from '../metrics/gateway-metrics';
import type { CancelSignal } from '../providers/cancellation';
import { requestIdOf } from './client-abort';

/**
 * An admitted request's provider call: the deployments of its model that can serve it, then its failover chain's
 * (`prepared.chain`), each with its retries (`withResilience`), sending the headers each model's policy forwards.
 * Each attempt's deployment is kept in `prepared.lastCalled`, which a failed request's usage event names, and what a
 * failed attempt consumed (the provider's report) in `prepared.spent`, which its usage event counts.
 */
export function callPrepared<T>(
  ctx: GatewayContext,
  req: Request,
  prepared: Prepared,
  signal: CancelSignal,
  operation: (model: CatalogueModel, call: ProviderCall) => Promise<T>,
  timing?: ProviderTiming,
): Promise<{ result: T; model: CatalogueModel; attempts: number }> {
  return withResilience(
    prepared.chain,
    ctx.retry,
    signal,
    (m) => providerHeaders(m, prepared.principal, req.headers, requestIdOf(req)),
    async (m, call) => {
      prepared.lastCalled = m;
      try {
        return await operation(m, call);
      } catch (err) {
        // what the provider reported the failed attempt consumed is the request's, in its usage event
        const consumed = consumedBy(err);
        if (consumed) prepared.spent.push({ model: m, usage: consumed });
        throw err;
      }
    },
    timing,
  );
}
