import type { Catalogue, CatalogueModel } from '../catalogue/catalogue';
import type { OrgGatewaySettings } from '../quota/org-settings';
import { resolveModel } from './governance';

describe('routing model "auto" (decision 0120), in process', () => {
  const model = (model_id: string, input: number) =>
    ({
      model_id,
      type: 'completion',
      enabled: true,
      pricing: { input_per_million: input, output_per_million: input },
    }) as CatalogueModel;
  const models = [model('big', 10), model('small', 1)];
  const catalogue = {
    get: (id: string) => models.find((m) => m.model_id === id),
    list: () => models,
    platformDefault: () => undefined,
  } as unknown as Catalogue;
  const settings = (routing: unknown) =>
    ({
      orgSlug: 'acme',
      policy: 'hard_block',
      models: { allowed: null, defaults: { completions: 'big' }, downgrade: {}, routing },
    }) as unknown as OrgGatewaySettings;
  const traits = { messages: 1, promptTokens: 5, needs: [] };
  const routed = (routing: unknown) =>
    resolveModel('auto', 'completion', settings(routing), catalogue, { apiKeyId: null, traits }).model
      .model_id;

  it('takes the cheapest for cost_optimized, and the default for a strategy it does not know (a newer llm-quota)', () => {
    expect(routed({ strategy: 'cost_optimized' })).toBe('small');
    expect(routed({ strategy: 'llm_classifier' })).toBe('big');
    expect(routed(null)).toBe('big');
  });
});
