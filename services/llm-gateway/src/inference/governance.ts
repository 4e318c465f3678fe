import type { Principal } from '@platform/contracts';
import type { Catalogue, CatalogueModel } from '../catalogue/catalogue';
import type { OrgGatewaySettings } from '../quota/org-settings';
import { invalidBody, modelNotAllowed, modelNotFound } from './errors';

export type ModelType = CatalogueModel['type'];

export interface ResolvedModel {
  model: CatalogueModel;
  /** the model the caller asked for, when governance replaced it */
  downgradedFrom: string | null;
}

export const DEFAULT_KEY = {
  completion: 'completions',
  embeddings: 'embeddings',
  image_generation: 'image_generation',
  audio_transcription: 'audio_transcription',
  audio_speech: 'audio_speech',
} as const;

/**
 * Which catalogue model serves a request, by the organization's governance: `model` omitted or
 * `"default"` uses the org's default of that type; an unknown model is MODEL_NOT_FOUND; a model
 * outside `allowed` (or, for an organization API key, outside its own list) is MODEL_NOT_ALLOWED under
 * `hard_block`, and under `soft_downgrade` goes to its mapped model, else the org's default, when that
 * one is allowed and `serves` the request. Every model named on the way (asked, default, downgrade) is
 * looked up by `usableModel`: one restricted to other organizations is unknown.
 */
export function resolveModel(
  requested: string | undefined,
  type: ModelType,
  settings: OrgGatewaySettings,
  catalogue: Catalogue,
  /** the calling organization API key (`apiKeyIdOf`), null for other credentials */
  apiKeyId: string | null,
  /** whether a downgrade target can serve the request (the route's endpoint): one that cannot is passed over */
  serves: (model: CatalogueModel) => boolean = () => true,
): ResolvedModel {
  const gov = settings.models;
  const byDefault = requested === undefined || requested === '' || requested === 'default';
  const id = byDefault
    ? (gov.defaults[DEFAULT_KEY[type]] ?? platformDefault(type, settings, catalogue))
    : requested;
  if (!id) {
    throw invalidBody(
      `model is required: the organization has no default ${DEFAULT_KEY[type]} model (PATCH /v1/quotas/settings models.defaults)`,
      [{ field: 'model', message: 'required' }],
    );
  }
  const model = usableModel(id, settings, catalogue);
  // a default the organization set that cannot serve is its administrator's to fix, not the caller's body
  const orgDefault = byDefault && gov.defaults[DEFAULT_KEY[type]] === id;
  const fixIt = `change models.defaults.${DEFAULT_KEY[type]} with PATCH /v1/quotas/settings`;
  if (!model) {
    if (orgDefault)
      throw modelNotFound(
        id,
        `The organization's default ${DEFAULT_KEY[type]} model ${id} is not in the catalogue: ${fixIt}`,
      );
    throw modelNotFound(id);
  }
  if (model.type !== type && orgDefault) {
    throw invalidBody(
      `The organization's default ${DEFAULT_KEY[type]} model ${id} is a model of type ${model.type}: ${fixIt}`,
      [{ field: `models.defaults.${DEFAULT_KEY[type]}`, message: `a ${type} model is needed` }],
    );
  }
  if (model.type !== type) {
    throw invalidBody(`${id} is a model of type ${model.type}`, [
      { field: 'model', message: `${/^[aeiou]/.test(type) ? 'an' : 'a'} ${type} model is needed` },
    ]);
  }
  if (isAllowed(id, settings, apiKeyId)) return { model, downgradedFrom: null };
  if (settings.policy === 'soft_downgrade') {
    for (const candidate of [gov.downgrade[id], gov.defaults[DEFAULT_KEY[type]]]) {
      if (!candidate || candidate === id || !isAllowed(candidate, settings, apiKeyId)) continue;
      const target = usableModel(candidate, settings, catalogue);
      if (target && target.type === type && serves(target)) return { model: target, downgradedFrom: id };
    }
  }
  throw modelNotAllowed(id, isAllowed(id, settings, null) ? 'api_key' : 'org');
}

/** a model restricted to some organizations (`org_slugs`) does not exist for the others */
export const visibleTo = (model: { org_slugs?: string[] }, orgSlug: string): boolean =>
  model.org_slugs === undefined || model.org_slugs.includes(orgSlug);

/** An enabled catalogue model the organization can see; one restricted to others is as unknown as a missing one. */
function usableModel(
  id: string,
  settings: OrgGatewaySettings,
  catalogue: Catalogue,
): CatalogueModel | undefined {
  const model = catalogue.get(id);
  return model && visibleTo(model, settings.orgSlug) ? model : undefined;
}

/** The platform's default of a type, when the organization can see it: otherwise it has none, as for an unknown one. */
function platformDefault(
  type: ModelType,
  settings: OrgGatewaySettings,
  catalogue: Catalogue,
): string | undefined {
  const id = catalogue.platformDefault(DEFAULT_KEY[type]);
  return id && usableModel(id, settings, catalogue) ? id : undefined;
}

/** The organization API key a request comes with (its own allowed models narrow the organization's), else null. */
export const apiKeyIdOf = (principal: Principal): string | null =>
  principal.credential.kind === 'org_api_key' ? principal.credential.id : null;

/**
 * Whether the organization allows a model (`allowed`, null = every model) and, for an organization API key with an
 * entry in `by_api_key`, whether the key's own list has it too (decision 0118).
 */
export function isAllowed(id: string, settings: OrgGatewaySettings, apiKeyId: string | null): boolean {
  const { allowed, by_api_key } = settings.models;
  if (allowed !== null && !allowed.includes(id)) return false;
  if (apiKeyId === null || !by_api_key || !Object.hasOwn(by_api_key, apiKeyId)) return true;
  return by_api_key[apiKeyId]!.includes(id);
}

/**
 * `soft_downgrade` over a monthly budget: the mapped model, when there is one and it is usable (enabled,
 * allowed, of the same type, not restricted to other organizations, and able to serve the request).
 */
export function budgetDowngrade(
  from: CatalogueModel,
  settings: OrgGatewaySettings,
  catalogue: Catalogue,
  apiKeyId: string | null,
  serves: (model: CatalogueModel) => boolean = () => true,
): CatalogueModel | null {
  if (settings.policy !== 'soft_downgrade') return null;
  const to = settings.models.downgrade[from.model_id];
  if (!to || to === from.model_id || !isAllowed(to, settings, apiKeyId)) return null;
  const target = usableModel(to, settings, catalogue);
  return target && target.type === from.type && serves(target) ? target : null;
}
