import { parseInput } from '@platform/kernel';
import type { Router } from 'express';
import { z } from 'zod';
import { authorizeOrgRequest, MANAGE_PERMISSION } from '../domain/authorize';
import { microsToCost } from '../domain/gauges';
import { monthStart, windowLabel } from '../domain/windows';
import type { RouteDeps } from './deps';

export const BreakdownQuerySchema = z
  .object({
    by: z
      .enum(['user', 'api_key'])
      .meta({ description: 'whose usage: each user, or each organization API key, of the organization' }),
    month: z
      .string()
      .regex(/^\d{4}-(0[1-9]|1[0-2])$/, 'a UTC month as YYYY-MM')
      .optional()
      .meta({ description: 'the UTC month (YYYY-MM); the current one by default' }),
    limit: z.coerce
      .number()
      .int()
      .min(1)
      .max(1000)
      .default(100)
      .meta({ description: 'items per page, 1-1000 (100 by default)' }),
    after: z
      .string()
      .min(1)
      .max(200)
      .optional()
      .meta({ description: "the previous page's `next_after`: items after this id" }),
  })
  .strict();

// published open, as every response object (spec 9.3: a later version may add fields)
const BreakdownItemSchema = z.looseObject({
  id: z.string().meta({ description: 'the user id, or the organization API key `_id`' }),
  requests: z.number().int(),
  tokens: z.number().int(),
  prompt_tokens: z.number().int(),
  completion_tokens: z.number().int(),
  cost: z.number().meta({ description: 'in the plan currency' }),
  last_request_at: z.iso.datetime(),
});

export const BreakdownResponseSchema = z
  .looseObject({
    orgSlug: z.string(),
    month: z.string().meta({ description: 'YYYY-MM (UTC)' }),
    by: z.enum(['user', 'api_key']),
    currency: z.string(),
    items: z
      .array(BreakdownItemSchema)
      .meta({ description: 'by id; a user or key with no request that month is absent' }),
    next_after: z
      .string()
      .nullable()
      .meta({ description: 'the `after` of the next page; null on the last one' }),
  })
  .meta({ id: 'QuotaUsageBreakdown' });
type BreakdownResponse = z.infer<typeof BreakdownResponseSchema>;

/** the counter id part of a scope kind, as `counterId` writes it */
const SCOPE_TAG = { user: 'user', api_key: 'key' } as const;

/**
 * `GET /v1/quotas/usage/breakdown`: the month's usage of each user or organization API key of the active
 * organization, as llm-quota counted it (chargeback: who used what). `quotas:manage`, since it shows others' usage.
 * One range read of the month counters by id, a page at a time.
 */
export function mountBreakdownRoute(router: Router, deps: RouteDeps): void {
  router.get('/v1/quotas/usage/breakdown', async (req, res) => {
    const { org } = authorizeOrgRequest(req.principal, MANAGE_PERMISSION);
    const q = parseInput(BreakdownQuerySchema, req.query, 'query');
    const month = q.month ?? windowLabel('month', monthStart(deps.clock.now()));
    // counterId: `month|2025-03|key|<org>|<id>`, parts URI-encoded; ids of one scope kind sort together
    const prefix = `month|${month}|${SCOPE_TAG[q.by]}|${encodeURIComponent(org.slug)}|`;
    const docs = await deps.collections.counters.find(
      {
        _id: {
          ...(q.after === undefined ? { $gte: prefix } : { $gt: prefix + encodeURIComponent(q.after) }),
          $lt: `${prefix}\uffff`,
        },
      },
      { sort: { _id: 1 }, limit: q.limit + 1 },
    );
    const page = docs.slice(0, q.limit);
    const settings = await deps.settings.get(org.slug);
    const body: BreakdownResponse = {
      orgSlug: org.slug,
      month,
      by: q.by,
      currency: deps.planOf(settings).plan.currency,
      items: page.map((doc) => ({
        id: decodeURIComponent(doc._id.slice(prefix.length)),
        requests: doc.requests,
        tokens: doc.tokens,
        prompt_tokens: doc.prompt_tokens,
        completion_tokens: doc.completion_tokens,
        cost: microsToCost(doc.cost_micros),
        last_request_at: new Date(doc.lastRequestAt).toISOString(),
      })),
      next_after:
        docs.length > q.limit ? decodeURIComponent(page[page.length - 1]!._id.slice(prefix.length)) : null,
    };
    res.setHeader('cache-control', 'no-store');
    res.json(body);
  });
}
