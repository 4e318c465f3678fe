import { InvalidInput, jsonBody, PayloadTooLarge, RateLimited } from '@platform/kernel';
import type { RateWindows } from '@platform/store';
import type { Request, Router } from 'express';
import { requireCatalogueAdmin } from '../catalogue/access';
import {
  type Actor,
  BulkReplaceFailed,
  type CatalogueAdmin,
  MAX_BULK_ITEMS,
} from '../catalogue/catalogue-admin';
import type { ProviderAdmin } from '../catalogue/provider-admin';
import type { GatewayContext } from '../inference/gateway-context';
import { requestIdOf } from './client-abort';

/** bulk replaces a consumer may run per hour */
export const BULK_REPLACES_PER_HOUR = 5;

const idOf = (req: Request) => (req.params as { id: string[] }).id.join('/');
const consumerOf = (actor: Actor) => (actor.userId ? `user:${actor.userId}` : 'operator');

/**
 * The catalogue's write routes, for platform administrators and the operator: `POST /v1/models`,
 * `PATCH`/`DELETE /v1/models/{id}` and `PUT /v1/models` (replace the whole catalogue).
 */
export function mountCatalogueAdmin(
  router: Router,
  ctx: GatewayContext,
  deps: { admin: CatalogueAdmin; bulkLimiter: RateWindows },
): void {
  const secret = ctx.config.PLATFORM_INTERNAL_SECRET;

  router.post('/v1/models', async (req, res) => {
    const actor = requireCatalogueAdmin(req, secret);
    const entry = await deps.admin.create(jsonBody(req), actor, requestIdOf(req));
    res.status(201).json(entry);
  });

  router.put('/v1/models', async (req, res) => {
    const actor = requireCatalogueAdmin(req, secret);
    const body = jsonBody(req) as { models?: unknown } | undefined;
    if (!body || typeof body !== 'object' || !Array.isArray(body.models)) {
      throw new InvalidInput('The body must be {"models": [ ...catalogue entries ]}', {
        details: { issues: [{ field: 'models', message: 'an array is required' }] },
      });
    }
    if (body.models.length > MAX_BULK_ITEMS) {
      throw new PayloadTooLarge(
        `At most ${MAX_BULK_ITEMS} models in one replace (${body.models.length} given)`,
        { details: { max_items: MAX_BULK_ITEMS, items: body.models.length } },
      );
    }
    const entries = await deps.admin.validateAll(body.models);
    const window = await deps.bulkLimiter.consume(consumerOf(actor), 1);
    if (window.consumedPoints > BULK_REPLACES_PER_HOUR) {
      throw new RateLimited(
        Math.max(1, Math.ceil(window.msBeforeNext / 1000)),
        `At most ${BULK_REPLACES_PER_HOUR} catalogue replaces per hour`,
        { details: { limit: BULK_REPLACES_PER_HOUR, window: 'hour' } },
      );
    }
    try {
      res.json(await deps.admin.replaceAll(entries, actor, requestIdOf(req)));
    } catch (err) {
      if (!(err instanceof BulkReplaceFailed)) throw err;
      res.status(500).json({
        error: 'BULK_REPLACE_FAILED',
        code: 'BULK_REPLACE_FAILED',
        message: err.message,
        status: 500,
        requestId: requestIdOf(req),
      });
    }
  });

  router.patch('/v1/models/*id', async (req, res) => {
    const actor = requireCatalogueAdmin(req, secret);
    res.json(await deps.admin.update(idOf(req), jsonBody(req), actor, requestIdOf(req)));
  });

  router.delete('/v1/models/*id', async (req, res) => {
    const actor = requireCatalogueAdmin(req, secret);
    await deps.admin.remove(idOf(req), actor, requestIdOf(req));
    res.status(204).end();
  });
}

/** `GET /v1/providers`, `PUT`/`DELETE /v1/providers/{name}`: providers at run time (keys never shown). */
export function mountProviderAdmin(router: Router, ctx: GatewayContext, providers: ProviderAdmin): void {
  const secret = ctx.config.PLATFORM_INTERNAL_SECRET;
  router.get('/v1/providers', async (req, res) => {
    requireCatalogueAdmin(req, secret);
    res.json({ object: 'list', data: await providers.list() });
  });
  router.put('/v1/providers/:name', async (req, res) => {
    const actor = requireCatalogueAdmin(req, secret);
    const { created, provider } = await providers.put(
      String(req.params.name),
      jsonBody(req),
      actor,
      requestIdOf(req),
    );
    res.status(created ? 201 : 200).json(provider);
  });
  router.delete('/v1/providers/:name', async (req, res) => {
    const actor = requireCatalogueAdmin(req, secret);
    await providers.remove(String(req.params.name), actor, requestIdOf(req));
    res.status(204).end();
  });
}
