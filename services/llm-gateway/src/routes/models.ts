import type { Router } from 'express';
import type { CatalogueModel } from '../catalogue/catalogue';
import { modelNotFound } from '../inference/errors';
import { authorizeInference, type GatewayContext } from '../inference/gateway-context';
import { isAllowed } from '../inference/governance';

/** A catalogue model as callers see it (OpenAI's model object plus the gateway's facts; no provider secrets). */
export const modelView = (m: CatalogueModel, created: number) => ({
  id: m.model_id,
  object: 'model' as const,
  created,
  owned_by: m.providerName,
  type: m.type,
  pricing: m.pricing,
  ...(m.supported_dimensions ? { supported_dimensions: m.supported_dimensions } : {}),
});

/** `GET /v1/models` and `/v1/models/:id`: the models the active organization may use (`models:read`). */
export function mountModels(router: Router, ctx: GatewayContext): void {
  const created = Math.floor(ctx.clock.now().getTime() / 1000);
  router.get('/v1/models', async (req, res) => {
    const { orgSlug } = authorizeInference(req);
    const settings = await ctx.orgSettings.get(orgSlug);
    const data = ctx.catalogue
      .list()
      .filter((m) => isAllowed(m.model_id, settings))
      .map((m) => modelView(m, created));
    res.json({ object: 'list', data });
  });

  // `/v1/models/{id}`: ids hold slashes (`mock/chat`); the SDKs send them encoded (`mock%2Fchat`),
  // and the unencoded form is accepted too.
  router.get('/v1/models/*id', async (req, res) => {
    const { orgSlug } = authorizeInference(req);
    const id = (req.params as { id: string[] }).id.join('/');
    const settings = await ctx.orgSettings.get(orgSlug);
    const model = ctx.catalogue.get(id);
    if (!model || !isAllowed(id, settings)) throw modelNotFound(id);
    res.json(modelView(model, created));
  });
}
