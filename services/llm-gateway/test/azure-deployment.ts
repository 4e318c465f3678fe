import { type gatewayFile, modelEntry } from './support';

/**
 * The tests' gateway file with the simulator's Azure face as the provider `azure` (an OpenAI-compatible server
 * addressing deployments by name, with an api-version), and `models` added.
 */
export const withAzure = (base: ReturnType<typeof gatewayFile>, models: unknown[]) => ({
  ...base,
  providers: [
    ...base.providers,
    {
      name: 'azure',
      type: 'openai',
      baseUrl: base.providers[0]!.baseUrl!.replace(/\/v1$/, ''),
      apiKey: 'az-secret',
      azure: { apiVersion: '2024-10-21' },
    },
  ],
  models: [...base.models, ...models],
});

/** A completion model `model_id` served by the Azure deployment `gpt-deployment`, at 1 USD a million tokens. */
export const azureGpt = (model_id: string, more: Record<string, unknown> = {}) =>
  modelEntry(
    model_id,
    'completion',
    { provider: 'azure', model: 'gpt-deployment' },
    { input_per_million: 1, output_per_million: 1 },
    more,
  );
