import { type Clock, RateLimited } from '@platform/kernel';
import type { RateWindows, WindowCount } from '@platform/store';
import type { QuotaCounters } from './counters';
import { secondsToNextMonth } from './month-counters';
import type { OrgGatewaySettings, UserQuota } from './org-settings';

export const COST_SCALE = 1_000_000;

/** The monthly-budget refusal's code (distinct from RATE_LIMITED: waiting a minute does not help). */
export const MONTHLY_QUOTA_EXCEEDED = 'MONTHLY_QUOTA_EXCEEDED';

export class MonthlyBudgetExhausted extends Error {
  constructor(
    readonly key: 'llm.monthly_tokens' | 'llm.monthly_cost',
    readonly limit: number,
    readonly used: number,
    readonly retryAfterSeconds: number,
  ) {
    super(`The organization's monthly budget (${key}) is exhausted`);
  }
  toRateLimited(): RateLimited {
    return new RateLimited(this.retryAfterSeconds, this.message, {
      error: MONTHLY_QUOTA_EXCEEDED,
      code: MONTHLY_QUOTA_EXCEEDED,
      // an SDK's retries a few seconds later cannot succeed before the month ends
      retryable: false,
      details: { key: this.key, limit: this.limit, used: this.used, window: 'month' },
    });
  }
}

export interface Caller {
  orgSlug: string;
  userId: string | null;
  roleSlug: string | null;
  /** the organization API key making the request (it has no user), whose own limits apply */
  apiKeyId: string | null;
}

/** A user's limit: override, else role entry, else plan default (same rule as llm-quota's report). */
export function userLimit(
  field: keyof UserQuota,
  settings: OrgGatewaySettings,
  caller: Caller,
): number | null {
  if (caller.userId === null) return null;
  const { overrides, by_role } = settings.org_user_quotas;
  const o = Object.hasOwn(overrides, caller.userId) ? overrides[caller.userId]?.[field] : undefined;
  if (typeof o === 'number') return o;
  const r =
    caller.roleSlug && Object.hasOwn(by_role, caller.roleSlug)
      ? by_role[caller.roleSlug]?.[field]
      : undefined;
  if (typeof r === 'number') return r;
  const d = settings.per_user_defaults[field];
  return typeof d === 'number' ? d : null;
}

/** An organization API key's limit: its entry in `by_api_key`, else none (keys have no plan default). */
export function apiKeyLimit(
  field: keyof UserQuota,
  settings: OrgGatewaySettings,
  caller: Caller,
): number | null {
  const byKey = settings.org_user_quotas.by_api_key;
  if (caller.apiKeyId === null || byKey === undefined || !Object.hasOwn(byKey, caller.apiKeyId)) return null;
  const limit = byKey[caller.apiKeyId]?.[field];
  return typeof limit === 'number' ? limit : null;
}

type Scope = 'org' | 'user' | 'api_key';
const SCOPE_NAMES: Record<Scope, string> = { org: 'organization', user: 'user', api_key: 'API key' };

export type Limiters = Pick<QuotaCounters, 'requests' | 'tokens'>;

/** A token window a reservation was counted in: its key, and when that window ends (ms since the epoch). */
interface TokenWindow {
  key: string;
  end: number;
}

/** What an admitted request holds until it settles: the tokens it reserved in every window. */
export class Ticket {
  private settled = false;
  /** month tokens this request has added to the store (prompt reservation + streamed chunks) */
  private monthTokens: number;
  /** the organization's month as last seen: the store's answer, plus chunks it failed to take since */
  private monthSeen: number;

  constructor(
    private readonly deps: { limiters: Limiters; months: QuotaCounters['months']; clock: Clock },
    readonly caller: Caller,
    private readonly reservedTokens: number,
    /** the token windows the reservation was counted in: each key, and when its window ends (ms) */
    private readonly tokenWindows: TokenWindow[],
    /** the month token limit under hard_block, or null when a stream needs no cut */
    readonly monthTokenLimit: number | null,
    private readonly monthFloor: number,
  ) {
    this.monthTokens = reservedTokens;
    this.monthSeen = monthFloor;
  }

  /**
   * Counts tokens a stream has produced so far in the month; true while the month stays within its
   * limit. Called per chunk, it lets a stream end at the crossing (at most one chunk over).
   */
  async streamed(tokens: number): Promise<boolean> {
    // Without a limit to enforce, the stream's tokens reach the month once, when the ticket settles.
    if (tokens <= 0 || this.monthTokenLimit === null) return true;
    try {
      const month = await this.deps.months.add(this.caller.orgSlug, tokens, 0);
      this.monthTokens += tokens;
      this.monthSeen = month.tokens;
    } catch {
      // The store stopped answering mid-stream: not the provider's fault, so no reason to cut a stream it serves.
      // The cut still comes at the crossing as this request sees it, and `settle` adds what the store missed.
      this.monthSeen += tokens;
    }
    return Math.max(this.monthSeen, this.monthFloor) <= this.monthTokenLimit;
  }

  /** replaces the reservation with what was really consumed (zero when nothing was) */
  async settle(actual: { totalTokens: number; costMicros: number }): Promise<void> {
    if (this.settled) return;
    this.settled = true;
    const delta = actual.totalTokens - this.reservedTokens;
    const now = this.deps.clock.now().getTime();
    await Promise.all([
      // tokens used beyond the reservation count in the window they were used in; an unused reservation is given
      // back only to the window that counted it: once that window is over, a later one owes nothing
      ...this.tokenWindows.map(({ key, end }) =>
        delta >= 0
          ? this.deps.limiters.tokens.penalty(key, delta)
          : now < end
            ? this.deps.limiters.tokens.reward(key, -delta)
            : undefined,
      ),
      this.deps.months.add(this.caller.orgSlug, actual.totalTokens - this.monthTokens, actual.costMicros),
    ]);
  }
}

