import type { Request } from 'express';
import type { CatalogueModel } from '../catalogue/catalogue';
import type { GatewayContext, Prepared } from '../inference/gateway-context';
import { providerHeaders } from '../inference/header-policy';
import { failoverChain, withResilience } from '../inference/provider-calls';
import type { ProviderCall } from '../inference/provider-port';
import type { ProviderTiming } from '../metrics/gateway-metrics';
import type { CancelSignal } from '../providers/cancellation';
import { requestIdOf } from './client-abort';

/**
 * An admitted request's provider call: its model, then the model's failover chain, each with its retries and
 * deployments (`withResilience`), sending the headers each model's policy forwards.
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
    failoverChain(prepared.model, prepared.settings, ctx.catalogue),
    ctx.retry,
    signal,
    (m) => providerHeaders(m, prepared.principal, req.headers, requestIdOf(req)),
    operation,
    timing,
  );
}
