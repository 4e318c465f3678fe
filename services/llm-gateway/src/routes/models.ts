import { Forbidden, parseInput } from '@platform/kernel';
import type { Request, Router } from 'express';
import { z } from 'zod';
import { catalogueAdmin } from '../catalogue/access';
import type { CatalogueModel } from '../catalogue/catalogue';
import { MODEL_TYPES } from '../catalogue/model-entry';
import { modelNotFound } from '../inference/errors';
import { authorizeInference, type GatewayContext } from '../inference/gateway-context';
import { apiKeyIdOf, isAllowed, visibleTo } from '../inference/governance';

/**
 * A catalogue model as callers see it: OpenAI's model object (`id`, `object`, `created`, `owned_by`)
 * plus the entry (`owned_by`: its provider, the first deployment's for a model of several).
 * `provider_config` or `deployments` (which providers and models serve it, header policy), `org_slugs` (which
 * other organizations a restricted model is offered to) and `failover` (which may name a model restricted to
 * others, decision 0105) are shown to platform administrators only; provider keys are never shown to anyone.
 */
export const modelView = (m: CatalogueModel, created: number, admin = false) => {
  const {
    adapter: _a,
    providerName,
    provider_config,
    deployments,
    org_slugs,
    failover,
    weight: _w,
    health: _h,
    pool: _p,
    ...entry
  } = m;
  const operator = {
    ...(deployments ? { deployments } : { provider_config }),
    ...(org_slugs ? { org_slugs } : {}),
    ...(failover ? { failover } : {}),
  };
  return {
    id: m.model_id,
    object: 'model' as const,
    created,
    owned_by: providerName,
    ...entry,
    ...(admin ? operator : {}),
  };
};

const csv = z
  .string()
  .transform((v) =>
    v
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean),
  )
  .optional();
const bool = z
  .enum(['true', 'false'])
  .transform((v) => v === 'true')
  .optional();

export const ModelListQuerySchema = z
  .object({
    type: z.enum(MODEL_TYPES).optional(),
    enabled: bool,
    model_ids: csv.meta({ description: 'comma-separated ids' }),
    tags: csv.meta({ description: 'comma-separated; a model with any of them matches' }),
    visible_only: bool.meta({ description: 'leave out models whose `display.hidden` is true' }),
    brand: z.string().optional(),
    search: z.string().max(200).optional().meta({ description: 'case-insensitive, over id, name and brand' }),
    capability: csv.meta({ description: 'comma-separated; a model must have every one' }),
    page: z.coerce.number().int().min(0).default(0).meta({ description: 'zero-based' }),
    limit: z.coerce.number().int().min(1).max(100).default(100),
    orgSlug: z.string().optional().meta({
      description: 'platform administrators: an organization view, or `all` for the whole catalogue',
    }),
  })
  .strict();
type ListQuery = z.infer<typeof ModelListQuerySchema>;

function matches(m: CatalogueModel, q: ListQuery): boolean {
  if (q.type && m.type !== q.type) return false;
  if (q.enabled !== undefined && m.enabled !== q.enabled) return false;
  if (q.model_ids && !q.model_ids.includes(m.model_id)) return false;
  if (q.tags && !q.tags.some((t) => m.tags?.includes(t))) return false;
  if (q.visible_only && m.display?.hidden === true) return false;
  if (q.brand && (m.display?.brand ?? '').toLowerCase() !== q.brand.toLowerCase()) return false;
  if (q.capability && !q.capability.every((c) => m.capabilities?.[c] === true)) return false;
  if (q.search) {
    const needle = q.search.toLowerCase();
    const hay = [m.model_id, m.display?.name ?? '', m.display?.brand ?? ''].join('\n').toLowerCase();
    if (!hay.includes(needle)) return false;
  }
  return true;
}

/**
 * Which models a request sees: its organization's usable models (enabled, offered to the org,
 * allowed by its governance); a platform administrator (or the operator) may ask for another
 * organization's view with `orgSlug=<slug>`, or the whole catalogue, disabled models included,
 * with `orgSlug=all` (the operator's default).
 */
async function viewOf(
  ctx: GatewayContext,
  req: Request,
  orgSlug: string | undefined,
): Promise<{ models: CatalogueModel[]; admin: boolean }> {
  const admin = catalogueAdmin(req, ctx.config.PLATFORM_INTERNAL_SECRET) !== null;
  let slug: string;
  // an organization API key sees the models it may use (decision 0118)
  let apiKeyId: string | null = null;
  if (admin && (orgSlug !== undefined || !req.principal?.session.org)) {
    if (orgSlug === undefined || orgSlug === 'all') return { models: ctx.catalogue.all(), admin };
    slug = orgSlug;
  } else {
    const authorized = authorizeInference(req);
    slug = authorized.orgSlug;
    apiKeyId = apiKeyIdOf(authorized.principal);
    if (orgSlug !== undefined && orgSlug !== slug) {
      throw new Forbidden('Only a platform administrator may see another organization’s models (orgSlug)', {
        error: 'PLATFORM_ADMIN_REQUIRED',
        code: 'PLATFORM_ADMIN_REQUIRED',
      });
    }
  }
  const settings = await ctx.orgSettings.get(slug);
  return {
    models: ctx.catalogue
      .list()
      .filter((m) => visibleTo(m, slug) && isAllowed(m.model_id, settings, apiKeyId)),
    admin,
  };
}

/** `GET /v1/models` (OpenAI list, paged and filtered) and `GET /v1/models/{id}` (ids may hold `/` and `:`). */
export function mountModels(router: Router, ctx: GatewayContext): void {
  const created = Math.floor(ctx.clock.now().getTime() / 1000);
  router.get('/v1/models', async (req, res) => {
    const q = parseInput(ModelListQuerySchema, req.query, 'query');
    const { models, admin } = await viewOf(ctx, req, q.orgSlug);
    const all = models.filter((m) => matches(m, q));
    const data = all.slice(q.page * q.limit, (q.page + 1) * q.limit).map((m) => modelView(m, created, admin));
    res.json({ object: 'list', data, total: all.length, page: q.page, limit: q.limit });
  });

  // `/v1/models/{id}`: ids hold slashes (`mock/chat`); the SDKs send them encoded (`mock%2Fchat`),
  // and the unencoded form is accepted too.
  router.get('/v1/models/*id', async (req, res) => {
    const id = (req.params as { id: string[] }).id.join('/');
    const orgSlug = typeof req.query.orgSlug === 'string' ? req.query.orgSlug : undefined;
    const { models, admin } = await viewOf(ctx, req, orgSlug);
    const model = models.find((m) => m.model_id === id);
    if (!model) throw modelNotFound(id);
    res.json(modelView(model, created, admin));
  });
}
