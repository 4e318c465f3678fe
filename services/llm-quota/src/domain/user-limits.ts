import type { Plan } from './plans';

export interface UserQuota {
  rpm?: number;
  tpm?: number;
}

/** An organization API key's limits: a user's rates, and a month's budget of its own (tokens, cost). */
export interface ApiKeyQuota extends UserQuota {
  monthly_tokens?: number;
  /** in the plan currency */
  monthly_cost?: number;
}

/** The limits each map of `org_user_quotas` holds, in the order they are reported. */
export const QUOTA_FIELDS = {
  overrides: ['rpm', 'tpm'],
  by_role: ['rpm', 'tpm'],
  by_api_key: ['rpm', 'tpm', 'monthly_tokens', 'monthly_cost'],
} as const satisfies Record<keyof OrgUserQuotas, ReadonlyArray<keyof ApiKeyQuota>>;

/** An organization's per-user settings (spec 2.1 `org_user_quotas`). */
export interface OrgUserQuotas {
  /** by user id */
  overrides: Record<string, UserQuota>;
  /** by organization role slug */
  by_role: Record<string, UserQuota>;
  /** by organization API key id: an application's own limits (an API key carries no user) */
  by_api_key: Record<string, ApiKeyQuota>;
}

export type UserLimitSource = 'override' | 'role' | 'plan';

export interface EffectiveUserLimit {
  limit: number;
  source: UserLimitSource;
}

/**
 * A user's per-user limit for `rpm` or `tpm`, field by field: the user's override, else the entry of
 * the user's organization role, else the plan's per-user default; none when no level sets it.
 */
export function effectiveUserLimit(
  field: keyof UserQuota,
  quotas: OrgUserQuotas,
  plan: Plan,
  userId: string,
  roleSlug: string | null,
): EffectiveUserLimit | null {
  const override = Object.hasOwn(quotas.overrides, userId) ? quotas.overrides[userId]?.[field] : undefined;
  if (typeof override === 'number') return { limit: override, source: 'override' };
  const byRole =
    roleSlug && Object.hasOwn(quotas.by_role, roleSlug) ? quotas.by_role[roleSlug]?.[field] : undefined;
  if (typeof byRole === 'number') return { limit: byRole, source: 'role' };
  const fallback = plan.per_user_defaults[field];
  if (typeof fallback === 'number') return { limit: fallback, source: 'plan' };
  return null;
}

/** An organization API key's limit: its entry's, or none (keys have no plan default). */
export function apiKeyLimit(
  field: keyof ApiKeyQuota,
  quotas: OrgUserQuotas,
  keyId: string,
): EffectiveUserLimit | null {
  const limit = Object.hasOwn(quotas.by_api_key, keyId) ? quotas.by_api_key[keyId]?.[field] : undefined;
  return typeof limit === 'number' ? { limit, source: 'override' } : null;
}
