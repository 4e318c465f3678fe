import type { Principal } from '@platform/contracts';
import type { Catalogue, CatalogueModel } from '../catalogue/catalogue';
import type { OrgGatewaySettings } from '../quota/org-settings';
import { invalidBody, modelNotAllowed, modelNotFound } from './errors';

export type ModelType = CatalogueModel['type'];

export interface ResolvedModel {
  model: CatalogueModel;
  /** the model the caller asked for, when governance replaced it */
  downgradedFrom: string | null;
  /** `model: "auto"` was asked, and the organization's routing chose (decision 0120) */
  routed: boolean;
}

/** The model a request names to have the organization's routing choose (decision 0120). */
export const AUTO_MODEL = 'auto';

/** What routing reads of a completion request (decision 0120). */
export interface RequestTraits {
  /** the messages of the conversation (a text completion: 1) */
  messages: number;
  promptTokens: number;
  /** the capabilities it uses: `vision` (image parts), `tools`, `json_mode` (a JSON `response_format`) */
  needs: readonly string[];
}

/** Who asks and for what, beyond the model: what narrows the models a request may get. */
export interface ModelChoice {
  /** the calling organization API key (`apiKeyIdOf`), null for other credentials */
  apiKeyId: string | null;
  /** whether a model can serve the request (the route's endpoint): a downgrade or route that cannot is passed over */
  serves?: (model: CatalogueModel) => boolean;
  /** the request as routing reads it; without it, `auto` is the default */
  traits?: RequestTraits;
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
  choice: ModelChoice,
): ResolvedModel {
  const { apiKeyId, serves = () => true } = choice;
  const gov = settings.models;
  const auto = requested === AUTO_MODEL && type === 'completion';
  const routed = auto && choice.traits ? routedModel(settings, catalogue, choice, choice.traits) : undefined;
  // `auto` with no routing, or none of whose choices the caller may use: the default, as Prisme.ai's gateway does
  const byDefault =
    requested === undefined || requested === '' || requested === 'default' || (auto && !routed);
  const id = byDefault
    ? (gov.defaults[DEFAULT_KEY[type]] ?? platformDefault(type, settings, catalogue))
    : (routed ?? requested);
  // `auto` names no model either: what it lacks is the organization's routing or default, not the caller's body
  if (!id && auto) {
    const why = !choice.traits
      ? 'on this route it is the default model'
      : gov.routing
        ? "the organization's routing chose no model the caller may use for this request"
        : 'the organization has no routing configured';
    throw invalidBody(
      `model 'auto' has no model to serve it: ${why}, and no default completions model is set (PATCH /v1/quotas/settings models.routing or models.defaults)`,
      [{ field: 'model', message: "'auto' has no routing or default model to serve it" }],
    );
  }
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
  if (isAllowed(id, settings, apiKeyId)) return { model, downgradedFrom: null, routed: auto };
  if (settings.policy === 'soft_downgrade') {
    for (const candidate of [gov.downgrade[id], gov.defaults[DEFAULT_KEY[type]]]) {
      if (!candidate || candidate === id || !isAllowed(candidate, settings, apiKeyId)) continue;
      const target = usableModel(candidate, settings, catalogue);
      if (target && target.type === type && serves(target))
        return { model: target, downgradedFrom: id, routed: auto };
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

/**
 * `model: "auto"` (decision 0120): `rules`, the model of the first rule the request matches (none, or one the caller
 * may not use: the default); `cost_optimized`, the cheapest completion model the caller may use that can serve the
 * request (not hidden, not denying a capability it uses, its context window holding the prompt), by blended price
 * (three input tokens to one output token), ties by id. Undefined: the default serves.
 */
function routedModel(
  settings: OrgGatewaySettings,
  catalogue: Catalogue,
  choice: ModelChoice,
  traits: RequestTraits,
): string | undefined {
  const routing = settings.models.routing;
  if (!routing) return undefined;
  const usable = (m: CatalogueModel) =>
    m.type === 'completion' &&
    visibleTo(m, settings.orgSlug) &&
    isAllowed(m.model_id, settings, choice.apiKeyId) &&
    canServe(m, traits) &&
    (choice.serves?.(m) ?? true);
  if (routing.strategy === 'rules') {
    const rule = (routing.rules ?? []).find((r) => ruleMatches(r, traits));
    const model = rule && catalogue.get(rule.model);
    return model && usable(model) ? model.model_id : undefined;
  }
  // a strategy this gateway does not know (from a newer llm-quota): the default, as with no routing
  if (routing.strategy !== 'cost_optimized') return undefined;
  let best: CatalogueModel | undefined;
  for (const m of catalogue.list()) {
    if (m.display?.hidden || !usable(m)) continue;
    const price = blendedPrice(m);
    if (!best || price < blendedPrice(best)) best = m;
  }
  return best?.model_id;
}

type RoutingRule = NonNullable<NonNullable<OrgGatewaySettings['models']['routing']>['rules']>[number];

function ruleMatches(rule: RoutingRule, traits: RequestTraits): boolean {
  const value = rule.condition === 'messages_count' ? traits.messages : traits.promptTokens;
  switch (rule.operator) {
    case '<':
      return value < rule.threshold;
    case '<=':
      return value <= rule.threshold;
    case '>':
      return value > rule.threshold;
    case '>=':
      return value >= rule.threshold;
    default:
      return value === rule.threshold;
  }
}

/** a model can serve the request unless its catalogue entry denies a capability it uses, or its context is too short */
const canServe = (m: CatalogueModel, traits: RequestTraits): boolean =>
  traits.needs.every((need) => m.capabilities?.[need] !== false) &&
  !(m.limits?.context_window !== undefined && traits.promptTokens > m.limits.context_window);

/** per million tokens, three input tokens to one output token (the usual blended price) */
const blendedPrice = (m: CatalogueModel): number =>
  (3 * m.pricing.input_per_million + m.pricing.output_per_million) / 4;

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
  { apiKeyId, serves = () => true }: ModelChoice,
): CatalogueModel | null {
  if (settings.policy !== 'soft_downgrade') return null;
  const to = settings.models.downgrade[from.model_id];
  if (!to || to === from.model_id || !isAllowed(to, settings, apiKeyId)) return null;
  const target = usableModel(to, settings, catalogue);
  return target && target.type === from.type && serves(target) ? target : null;
}
