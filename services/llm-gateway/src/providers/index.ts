import { type Clock, systemClock } from '@platform/kernel';
import { createAnthropicAdapter } from './anthropic/anthropic-adapter';
import { ProviderDestinations } from './http/destinations';
import { fetchTransport, restrictedTransport, undiciTransport } from './http/transport';
import { createMockAdapter } from './mock/mock-adapter';
import { createOpenAiAdapter } from './openai/openai-adapter';
import type { ProviderAdapter, ProviderSpec } from './types';

export * from './endpoints';
export { ProviderDestinations } from './http/destinations';
export { MOCK_EMBEDDING_DIMENSIONS } from './mock/mock-adapter';
export * from './types';

const DEFAULT_DESTINATIONS = new ProviderDestinations();

/** The adapter for one configured provider. Adapters hold no state besides their spec. */
export function createProviderAdapter(
  spec: ProviderSpec,
  deps: { fetch?: typeof fetch; clock?: Clock; destinations?: ProviderDestinations } = {},
): ProviderAdapter {
  const clock = deps.clock ?? systemClock;
  // an injected fetch (tests script answers with it); else undici's request, cheaper than fetch
  const direct = deps.fetch ? fetchTransport(deps.fetch) : undiciTransport;
  // a provider a platform administrator defined reaches public addresses only (and what the operator allows)
  const send = spec.restricted
    ? restrictedTransport(direct, deps.destinations ?? DEFAULT_DESTINATIONS, { injected: !!deps.fetch })
    : direct;
  switch (spec.type) {
    case 'openai':
      return createOpenAiAdapter(spec, { send, clock });
    case 'anthropic':
      return createAnthropicAdapter(spec, { send, clock });
    case 'mock':
      return createMockAdapter(spec, { clock });
    default:
      throw new Error(`unknown provider type '${String((spec as { type: unknown }).type)}'`);
  }
}
