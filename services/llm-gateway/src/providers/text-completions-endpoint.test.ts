import { createProviderAdapter, PROVIDER_ENDPOINTS, type ProviderKind, type ProviderSpec } from '.';

/**
 * The legacy text completions endpoint (decision 0115) in the one table of endpoints (decision 0105): each adapter
 * has `completions` and `completionsStream` exactly when the table gives its kind the endpoint.
 */
const specs: Record<ProviderKind, ProviderSpec> = {
  openai: { name: 'oai', type: 'openai', baseUrl: 'http://127.0.0.1:9/v1', apiKey: 'k' },
  'azure-openai': {
    name: 'az',
    type: 'openai',
    baseUrl: 'http://127.0.0.1:9',
    apiKey: 'k',
    azure: { apiVersion: '2024-10-21' },
  },
  anthropic: { name: 'ant', type: 'anthropic', baseUrl: 'http://127.0.0.1:9', apiKey: 'k' },
  mock: { name: 'mock', type: 'mock' },
};

describe('the text completions endpoint per kind of provider', () => {
  it('is OpenAI’s, Azure’s and the mock’s, not Anthropic’s', () => {
    const kinds = (Object.keys(specs) as ProviderKind[]).filter((k) =>
      PROVIDER_ENDPOINTS[k].includes('completions'),
    );
    expect(kinds).toEqual(['openai', 'azure-openai', 'mock']);
  });

  it.each(Object.keys(specs) as ProviderKind[])(
    'the %s adapter has it exactly when the table says so',
    (kind) => {
      const adapter = createProviderAdapter(specs[kind]);
      const has = PROVIDER_ENDPOINTS[kind].includes('completions');
      expect([typeof adapter.completions, typeof adapter.completionsStream]).toEqual(
        has ? ['function', 'function'] : ['undefined', 'undefined'],
      );
    },
  );
});
