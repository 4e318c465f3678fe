import {
  type Clock,
  deadlineSignal,
  INTERNAL_SECRET_HEADER,
  type Logger,
  OutageLog,
  Unavailable,
} from '@platform/kernel';

export type QuotaPolicy = 'hard_block' | 'soft_downgrade';

export interface UserQuota {
  rpm?: number;
  tpm?: number;
}

/** An organization API key's limits: a user's rates, and a month's budget of its own (decision 0117). */
export interface ApiKeyQuota extends UserQuota {
  monthly_tokens?: number;
  monthly_cost?: number;
}

/** What llm-quota says the gateway enforces for one organization (`/internal/orgs/:slug/gateway-settings`). */
export interface OrgGatewaySettings {
  orgSlug: string;
  plan: { name: string; currency: string };
  policy: QuotaPolicy;
  limits: {
    'llm.rpm'?: number | null;
    'llm.tpm'?: number | null;
    'llm.monthly_tokens'?: number | null;
    'llm.monthly_cost'?: number | null;
  };
  per_user_defaults: UserQuota;
  org_user_quotas: {
    overrides: Record<string, UserQuota>;
    by_role: Record<string, UserQuota>;
    /** an organization API key's own limits, by key id (absent from an llm-quota older than them) */
    by_api_key?: Record<string, ApiKeyQuota>;
  };
  models: {
    allowed: string[] | null;
    defaults: {
      completions?: string;
      embeddings?: string;
      image_generation?: string;
      audio_transcription?: string;
      audio_speech?: string;
    };
    downgrade: Record<string, string>;
    /** the models an organization API key may use (within `allowed`), by key id (absent from an older llm-quota) */
    by_api_key?: Record<string, string[]>;
    /** how `model: "auto"` chooses (decision 0120); absent or null: `auto` is the default */
    routing?: {
      strategy: 'rules' | 'cost_optimized';
      rules?: Array<{
        condition: 'messages_count' | 'prompt_tokens';
        operator: '<' | '<=' | '>' | '>=' | '=';
        threshold: number;
        model: string;
      }>;
    } | null;
  };
  /**
   * the month's usage llm-quota has counted (a floor under the gateway's own month counters); NO_MONTH when its
   * answer names no month the gateway can read
   */
  month: { start: string; tokens: number; cost: number };
  /** the month llm-quota counted for each API key with a budget (absent from an llm-quota older than them) */
  api_key_months?: Record<string, { tokens: number; cost: number }>;
}

/** llm-quota's month when its answer names none the gateway can read: a start no month matches, no floor */
const NO_MONTH: OrgGatewaySettings['month'] = Object.freeze({ start: '', tokens: 0, cost: 0 });

/** a month llm-quota names: an ISO date that starts it, and counts */
function readableMonth(month: unknown): month is OrgGatewaySettings['month'] {
  if (typeof month !== 'object' || month === null) return false;
  const { start, tokens, cost } = month as Record<string, unknown>;
  return (
    typeof start === 'string' &&
    /^\d{4}-\d{2}-\d{2}/.test(start) &&
    !Number.isNaN(Date.parse(start)) &&
    Number.isFinite(tokens) &&
    Number.isFinite(cost)
  );
}

/** how long llm-quota has to answer a settings read (`deadlineSignal`: what arrived while the gateway stalled counts) */
const SETTINGS_TIMEOUT_MS = 5_000;

/** organizations whose settings one instance keeps when its configuration names no other bound */
const DEFAULT_SETTINGS_CACHE_MAX_ENTRIES = 10_000;

/**
 * Organizations' settings read from llm-quota, the one owner of quota settings, cached per instance
 * for a short TTL so the hot path seldom leaves the process. Past the TTL, and for one more TTL, the
 * cached settings still answer while a refresh runs behind the request (a change reaches every
 * instance within two TTLs; a TTL of 0 reads llm-quota every time). When llm-quota cannot answer, the
 * last known settings keep serving; an organization never seen answers 503.
 *
 * At most `maxEntries` organizations are kept, the least recently used leaving first: every organization a
 * caller can make (or a deleted one) would otherwise stay for the life of the process. One that left is read
 * from llm-quota again at its next request, and has no last known settings while llm-quota is away.
 *
 * llm-quota away is logged once when it starts, at most once a minute while it lasts, and once when it answers
 * again: every request would otherwise log a line while it lasts.
 */
