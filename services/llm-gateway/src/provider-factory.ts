import type { Clock } from '@platform/kernel';
import type { AdapterFactory } from './catalogue/catalogue';
import type { ProviderAdapterPort } from './inference/provider-port';
import { createProviderAdapter, type ProviderDestinations } from './providers';

/** The provider layer's adapter factory (src/providers), behind the catalogue's port. */
export const defaultAdapterFactory =
  (deps: { fetch?: typeof fetch; clock?: Clock; destinations?: ProviderDestinations }): AdapterFactory =>
  (spec) =>
    // The adapters take OpenAI's typed request (model required); the gateway passes the caller's
    // validated body and names the provider's model in `call.model`, which is what adapters send.
    createProviderAdapter(spec, deps) as unknown as ProviderAdapterPort;
