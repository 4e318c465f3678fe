import type { Clock } from '@platform/kernel';
import type { Collection, Doc, Store } from '@platform/store';
import type { GatewayFile, ModelFileEntry, ProviderFileEntry } from '../gateway-file';
import { PROVIDER_KEY_PATTERN } from './provider-fields';
import type { SecretBox } from './secret-box';

/** A provider as stored: its key sealed, never returned by any route. */
export interface ProviderDoc extends Doc {
  type: ProviderFileEntry['type'];
  baseUrl?: string;
  apiKeySealed?: string;
  headers?: Record<string, string>;
  azure?: { apiVersion: string };
  /** written by a platform administrator: reaches public addresses only (ProviderDestinations) */
  restricted?: true;
  updatedAt: Date;
}

/** A catalogue model as stored; `_id` is its `model_id`. */
export interface ModelDoc extends Doc, Omit<ModelFileEntry, 'model_id'> {
  updatedAt: Date;
  /** where the entry comes from: the operator's file (replaced at every start) or the API (next issue) */
  source: 'file' | 'api';
  /** replaced at every PATCH, which writes only over the version it read (the store's `updateWithRevision`) */
  revision?: string;
}

export interface CatalogueCollections {
  providers: Collection<ProviderDoc>;
  models: Collection<ModelDoc>;
}

export const catalogueCollections = (store: Store): CatalogueCollections => ({
  providers: store.collection<ProviderDoc>('llm_providers'),
  models: store.collection<ModelDoc>('llm_models'),
});

/**
 * Writes the operator's file into the store at start: each provider and model of the file replaces
 * the stored one of that name. Keys named by `apiKeyEnv` are read from the environment here, once.
 */
export async function seedCatalogue(
  collections: CatalogueCollections,
  file: GatewayFile,
  deps: { box: SecretBox; clock: Clock; env: Record<string, string | undefined> },
): Promise<void> {
  const now = deps.clock.now();
  for (const p of file.providers) {
    // an own variable only: `apiKeyEnv: constructor` must not find Object's
    const key =
      p.apiKey ?? (p.apiKeyEnv && Object.hasOwn(deps.env, p.apiKeyEnv) ? deps.env[p.apiKeyEnv] : undefined);
    if (p.apiKeyEnv && !key)
      throw new Error(`provider ${p.name}: environment variable ${p.apiKeyEnv} is not set`);
    if (p.apiKeyEnv && key && !PROVIDER_KEY_PATTERN.test(key))
      throw new Error(
        `provider ${p.name}: environment variable ${p.apiKeyEnv} holds a space, line break or control character (a key written with its trailing newline?)`,
      );
    const doc: Omit<ProviderDoc, '_id'> = { type: p.type, updatedAt: now };
    if (p.baseUrl) doc.baseUrl = p.baseUrl;
    if (key) doc.apiKeySealed = deps.box.seal(key);
    if (p.headers) doc.headers = p.headers;
    if (p.azure) doc.azure = p.azure;
    await collections.providers.deleteOne({ _id: p.name });
    await collections.providers.insertOne({ _id: p.name, ...doc });
  }
  for (const { model_id, ...entry } of file.models) {
    await collections.models.deleteOne({ _id: model_id });
    await collections.models.insertOne({ _id: model_id, ...entry, source: 'file', updatedAt: now });
  }
}
