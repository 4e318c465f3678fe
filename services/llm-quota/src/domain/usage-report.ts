import type { Logger } from '@platform/kernel';
import type { CounterDoc, OrgSettingsDoc, QuotaCollections } from '../data/collections';
import type { QuotaGauge, UsageResponse } from '../routes/schemas';
import { microsToCost, percentOf } from './gauges';
import { LIMIT_KEYS, type LimitKey, type Plan, type PlanCatalog } from './plans';
import { apiKeyLimit, type EffectiveUserLimit, effectiveUserLimit } from './user-limits';
import { type CounterScope, counterId, scopeName, type WindowKind, windowEnd, windowStart } from './windows';

const WINDOW_OF: Record<LimitKey, WindowKind> = {
  'llm.rpm': 'minute',
  'llm.tpm': 'minute',
  'llm.monthly_tokens': 'month',
  'llm.monthly_cost': 'month',
};

const RATE_FIELDS = [
  ['llm.rpm', 'rpm'],
  ['llm.tpm', 'tpm'],
] as const;
/** an organization API key's: its rates and its month's budget */
const KEY_FIELDS = [
  ...RATE_FIELDS,
  ['llm.monthly_tokens', 'monthly_tokens'],
  ['llm.monthly_cost', 'monthly_cost'],
] as const;

/** What a gauge measures in a counter. */
function usedOf(key: LimitKey, counter: CounterDoc | undefined): number {
  if (!counter) return 0;
  switch (key) {
    case 'llm.rpm':
      return counter.requests;
    case 'llm.tpm':
    case 'llm.monthly_tokens':
      return counter.tokens;
    case 'llm.monthly_cost':
      return microsToCost(counter.cost_micros);
  }
}

export interface PlanInForce {
  name: string;
  plan: Plan;
}

/** The organization's plan; an assigned plan missing from the catalogue falls back to the default. */
export function planInForce(
  settings: OrgSettingsDoc,
  catalog: PlanCatalog,
  defaultPlan: string,
  logger: Logger,
): PlanInForce {
  // an own member only: a stored plan named `constructor` must not find Object's
  const assigned = Object.hasOwn(catalog, settings.plan) ? catalog[settings.plan] : undefined;
  if (assigned) return { name: settings.plan, plan: assigned };
  logger.error(
    { orgSlug: settings._id, plan: settings.plan, defaultPlan },
    'organization assigned to a plan that is not in the catalogue; reporting the default plan',
  );
  return { name: defaultPlan, plan: catalog[defaultPlan]! };
}

export interface ReportInput {
  settings: OrgSettingsDoc;
  plan: PlanInForce;
  now: Date;
  /** the caller, when the credential carries a user */
  user: { id: string; role: string | null } | null;
  /** the calling organization API key's id, when the credential is one */
  apiKeyId: string | null;
}

/** The ids of the few counters a report reads (all by primary key): the organization's and the caller's. */
export function countersToRead(
  orgSlug: string,
  now: Date,
  caller: { userId: string | null; apiKeyId: string | null },
): string[] {
  const scopes: CounterScope[] = [{ orgSlug }];
  if (caller.userId !== null) scopes.push({ orgSlug, userId: caller.userId });
  if (caller.apiKeyId !== null) scopes.push({ orgSlug, apiKeyId: caller.apiKeyId });
  return scopes.flatMap((scope) => [
    counterId(scope, 'minute', windowStart('minute', now)),
    counterId(scope, 'month', windowStart('month', now)),
  ]);
}

/** Spec 2.1 from the settings, the plan and the current counters. */
export function buildUsageReport(input: ReportInput, counters: Map<string, CounterDoc>): UsageResponse {
  const { settings, plan, now, user } = input;
  const orgSlug = settings._id;
  const read = (scope: CounterScope, window: WindowKind) =>
    counters.get(counterId(scope, window, windowStart(window, now)));
  const gauge = (
    key: LimitKey,
    scope: CounterScope,
    limit: number,
    source: QuotaGauge['source'],
  ): QuotaGauge => {
    const window = WINDOW_OF[key];
    const used = usedOf(key, read(scope, window));
    const out: QuotaGauge = {
      key,
      source,
      scope: scopeName(scope),
      window,
      limit,
      used,
      percent: percentOf(used, limit),
    };
    if (window === 'minute') {
      // The time of the last request recorded this month, in the gauge's scope.
      const last = read(scope, 'month')?.lastRequestAt;
      if (last) out.as_of = new Date(last).toISOString();
    }
    out.resets_at = windowEnd(window, now).toISOString();
    return out;
  };

  const org: CounterScope = { orgSlug };
  const enforced: QuotaGauge[] = [];
  for (const key of LIMIT_KEYS) {
    const limit = plan.plan.limits[key];
    if (typeof limit === 'number') enforced.push(gauge(key, org, limit, 'plan'));
  }
  const month = read(org, 'month');
  const report: UsageResponse = {
    orgSlug,
    computed_at: now.toISOString(),
    usage_refreshed_at: month?.refreshedAt ? new Date(month.refreshedAt).toISOString() : null,
    policy: settings.policy,
    enforced,
    included: { ...plan.plan.included },
    per_user_defaults: { ...plan.plan.per_user_defaults },
    org_user_quotas: settings.org_user_quotas,
    plan: { name: plan.name, currency: plan.plan.currency },
  };
  const gaugesOf = <F extends string>(
    fields: ReadonlyArray<readonly [LimitKey, F]>,
    scope: CounterScope,
    limitOf: (field: F) => EffectiveUserLimit | null,
  ) =>
    fields.flatMap(([key, field]) => {
      const limit = limitOf(field);
      return limit ? [gauge(key, scope, limit.limit, limit.source)] : [];
    });
  const quotas = settings.org_user_quotas;
  if (user) {
    const enforced = gaugesOf(RATE_FIELDS, { orgSlug, userId: user.id }, (field) =>
      effectiveUserLimit(field, quotas, plan.plan, user.id, user.role),
    );
    report.user = { userId: user.id, role: user.role, enforced };
  }
  if (input.apiKeyId !== null) {
    const id = input.apiKeyId;
    const enforced = gaugesOf(KEY_FIELDS, { orgSlug, apiKeyId: id }, (field) =>
      apiKeyLimit(field, quotas, id),
    );
    if (enforced.length > 0) report.api_key = { id, enforced };
  }
  return report;
}

/** Reads the counters of a report in one index-backed query. */
export async function readCounters(
  collections: QuotaCollections,
  ids: string[],
): Promise<Map<string, CounterDoc>> {
  const docs = await collections.counters.find({ _id: { $in: ids } });
  return new Map(docs.map((doc) => [doc._id, doc]));
}
