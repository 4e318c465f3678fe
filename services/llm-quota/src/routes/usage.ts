import { parseInput } from '@platform/kernel';
import type { Router } from 'express';
import { z } from 'zod';
import { authorizeOrgRequest, READ_PERMISSION } from '../domain/authorize';
import { buildUsageReport, countersToRead, readCounters } from '../domain/usage-report';
import type { RouteDeps } from './deps';

/**
 * The report takes no parameter: it is always the current minute and month. One sent (`?month=2025-01`, `?from=`)
 * is refused rather than answered with the current figures as if they were the ones asked for.
 */
const UsageQuerySchema = z.strictObject(
  {},
  {
    error: (issue) =>
      issue.code === 'unrecognized_keys'
        ? `takes no parameter (${issue.keys.join(', ')}): it reports the current minute and month; a past month by user or key: GET /v1/quotas/usage/breakdown?by=user|api_key&month=YYYY-MM`
        : undefined,
  },
);

/**
 * `GET /v1/quotas/usage` (spec 4.1): the active organization's enforced limits and live usage. It
 * reads the organization's settings and at most six counters, each by primary key.
 */
export function mountUsageRoute(router: Router, deps: RouteDeps): void {
  router.get('/v1/quotas/usage', async (req, res) => {
    const { principal, org } = authorizeOrgRequest(req.principal, READ_PERMISSION);
    parseInput(UsageQuerySchema, req.query, 'query');
    const now = deps.clock.now();
    const settings = await deps.settings.get(org.slug);
    const userId = principal.user.id;
    const apiKeyId = principal.credential.kind === 'org_api_key' ? principal.credential.id : null;
    const counters = await readCounters(
      deps.collections,
      countersToRead(org.slug, now, { userId, apiKeyId }),
    );
    const report = buildUsageReport(
      {
        settings,
        plan: deps.planOf(settings),
        now,
        user: userId === null ? null : { id: userId, role: org.role.slug ?? null },
        apiKeyId,
      },
      counters,
    );
    res.setHeader('cache-control', 'no-store');
    res.json(report);
  });
}
