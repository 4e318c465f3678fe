import type { Logger } from '@platform/kernel';
import { Catalogue } from './catalogue';
import type { CatalogueCollections } from './catalogue-store';
import { SecretBox } from './secret-box';

describe('the catalogue snapshot', () => {
  it('leaves out a provider whose key cannot be opened (sealed under another secret), and serves every other', async () => {
    const box = new SecretBox('current secret');
    const providers = [
      { _id: 'good', type: 'openai', baseUrl: 'http://127.0.0.1:1/v1', apiKeySealed: box.seal('sk-good') },
      {
        _id: 'restored',
        type: 'openai',
        baseUrl: 'http://127.0.0.1:1/v1',
        apiKeySealed: new SecretBox('an older secret').seal('sk-old'),
      },
    ];
    const model = (id: string, provider: string) => ({
      _id: id,
      type: 'completion',
      provider_config: { provider, model: id },
      pricing: { input_per_million: 0, output_per_million: 0 },
    });
    const collections = {
      providers: { find: async () => providers },
      models: { find: async () => [model('good/chat', 'good'), model('restored/chat', 'restored')] },
    } as unknown as CatalogueCollections;
    const errors: string[] = [];
    const logger = { error: (_: unknown, message: string) => errors.push(message) } as unknown as Logger;
    const keys: Array<string | undefined> = [];
    const catalogue = new Catalogue({
      collections,
      box,
      logger,
      createAdapter: (spec) => {
        keys.push(spec.apiKey);
        return { name: spec.name } as never;
      },
    });
    await catalogue.reload();
    expect(catalogue.get('good/chat')?.providerName).toBe('good');
    expect(catalogue.get('restored/chat')).toBeUndefined();
    expect(keys).toEqual(['sk-good']);
    expect(errors[0]).toMatch(/^provider left out: its key cannot be opened/);
  });
});