/**
 * Quota enforcement before a provider is called: the organization's and the user's request and
 * token windows (a minute), then the organization's month. Each counter is consumed atomically in
 * the shared store and given back when a later check refuses, so instances together never admit
 * more than a limit.
 */
export class Admission {
  constructor(private readonly deps: { limiters: Limiters; months: QuotaCounters['months']; clock: Clock }) {}

  async admit(
    settings: OrgGatewaySettings,
    caller: Caller,
    promptTokens: number,
    options: { checkMonth: boolean },
  ): Promise<Ticket> {
    const { limiters } = this.deps;
    const undo: Array<() => Promise<unknown>> = [];
    const now = () => this.deps.clock.now().getTime();
    const rollback = () => Promise.all(undo.map((u) => u()));
    const windows: Array<{
      limiter: RateWindows;
      key: string;
      scope: Scope;
      points: number;
      limit: number | null;
    }> = [];
    const both = (scope: Scope, key: string, rpm: number | null, tpm: number | null) =>
      windows.push(
        { limiter: limiters.requests, key, scope, points: 1, limit: rpm },
        { limiter: limiters.tokens, key, scope, points: promptTokens, limit: tpm },
      );
    both('org', caller.orgSlug, settings.limits['llm.rpm'] ?? null, settings.limits['llm.tpm'] ?? null);
    if (caller.userId !== null)
      both(
        'user',
        `${caller.orgSlug}|${caller.userId}`,
        userLimit('rpm', settings, caller),
        userLimit('tpm', settings, caller),
      );
    if (caller.apiKeyId !== null) {
      // a key's windows are kept only while the organization sets it a limit: most keys have none
      const rpm = apiKeyLimit('rpm', settings, caller);
      const tpm = apiKeyLimit('tpm', settings, caller);
      // `key:` sets its windows apart from the organization's and users' (an org slug has no `:`)
      if (rpm !== null || tpm !== null) both('api_key', `key:${caller.orgSlug}|${caller.apiKeyId}`, rpm, tpm);
    }
    const tokenWindows: TokenWindow[] = [];
    try {
      for (const w of windows) {
        // Token windows are counted even without a limit: a limit set later then sees the minute's use.
        if (w.limit === null && w.limiter === limiters.requests) continue;
        // A prompt larger than a whole minute's tokens never fits: said at once, and not worth an SDK's retries.
        if (w.limit !== null && w.limiter === limiters.tokens && w.points > w.limit) {
          throw new RateLimited(
            60,
            `This request's ${w.points} prompt tokens exceed the ${SCOPE_NAMES[w.scope]}'s limit of ${w.limit} tokens a minute: shorten it, or ask for a higher limit`,
            {
              details: {
                key: 'llm.tpm',
                scope: w.scope,
                limit: w.limit,
                requested: w.points,
                window: 'minute',
              },
              retryable: false,
            },
          );
        }
        const res: WindowCount = await w.limiter.consume(w.key, w.points);
        const end = now() + res.msBeforeNext;
        // given back only while its window lasts: a refusal just after the minute turned owes the next one nothing
        undo.push(async () => (now() < end ? w.limiter.reward(w.key, w.points) : undefined));
        if (w.limiter === limiters.tokens) tokenWindows.push({ key: w.key, end });
        if (w.limit !== null && res.consumedPoints > w.limit) {
          throw new RateLimited(Math.max(1, Math.ceil(res.msBeforeNext / 1000)), 'Rate limit exceeded', {
            details: {
              key: w.limiter === limiters.requests ? 'llm.rpm' : 'llm.tpm',
              scope: w.scope,
              limit: w.limit,
              window: 'minute',
            },
          });
        }
      }
      const monthTokenLimit = settings.limits['llm.monthly_tokens'] ?? null;
      const monthCostLimit = settings.limits['llm.monthly_cost'] ?? null;
      const month = await this.deps.months.add(caller.orgSlug, promptTokens, 0);
      undo.push(() => this.deps.months.add(caller.orgSlug, -promptTokens, 0));
      if (options.checkMonth) {
        const retry = secondsToNextMonth(this.deps.clock.now());
        const usedBefore = Math.max(month.tokens - promptTokens, settings.month.tokens);
        if (monthTokenLimit !== null && usedBefore + promptTokens > monthTokenLimit)
          throw new MonthlyBudgetExhausted('llm.monthly_tokens', monthTokenLimit, usedBefore, retry);
        const cost = Math.max(month.costMicros / COST_SCALE, settings.month.cost);
        if (monthCostLimit !== null && cost >= monthCostLimit)
          throw new MonthlyBudgetExhausted('llm.monthly_cost', monthCostLimit, cost, retry);
      }
      const streamLimit = options.checkMonth && settings.policy === 'hard_block' ? monthTokenLimit : null;
      return new Ticket(
        { limiters, months: this.deps.months, clock: this.deps.clock },
        caller,
        promptTokens,
        tokenWindows,
        streamLimit,
        settings.month.tokens,
      );
    } catch (err) {
      await rollback();
      throw err;
    }
  }
}
