import type { Logger } from '@platform/kernel';
import type { ModelFileEntry } from '../gateway-file';
import type { ProviderAdapterPort } from '../inference/provider-port';
import { hasEndpoint } from '../providers/endpoints';
import { type RequestShape, requestShapeOf } from '../providers/request-shape';
import type { CatalogueCollections, ProviderDoc } from './catalogue-store';
import { SERVED_BY } from './deployment-endpoints';
import { boundedPricing, deploymentsOf, type PlatformDefaults, type ProviderConfig } from './model-entry';
import type { SecretBox } from './secret-box';

/** A deployment's cooldown on this instance (inference/deployments.ts): kept across catalogue reloads. */
export interface DeploymentHealth {
  /** epoch ms until which the deployment is cooling down after a failure; 0: not cooling */
  coolUntil: number;
}

/**
 * A catalogue model as requests use it: the entry with the adapter of the provider serving it. A model
 * of several `deployments` is one such object per deployment (each with that deployment's
 * `provider_config`, adapter and provider name), sharing one `pool`; the catalogue answers the first
 * for the model, and a request picks the deployment it calls from the pool.
 */
export interface CatalogueModel extends Omit<ModelFileEntry, 'enabled' | 'provider_config'> {
  enabled: boolean;
  /** this deployment's provider, the provider's own model name and header policy */
  provider_config: ProviderConfig;
  adapter: ProviderAdapterPort;
  providerName: string;
  /** this deployment's share of the model's requests, relative to its pool's */
  weight: number;
  health: DeploymentHealth;
  /** every deployment of the model, this one included (a model of one provider_config: itself alone) */
  pool: readonly CatalogueModel[];
  /** this deployment's renamed and excluded request members, when it has any (decision 0119) */
  requestShape?: RequestShape;
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
  /** each deployment's cooldown by model, provider and provider model: a reload keeps what it still serves */
  private health = new Map<string, DeploymentHealth>();

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
    const adapters = new Map<string, { adapter: ProviderAdapterPort; provider: ProviderDoc }>();
    for (const p of providers) {
      let apiKey: string | undefined;
      try {
        apiKey = p.apiKeySealed ? this.deps.box.open(p.apiKeySealed) : undefined;
      } catch (err) {
        // sealed under another LLM_GATEWAY_ENCRYPTION_KEY (a secret changed, a store restored from elsewhere): this provider
        // cannot be called, every other one still can; its models are left out below, each logged
        this.deps.logger.error(
          { err, provider: p._id },
          'provider left out: its key cannot be opened with this LLM_GATEWAY_ENCRYPTION_KEY; set the key again (PUT /v1/providers)',
        );
        continue;
      }
      adapters.set(p._id, {
        provider: p,
        adapter: this.deps.createAdapter({
          name: p._id,
          type: p.type,
          baseUrl: p.baseUrl,
          apiKey,
          headers: p.headers,
          azure: p.azure,
          restricted: p.restricted === true,
        }),
      });
    }
    const next = new Map<string, CatalogueModel>();
    const health = new Map<string, DeploymentHealth>();
    for (const { _id, updatedAt: _u, source: _s, revision: _r, ...m } of models) {
      const pool: CatalogueModel[] = [];
      for (const { weight, ...config } of deploymentsOf(m)) {
        const found = adapters.get(config.provider);
        if (!found) {
          this.deps.logger.error({ model: _id, provider: config.provider }, 'model names no known provider');
          continue;
        }
        // written before the catalogue checked endpoints (decision 0105), or by a race with a provider's change
        if (!hasEndpoint(found.provider, SERVED_BY[m.type])) {
          this.deps.logger.error(
            { model: _id, provider: config.provider, endpoint: SERVED_BY[m.type] },
            'deployment left out: its provider has not the endpoint its model needs',
          );
          continue;
        }
        const adapter = found.adapter;
        const key = `${_id}\n${config.provider}\n${config.model}`;
        const kept = this.health.get(key) ?? { coolUntil: 0 };
        health.set(key, kept);
        pool.push({
          ...m,
          model_id: _id,
          enabled: m.enabled !== false,
          pricing: boundedPricing(m.pricing),
          provider_config: config,
          adapter,
          providerName: adapter.name,
          weight: weight ?? 1,
          health: kept,
          pool,
          requestShape: requestShapeOf(config),
        });
      }
      if (pool[0]) next.set(_id, pool[0]);
    }
    this.models = next;
    this.health = health;
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
