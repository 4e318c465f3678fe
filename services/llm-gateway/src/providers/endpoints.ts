import type { ProviderSpec } from './types';

/**
 * An endpoint of the OpenAI surface the gateway may call on a provider (`chat` every provider has; `completions` is
 * the legacy text completions, decision 0115).
 */
export type ProviderEndpoint =
  | 'chat'
  | 'completions'
  | 'embeddings'
  | 'rerank'
  | 'images'
  | 'transcriptions'
  | 'translations'
  | 'speech';

/** The kinds of provider that differ in what they offer: Azure OpenAI is the `openai` type with `azure` set. */
export type ProviderKind = 'openai' | 'azure-openai' | 'anthropic' | 'mock';

const EVERY_ENDPOINT: readonly ProviderEndpoint[] = [
  'chat',
  'completions',
  'embeddings',
  'rerank',
  'images',
  'transcriptions',
  'translations',
  'speech',
];

/**
 * The one table of the endpoints each kind of provider has (decision 0105): the catalogue refuses a model
 * whose deployment is on a provider without what the model needs, and the adapter contract test holds every
 * adapter to it. `rerank` is a native `/rerank` (vLLM, Jina, Cohere-compatible servers behind the OpenAI
 * protocol); without it rerank scores through chat.
 */
export const PROVIDER_ENDPOINTS: Readonly<Record<ProviderKind, readonly ProviderEndpoint[]>> = {
  openai: EVERY_ENDPOINT,
  'azure-openai': EVERY_ENDPOINT.filter((e) => e !== 'rerank'),
  // the Messages API alone: no legacy text completions either (decision 0115)
  anthropic: ['chat'],
  mock: EVERY_ENDPOINT,
};

/** how messages name an endpoint ("provider claude (anthropic) has no image generation endpoint") */
export const ENDPOINT_NAMES: Readonly<Record<ProviderEndpoint, string>> = {
  chat: 'chat completions',
  completions: 'text completions',
  embeddings: 'embeddings',
  rerank: 'rerank',
  images: 'image generation',
  transcriptions: 'audio transcription',
  translations: 'audio translation',
  speech: 'speech',
};

export const providerKind = (provider: Pick<ProviderSpec, 'type' | 'azure'>): ProviderKind =>
  provider.type === 'openai' && provider.azure ? 'azure-openai' : provider.type;

export const hasEndpoint = (provider: Pick<ProviderSpec, 'type' | 'azure'>, endpoint: ProviderEndpoint) =>
  PROVIDER_ENDPOINTS[providerKind(provider)].includes(endpoint);
