import { ORG_SLUG_PATTERN } from '@platform/contracts';
import { InvalidInput, jsonBody, NotFound, parseInput, requireInternalSecret } from '@platform/kernel';

export { INTERNAL_SECRET_HEADER } from '@platform/kernel';

import type { Router } from 'express';
import { z } from 'zod';
import { NO_GOVERNANCE } from '../data/settings-repo';
import { microsToCost } from '../domain/gauges';
import { readCounters } from '../domain/usage-report';
import { counterId, windowStart } from '../domain/windows';
import type { RouteDeps } from './deps';
import { AssignPlanSchema } from './schemas';
import { governanceView, settingsView } from './settings';

const OrgSlugParam = z.string().regex(ORG_SLUG_PATTERN, 'not an organization slug');

/**
 * The operators' API (internal, never exposed by the edge; guarded by PLATFORM_INTERNAL_SECRET):
 * the plan catalogue, and the plan of an organization.
 */
export function mountInternalRoutes(router: Router, deps: RouteDeps): void {
  const guard = requireInternalSecret(deps.config.PLATFORM_INTERNAL_SECRET);

  router.get('/internal/plans', guard, (_req, res) => {
    res.json({ default: deps.config.LLM_QUOTA_DEFAULT_PLAN, plans: deps.catalog });
  });

  router.get('/internal/orgs/:orgSlug/quota-settings', guard, async (req, res) => {
    const orgSlug = parseInput(OrgSlugParam, req.params.orgSlug, 'orgSlug');
    const existing = await deps.settings.find(orgSlug);
    if (!existing) {
      throw new NotFound(`llm-quota has not seen organization ${orgSlug} yet: the default plan applies`);
    }
    res.json(settingsView(existing));
  });

  // The LLM gateway's read path: what it enforces for an organization before calling a provider (its
  // policy, plan limits, per-user quotas and model governance) and the month's counted usage, which
  // the gateway takes as a floor under its own counters. Seen for the first time = default plan.
  router.get('/internal/orgs/:orgSlug/gateway-settings', guard, async (req, res) => {
    const orgSlug = parseInput(OrgSlugParam, req.params.orgSlug, 'orgSlug');
    const settings = await deps.settings.get(orgSlug);
    const { name, plan } = deps.planOf(settings);
    const now = deps.clock.now();
    const monthStart = windowStart('month', now);
    const monthId = counterId({ orgSlug }, 'month', monthStart);
    // the month of every organization API key with a budget: a floor under the gateway's own key counters
    const budgeted = Object.entries(settings.org_user_quotas.by_api_key)
      .filter(([, quota]) => quota.monthly_tokens !== undefined || quota.monthly_cost !== undefined)
      .map(([apiKeyId]) => [apiKeyId, counterId({ orgSlug, apiKeyId }, 'month', monthStart)] as const);
    const counters = await readCounters(deps.collections, [monthId, ...budgeted.map(([, id]) => id)]);
    const month = counters.get(monthId);
    res.setHeader('cache-control', 'no-store');
    res.json({
      orgSlug,
      plan: { name, currency: plan.currency },
      policy: settings.policy,
      limits: plan.limits,
      per_user_defaults: plan.per_user_defaults,
      org_user_quotas: settings.org_user_quotas,
      models: governanceView(settings.models ?? NO_GOVERNANCE),
      month: {
        start: monthStart.toISOString(),
        tokens: month?.tokens ?? 0,
        cost: month ? microsToCost(month.cost_micros) : 0,
      },
      api_key_months: Object.fromEntries(
        budgeted.map(([apiKeyId, id]) => {
          const counted = counters.get(id);
          return [
            apiKeyId,
            { tokens: counted?.tokens ?? 0, cost: counted ? microsToCost(counted.cost_micros) : 0 },
          ];
        }),
      ),
    });
  });

  router.put('/internal/orgs/:orgSlug/plan', guard, async (req, res) => {
    const orgSlug = parseInput(OrgSlugParam, req.params.orgSlug, 'orgSlug');
    const { plan } = parseInput(AssignPlanSchema, jsonBody(req) ?? {});
    if (!Object.hasOwn(deps.catalog, plan)) {
      throw new InvalidInput(`No plan named ${plan}`, {
        details: {
          issues: [{ field: 'plan', message: `known plans: ${Object.keys(deps.catalog).join(', ')}` }],
        },
      });
    }
    const updated = await deps.settings.assignPlan(orgSlug, plan, 'operator');
    deps.logger.info({ orgSlug, plan }, 'plan assigned by an operator');
    await deps.settingsChanged(orgSlug);
    res.json(settingsView(updated));
  });
}
