import type { Logger } from '@platform/kernel';
import type { ModelFileEntry } from '../gateway-file';
import type { ProviderAdapterPort } from '../inference/provider-port';
import type { CatalogueCollections, ProviderDoc } from './catalogue-store';
import type { PlatformDefaults } from './model-entry';
import type { SecretBox } from './secret-box';

/** A catalogue model with its provider's adapter, as requests use it. */
export interface CatalogueModel extends Omit<ModelFileEntry, 'enabled'> {
  enabled: boolean;
  adapter: ProviderAdapterPort;
  providerName: string;
}

/** Builds an adapter from a stored provider (key already opened); the provider layer's factory. */
export type AdapterFactory = (spec: {
  name: string;
  type: ProviderDoc['type'];
  baseUrl?: string;
  apiKey?: string;
  headers?: Record<string, string>;
  azure?: { apiVersion: string };
  restricted?: boolean;
}) => ProviderAdapterPort;

/**
 * The model catalogue every request reads: an in-memory snapshot of the stored providers and models,
 * replaced as a whole by `reload()` (at start, and on `llm.catalogue.updated` from any instance), so
 * the hot path never touches the store.
 */
export class Catalogue {
  private models = new Map<string, CatalogueModel>();

  constructor(
    private readonly deps: {
      collections: CatalogueCollections;
      box: SecretBox;
      createAdapter: AdapterFactory;
      logger: Logger;
      /** the platform's default model per concern (the gateway file's `defaults`) */
      defaults?: PlatformDefaults;
    },
  ) {}

  async reload(): Promise<void> {
    const [providers, models] = await Promise.all([
      this.deps.collections.providers.find({}),
      this.deps.collections.models.find({}),
    ]);
    const adapters = new Map<string, ProviderAdapterPort>();
    for (const p of providers) {
      adapters.set(
        p._id,
        this.deps.createAdapter({
          name: p._id,
          type: p.type,
          baseUrl: p.baseUrl,
          apiKey: p.apiKeySealed ? this.deps.box.open(p.apiKeySealed) : undefined,
          headers: p.headers,
          azure: p.azure,
          restricted: p.restricted === true,
        }),
      );
    }
    const next = new Map<string, CatalogueModel>();
    for (const { _id, updatedAt: _u, source: _s, revision: _r, ...m } of models) {
      const adapter = adapters.get(m.provider_config.provider);
      if (!adapter) {
        this.deps.logger.error(
          { model: _id, provider: m.provider_config.provider },
          'model names no known provider',
        );
        continue;
      }
      next.set(_id, {
        ...m,
        model_id: _id,
        enabled: m.enabled !== false,
        adapter,
        providerName: adapter.name,
      });
    }
    this.models = next;
  }

  /** an enabled model by id, or undefined */
  get(modelId: string): CatalogueModel | undefined {
    const m = this.models.get(modelId);
    return m?.enabled ? m : undefined;
  }

  /** every model, disabled ones included, by id (catalogue administration) */
  all(): CatalogueModel[] {
    return [...this.models.values()].sort((a, b) => a.model_id.localeCompare(b.model_id));
  }

  /** The platform's default of a concern (the gateway file's `defaults`), when that model is enabled. */
  platformDefault(concern: keyof PlatformDefaults): string | undefined {
    const named = this.deps.defaults?.[concern];
    return named && this.get(named) ? named : undefined;
  }

  list(): CatalogueModel[] {
    return [...this.models.values()]
      .filter((m) => m.enabled)
      .sort((a, b) => a.model_id.localeCompare(b.model_id));
  }
}
