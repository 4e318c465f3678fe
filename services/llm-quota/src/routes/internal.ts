import { ORG_SLUG_PATTERN } from '@platform/contracts';
import { InvalidInput, NotFound, parseInput, requireInternalSecret } from '@platform/kernel';

export { INTERNAL_SECRET_HEADER } from '@platform/kernel';

import type { Router } from 'express';
import { z } from 'zod';
import type { RouteDeps } from './deps';
import { AssignPlanSchema } from './schemas';
import { settingsView } from './settings';

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

  router.put('/internal/orgs/:orgSlug/plan', guard, async (req, res) => {
    const orgSlug = parseInput(OrgSlugParam, req.params.orgSlug, 'orgSlug');
    const { plan } = parseInput(AssignPlanSchema, req.body ?? {});
    if (!Object.hasOwn(deps.catalog, plan)) {
      throw new InvalidInput(`No plan named ${plan}`, {
        details: {
          issues: [{ field: 'plan', message: `known plans: ${Object.keys(deps.catalog).join(', ')}` }],
        },
      });
    }
    const updated = await deps.settings.assignPlan(orgSlug, plan, 'operator');
    deps.logger.info({ orgSlug, plan }, 'plan assigned by an operator');
    res.json(settingsView(updated));
  });
}