export class OrgSettingsSource {
  private readonly cache = new Map<string, { at: number; value: OrgGatewaySettings }>();
  private readonly inflight = new Map<string, Promise<OrgGatewaySettings>>();
  private readonly maxEntries: number;
  private readonly quotaOutage: OutageLog;

  constructor(
    private readonly deps: {
      quotaUrl: string;
      secret: string;
      ttlMs: number;
      clock: Clock;
      logger: Logger;
      fetch: typeof fetch;
      /** organizations kept at most (default DEFAULT_SETTINGS_CACHE_MAX_ENTRIES) */
      maxEntries?: number;
    },
  ) {
    this.maxEntries = Math.max(1, deps.maxEntries ?? DEFAULT_SETTINGS_CACHE_MAX_ENTRIES);
    this.quotaOutage = new OutageLog(deps, {
      starts:
        'llm-quota unreachable: organizations use their last known settings, and those without any answer 503',
      lasts: 'llm-quota still unreachable',
      ends: 'llm-quota answers again',
    });
  }

  /** organizations whose settings are held */
  get size(): number {
    return this.cache.size;
  }

  async get(orgSlug: string): Promise<OrgGatewaySettings> {
    const now = this.deps.clock.now().getTime();
    const cached = this.cache.get(orgSlug);
    if (cached) {
      // most recently used last: the first key of the map is the one to leave
      this.cache.delete(orgSlug);
      this.cache.set(orgSlug, cached);
      const age = now - cached.at;
      if (age < this.deps.ttlMs) return cached.value;
      // Stale for less than another TTL: answered at once, refreshed behind the request, so the hot
      // path never waits for llm-quota while an organization keeps calling.
      if (age < 2 * this.deps.ttlMs) {
        void this.load(orgSlug).catch(() => undefined);
        return cached.value;
      }
    }
    try {
      return await this.load(orgSlug);
    } catch (err) {
      if (!this.quotaOutage.refused(err, { orgSlug })) await this.quotaOutage.remind();
      if (cached) return cached.value;
      throw new Unavailable('Quota settings are unavailable; try again shortly', { retryAfter: 1 });
    }
  }

  /** one fetch per organization at a time; the answer goes to the cache */
  private load(orgSlug: string): Promise<OrgGatewaySettings> {
    let pending = this.inflight.get(orgSlug);
    if (!pending) {
      pending = this.fetchSettings(orgSlug)
        .then((value) => {
          this.quotaOutage.ended();
          this.cache.delete(orgSlug);
          this.cache.set(orgSlug, { at: this.deps.clock.now().getTime(), value });
          if (this.cache.size > this.maxEntries) this.cache.delete(this.cache.keys().next().value!);
          return value;
        })
        .finally(() => this.inflight.delete(orgSlug));
      this.inflight.set(orgSlug, pending);
    }
    return pending;
  }

  /** forgets an organization's cached settings (after the gateway learns they changed) */
  forget(orgSlug: string): void {
    this.cache.delete(orgSlug);
  }

  private async fetchSettings(orgSlug: string): Promise<OrgGatewaySettings> {
    const url = `${this.deps.quotaUrl.replace(/\/$/, '')}/internal/orgs/${encodeURIComponent(orgSlug)}/gateway-settings`;
    const deadline = deadlineSignal(
      SETTINGS_TIMEOUT_MS,
      () => new Error(`llm-quota did not answer within ${SETTINGS_TIMEOUT_MS} ms`),
    );
    let settings: OrgGatewaySettings;
    try {
      const res = await this.deps.fetch(url, {
        headers: { [INTERNAL_SECRET_HEADER]: this.deps.secret, accept: 'application/json' },
        signal: deadline.signal,
      });
      if (!res.ok) throw new Error(`llm-quota answered ${res.status}`);
      settings = (await res.json()) as OrgGatewaySettings;
    } finally {
      deadline.end();
    }
    if (readableMonth(settings.month)) return settings;
    // logged when an organization's month turns unreadable, not at every refresh after
    if (this.cache.get(orgSlug)?.value.month !== NO_MONTH)
      this.deps.logger.warn(
        { orgSlug, month: settings.month },
        "llm-quota's month is unreadable (its start no date, or its counts no numbers): its usage floors nothing",
      );
    return { ...settings, month: NO_MONTH };
  }
}
