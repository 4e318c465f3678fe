import {
  ENDPOINT_NAMES,
  hasEndpoint,
  type ProviderEndpoint,
  type ProviderKind,
  providerKind,
} from '../providers/endpoints';
import type { ProviderSpec } from '../providers/types';
import { deploymentsOf, type ModelEntry } from './model-entry';

/** A provider as far as its endpoints go: its type, and whether it is Azure OpenAI. */
type ProviderShape = Pick<ProviderSpec, 'type' | 'azure'>;

/** the endpoint each type of model calls on the deployment serving it */
export const SERVED_BY: Readonly<Record<ModelEntry['type'], ProviderEndpoint>> = {
  completion: 'chat',
  embeddings: 'embeddings',
  image_generation: 'images',
  audio_transcription: 'transcriptions',
  audio_speech: 'speech',
};

const KIND_NAMES: Readonly<Record<ProviderKind, string>> = {
  openai: 'openai',
  'azure-openai': 'Azure OpenAI',
  anthropic: 'anthropic',
  mock: 'mock',
};

/** The endpoints every deployment of the entry must have: its type's, and `rerank` under `native_rerank`. */
function endpointsNeeded(entry: Pick<ModelEntry, 'type' | 'native_rerank'>): ProviderEndpoint[] {
  const served = SERVED_BY[entry.type];
  return entry.native_rerank && served === 'chat' ? [served, 'rerank'] : [served];
}

/**
 * The entry's deployments whose provider has not an endpoint the model needs (decision 0105), as issues
 * (`field`, `message` naming the model and the provider, and the `endpoint` lacking). A provider `providerOf` does
 * not know is left to `unknownProviders`.
 */
export function missingEndpoints(
  entry: Pick<ModelEntry, 'model_id' | 'type' | 'native_rerank' | 'provider_config' | 'deployments'>,
  providerOf: (name: string) => ProviderShape | undefined,
): Array<{ field: string; message: string; endpoint: ProviderEndpoint }> {
  const issues: Array<{ field: string; message: string; endpoint: ProviderEndpoint }> = [];
  const needed = endpointsNeeded(entry);
  deploymentsOf(entry).forEach((d, i) => {
    const provider = providerOf(d.provider);
    if (!provider) return;
    for (const endpoint of needed) {
      if (hasEndpoint(provider, endpoint)) continue;
      const why =
        endpoint === 'rerank'
          ? `${entry.model_id} has native_rerank`
          : `${entry.model_id} is a model of type ${entry.type}`;
      issues.push({
        field: entry.deployments ? `deployments.${i}.provider` : 'provider_config.provider',
        message: `${why}: provider ${d.provider} (${KIND_NAMES[providerKind(provider)]}) has no ${ENDPOINT_NAMES[endpoint]} endpoint`,
        endpoint,
      });
    }
  });
  return issues;
}
