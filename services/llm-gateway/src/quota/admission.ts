import { type Clock, RateLimited } from '@platform/kernel';
import type { RateWindows, WindowCount } from '@platform/store';
import type { QuotaCounters } from './counters';
import { type MonthUsage, monthKey, secondsToNextMonth } from './month-counters';
import type { ApiKeyQuota, OrgGatewaySettings, UserQuota } from './org-settings';

export const COST_SCALE = 1_000_000;

/** The monthly-budget refusal's code (distinct from RATE_LIMITED: waiting a minute does not help). */
export const MONTHLY_QUOTA_EXCEEDED = 'MONTHLY_QUOTA_EXCEEDED';

export class MonthlyBudgetExhausted extends Error {
  constructor(
    readonly key: 'llm.monthly_tokens' | 'llm.monthly_cost',
    readonly limit: number,
    readonly used: number,
    readonly retryAfterSeconds: number,
    /** whose month: the organization's, or an organization API key's own budget (decision 0117) */
    readonly scope: MonthScope = 'org',
  ) {
    super(`The ${SCOPE_NAMES[scope]}'s monthly budget (${key}) is exhausted`);
  }
  toRateLimited(): RateLimited {
    return new RateLimited(this.retryAfterSeconds, this.message, {
      error: MONTHLY_QUOTA_EXCEEDED,
      code: MONTHLY_QUOTA_EXCEEDED,
      // an SDK's retries a few seconds later cannot succeed before the month ends
      retryable: false,
      details: { key: this.key, scope: this.scope, limit: this.limit, used: this.used, window: 'month' },
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

const limitOf = (value: number | undefined): number | null => (typeof value === 'number' ? value : null);

/**
 * An organization API key's limits (its entry in `by_api_key`; no plan default), its counters' key, apart from the
 * organization's and users' (an org slug has no `:`), and the month llm-quota counted for it; null without an entry.
 */
function apiKeyLimits(settings: OrgGatewaySettings, orgSlug: string, apiKeyId: string) {
  const byKey = settings.org_user_quotas.by_api_key;
  const entry: ApiKeyQuota | undefined =
    byKey && Object.hasOwn(byKey, apiKeyId) ? byKey[apiKeyId] : undefined;
  if (!entry) return null;
  return {
    counter: `key:${orgSlug}|${apiKeyId}`,
    rpm: limitOf(entry.rpm),
    tpm: limitOf(entry.tpm),
    monthly: { tokens: limitOf(entry.monthly_tokens), cost: limitOf(entry.monthly_cost) },
    floor: settings.api_key_months?.[apiKeyId] ?? { tokens: 0, cost: 0 },
  };
}

type Scope = 'org' | 'user' | 'api_key';
type MonthScope = Exclude<Scope, 'user'>;
const SCOPE_NAMES: Record<Scope, string> = { org: 'organization', user: 'user', api_key: 'API key' };

export type Limiters = Pick<QuotaCounters, 'requests' | 'tokens'>;

/** A token window a reservation was counted in: its key, and when that window ends (ms since the epoch). */
interface TokenWindow {
  key: string;
  end: number;
}

/**
 * One month counter a request counts in: the organization's, and an organization API key's when it has a budget. The
 * request's tokens reach it as they are used, so that a stream ends at the crossing of its token limit.
 *
 * A request counts in the UTC month it settles in, the month of its usage event's `occurredAt` where llm-quota counts
 * it: one admitted before midnight and streamed or settled after it moves what it had added to the month before (its
 * reservation, its streamed chunks) to the new one, so the month before gets its reservation back and neither month
 * owes the other anything.
 */
class MonthTally {
  /** this request's tokens so far (prompt reservation + streamed chunks), in the store or not */
  used: number;
  /** what this request has added to the store's `month` */
  tokens: number;
  /** the month as last seen: the store's answer, plus chunks it failed to take since */
  seen: number;

  constructor(
    readonly counter: string,
    /** the UTC month (`YYYY-MM`) the request counts in: the one it was admitted in, until it goes on past midnight */
    public month: string,
    readonly scope: MonthScope,
    /** the month token limit under hard_block, or null when a stream needs no cut */
    readonly tokenLimit: number | null,
    /** what llm-quota counted of `month` (which this request is not in yet): a floor under the gateway's counter */
    public floor: number,
    reserved: number,
  ) {
    this.used = reserved;
    this.tokens = reserved;
    this.seen = floor;
  }

  /**
   * the least the month holds: llm-quota's count plus this request's tokens. The store's counter can start below it
   * (a key's budget set mid-month, a restart on the embedded engine).
   */
  get least(): number {
    return this.floor + this.used;
  }
}

/** What an admitted request holds until it settles: the tokens it reserved in every window and month. */
export class Ticket {
  private settled = false;
  /** the month whose token limit a stream crossed (`streamed` said false), for the stream's last words */
  crossed: { scope: MonthScope; limit: number } | null = null;

  constructor(
    private readonly deps: { limiters: Limiters; months: QuotaCounters['months']; clock: Clock },
    readonly caller: Caller,
    private readonly reservedTokens: number,
    /** the token windows the reservation was counted in: each key, and when its window ends (ms) */
    private readonly tokenWindows: TokenWindow[],
    /** the organization's month first, then the key's when it has a budget */
    private readonly months: MonthTally[],
  ) {}

  /**
   * Counts tokens a stream has produced so far in each month; true while every month stays within its limit.
   * Called per chunk, it lets a stream end at the crossing (at most one chunk over).
   */
  async streamed(tokens: number): Promise<boolean> {
    if (tokens <= 0) return true;
    const monthAt = monthKey(this.deps.clock.now());
    for (const month of this.months) {
      // Without a limit to enforce, the stream's tokens reach the month once, when the ticket settles.
      if (month.tokenLimit === null) continue;
      month.used += tokens;
      try {
        month.seen = (await this.count(month, tokens, 0, monthAt)).tokens;
      } catch {
        // The store stopped answering mid-stream: not the provider's fault, so no reason to cut a stream it serves.
        // The cut still comes at the crossing as this request sees it, and `settle` adds what the store missed.
        month.seen += tokens;
      }
      if (Math.max(month.seen, month.least) > month.tokenLimit && this.crossed === null)
        this.crossed = { scope: month.scope, limit: month.tokenLimit };
    }
    return this.crossed === null;
  }

  /**
   * replaces the reservation with what was really consumed (zero when nothing was), in the month of `at`: the time its
   * usage event says it occurred
   */
  async settle(
    actual: { totalTokens: number; costMicros: number },
    at = this.deps.clock.now(),
  ): Promise<void> {
    if (this.settled) return;
    this.settled = true;
    const delta = actual.totalTokens - this.reservedTokens;
    const now = at.getTime();
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
      ...this.months.map((month) =>
        this.count(month, actual.totalTokens - month.tokens, actual.costMicros, monthKey(at)),
      ),
    ]);
  }

  /**
   * Adds to the request's month counter in `monthAt`. When that is not the month counted so far (midnight has passed
   * during the request), what the request added there is added to `monthAt` with `tokens`, then given back to it.
   */
  private async count(
    month: MonthTally,
    tokens: number,
    costMicros: number,
    monthAt: string,
  ): Promise<MonthUsage> {
    if (month.month === monthAt) {
      const now = await this.deps.months.add(month.counter, tokens, costMicros, monthAt);
      month.tokens += tokens;
      return now;
    }
    const [before, moved] = [month.month, month.tokens];
    const now = await this.deps.months.add(month.counter, moved + tokens, costMicros, monthAt);
    // llm-quota's count of the month before floors nothing in this one
    [month.month, month.floor, month.tokens] = [monthAt, 0, moved + tokens];
    // The month before is over: its counter no longer admits anyone, so a store failing to take the give-back
    // costs nothing, and must not cost the new month this request's tokens.
    await this.deps.months.add(month.counter, -moved, 0, before).catch(() => undefined);
    return now;
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
    // a key's windows and month are kept only while the organization gives it limits: most keys have none
    const key = caller.apiKeyId === null ? null : apiKeyLimits(settings, caller.orgSlug, caller.apiKeyId);
    if (key && (key.rpm !== null || key.tpm !== null)) both('api_key', key.counter, key.rpm, key.tpm);
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
          const unit = w.limiter === limiters.requests ? 'requests' : 'tokens';
          const whose = `${SCOPE_NAMES[w.scope]}'s limit of ${w.limit} ${unit} a minute`;
          throw new RateLimited(
            Math.max(1, Math.ceil(res.msBeforeNext / 1000)),
            `Rate limit exceeded: the ${whose}`,
            {
              details: {
                key: w.limiter === limiters.requests ? 'llm.rpm' : 'llm.tpm',
                scope: w.scope,
                limit: w.limit,
                window: 'minute',
              },
            },
          );
        }
      }
      const hardBlock = options.checkMonth && settings.policy === 'hard_block';
      // llm-quota's counts are of the month it was asked in: settings cached (or last known) from the month before
      // the turn floor nothing, or an organization over last month's budget stays refused, told to wait a month
      const monthAt = monthKey(this.deps.clock.now());
      const thisMonth = settings.month.start.slice(0, 7) === monthAt;
      const noFloor = { tokens: 0, cost: 0 };
      const months: MonthTally[] = [];
      const month = async (
        counter: string,
        scope: MonthScope,
        limits: { tokens: number | null; cost: number | null },
        floor: { tokens: number; cost: number },
      ) => {
        const counted = await this.deps.months.add(counter, promptTokens, 0, monthAt);
        undo.push(() => this.deps.months.add(counter, -promptTokens, 0, monthAt));
        if (options.checkMonth) {
          const retry = secondsToNextMonth(this.deps.clock.now());
          const usedBefore = Math.max(counted.tokens - promptTokens, floor.tokens);
          if (limits.tokens !== null && usedBefore + promptTokens > limits.tokens)
            throw new MonthlyBudgetExhausted('llm.monthly_tokens', limits.tokens, usedBefore, retry, scope);
          const cost = Math.max(counted.costMicros / COST_SCALE, floor.cost);
          if (limits.cost !== null && cost >= limits.cost)
            throw new MonthlyBudgetExhausted('llm.monthly_cost', limits.cost, cost, retry, scope);
        }
        months.push(
          new MonthTally(
            counter,
            monthAt,
            scope,
            hardBlock ? limits.tokens : null,
            floor.tokens,
            promptTokens,
          ),
        );
      };
      await month(
        caller.orgSlug,
        'org',
        {
          tokens: settings.limits['llm.monthly_tokens'] ?? null,
          cost: settings.limits['llm.monthly_cost'] ?? null,
        },
        thisMonth ? settings.month : noFloor,
      );
      // llm-quota counts every key's month anyway, for its report
      if (key && (key.monthly.tokens !== null || key.monthly.cost !== null))
        await month(key.counter, 'api_key', key.monthly, thisMonth ? key.floor : noFloor);
      return new Ticket(
        { limiters, months: this.deps.months, clock: this.deps.clock },
        caller,
        promptTokens,
        tokenWindows,
        months,
      );
    } catch (err) {
      await rollback();
      throw err;
    }
  }
}
