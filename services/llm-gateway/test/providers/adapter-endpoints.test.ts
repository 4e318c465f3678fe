import {
  createProviderAdapter,
  PROVIDER_ENDPOINTS,
  type ProviderAdapter,
  type ProviderEndpoint,
  type ProviderKind,
  type ProviderSpec,
  ProviderUnsupportedError,
} from '../../src/providers';

/**
 * The table of endpoints per kind of provider (decision 0105) is what the catalogue checks models against: each
 * adapter has exactly the endpoints the table gives its kind, so a model the catalogue takes can be served.
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

const call = { model: 'm', headers: {}, timeoutMs: 1_000, signal: new AbortController().signal };

/** whether the adapter serves the endpoint: an optional method present, or `embeddings` not refused outright */
async function serves(adapter: ProviderAdapter, endpoint: ProviderEndpoint): Promise<boolean> {
  switch (endpoint) {
    case 'chat':
      return typeof adapter.chat === 'function' && typeof adapter.chatStream === 'function';
    case 'completions':
      return typeof adapter.completions === 'function' && typeof adapter.completionsStream === 'function';
    case 'embeddings':
      return adapter.embeddings({ model: 'm', input: 'hi' }, call).then(
        () => true,
        (err) => !(err instanceof ProviderUnsupportedError),
      );
    default:
      return typeof adapter[endpoint] === 'function';
  }
}

describe.each(Object.keys(specs) as ProviderKind[])('the %s adapter', (kind) => {
  it('has exactly the endpoints the table gives its kind', async () => {
    const adapter = createProviderAdapter(specs[kind]);
    const all: ProviderEndpoint[] = [
      'chat',
      'completions',
      'embeddings',
      'rerank',
      'images',
      'transcriptions',
      'translations',
      'speech',
    ];
    const found: ProviderEndpoint[] = [];
    for (const endpoint of all) if (await serves(adapter, endpoint)) found.push(endpoint);
    expect(found).toEqual(all.filter((e) => PROVIDER_ENDPOINTS[kind].includes(e)));
  });
});

it("text completions (decision 0115) are OpenAI's, Azure's and the mock's, not Anthropic's", () => {
  const kinds = (Object.keys(specs) as ProviderKind[]).filter((k) =>
    PROVIDER_ENDPOINTS[k].includes('completions'),
  );
  expect(kinds).toEqual(['openai', 'azure-openai', 'mock']);
});
