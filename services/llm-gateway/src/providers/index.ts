import { type Clock, systemClock } from '@platform/kernel';
import { createAnthropicAdapter } from './anthropic/anthropic-adapter';
import { fetchTransport, undiciTransport } from './http/transport';
import { createMockAdapter } from './mock/mock-adapter';
import { createOpenAiAdapter } from './openai/openai-adapter';
import type { ProviderAdapter, ProviderSpec } from './types';

export { MOCK_EMBEDDING_DIMENSIONS } from './mock/mock-adapter';
export * from './types';

/** The adapter for one configured provider. Adapters hold no state besides their spec. */
export function createProviderAdapter(
  spec: ProviderSpec,
  deps: { fetch?: typeof fetch; clock?: Clock } = {},
): ProviderAdapter {
  const clock = deps.clock ?? systemClock;
  // an injected fetch (tests script answers with it); else undici's request, cheaper than fetch
  const send = deps.fetch ? fetchTransport(deps.fetch) : undiciTransport;
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
