import type { Principal } from '@platform/contracts';
import { InvalidInput, jsonBody, parseInput } from '@platform/kernel';
import type { Router } from 'express';
import type { OrgSettingsDoc, StoredModelGovernance } from '../data/collections';
import { NO_GOVERNANCE, TooManyEntries } from '../data/settings-repo';
import { authorizeOrgRequest, MANAGE_PERMISSION } from '../domain/authorize';
import type { RouteDeps } from './deps';
import { type ModelGovernance, SettingsPatchSchema, type SettingsResponse } from './schemas';

export const governanceView = (stored: StoredModelGovernance): ModelGovernance => ({
  allowed: stored.allowed,
  defaults: stored.defaults,
  downgrade: Object.fromEntries(stored.downgrade.map((d) => [d.from, d.to])),
  by_api_key: stored.by_api_key ?? {},
  routing: stored.routing ?? null,
});

export const settingsView = (doc: OrgSettingsDoc): SettingsResponse => ({
  orgSlug: doc._id,
  plan: doc.plan,
  policy: doc.policy,
  org_user_quotas: doc.org_user_quotas,
  models: governanceView(doc.models ?? NO_GOVERNANCE),
  updated_at: new Date(doc.updatedAt).toISOString(),
  updated_by: doc.updatedBy ?? null,
});

/** Who made a change, for the settings' `updated_by`. */
export const actorOf = (principal: Principal): string =>
  principal.user.id !== null
    ? `user:${principal.user.id}`
    : `${principal.credential.kind}:${principal.credential.id}`;

/**
 * The organization administrators' quota settings: `GET` and `PATCH /v1/quotas/settings`, both
 * with the `quotas:manage` permission in the active organization. The plan is not theirs to change
 * (an operator assigns it through the internal API).
 */
export function mountSettingsRoutes(router: Router, deps: RouteDeps): void {
  router.get('/v1/quotas/settings', async (req, res) => {
    const { org } = authorizeOrgRequest(req.principal, MANAGE_PERMISSION);
    res.setHeader('cache-control', 'no-store');
    res.json(settingsView(await deps.settings.get(org.slug)));
  });

  router.patch('/v1/quotas/settings', async (req, res) => {
    const { principal, org } = authorizeOrgRequest(req.principal, MANAGE_PERMISSION);
    const patch = parseInput(SettingsPatchSchema, jsonBody(req) ?? {});
    try {
      const { settings, changed } = await deps.settings.patch(
        org.slug,
        patch,
        actorOf(principal),
        deps.config.LLM_QUOTA_MAX_USER_OVERRIDES,
      );
      // a patch that changes nothing (`{}`, the settings as they stand) is neither written nor announced
      if (changed) {
        deps.logger.info({ orgSlug: org.slug, by: actorOf(principal), patch }, 'quota settings changed');
        await deps.settingsChanged(org.slug);
      }
      res.json(settingsView(settings));
    } catch (err) {
      if (err instanceof TooManyEntries) {
        throw new InvalidInput(err.message, {
          details: { issues: [{ field: err.field, message: err.message }] },
        });
      }
      throw err;
    }
  });
}
