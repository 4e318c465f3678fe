import { ManualClock, RateLimited } from '@platform/kernel';
import { createEmbeddedStore, type Store, StoreRateWindows } from '@platform/store';
import { Admission, type Caller, MonthlyBudgetExhausted } from './admission';
import { type QuotaCounters, quotaCountersFor } from './counters';
import { MonthCounters, monthKey } from './month-counters';
import type { OrgGatewaySettings } from './org-settings';

const settings = (
  limits: OrgGatewaySettings['limits'],
  extra: Partial<OrgGatewaySettings> = {},
): OrgGatewaySettings => ({
  orgSlug: 'acme',
  plan: { name: 'test', currency: 'USD' },
  policy: 'hard_block',
  limits,
  per_user_defaults: {},
  org_user_quotas: { overrides: {}, by_role: {} },
  models: { allowed: null, defaults: {}, downgrade: {} },
  month: { start: '2026-11-01T00:00:00.000Z', tokens: 0, cost: 0 },
  ...extra,
});

// Rate windows carry a TTL index the store applies on the real clock: tests that use them run at the
// real time (the manual clock still moves windows forward).

/** The counters on the store's documents (what MongoDB runs). */
const onDocuments = (store: Store, clock: ManualClock): QuotaCounters => ({
  requests: new StoreRateWindows(store, clock, { name: 'rpm', durationMs: 60_000 }),
  tokens: new StoreRateWindows(store, clock, { name: 'tpm', durationMs: 60_000 }),
  months: new MonthCounters(store, clock),
});

const caller: Caller = { orgSlug: 'acme', userId: 'u1', roleSlug: 'member', apiKeyId: null };

describe.each([
  ['documents of the shared store (MongoDB)', onDocuments],
  ['maps of the process owning the embedded store', quotaCountersFor],
])('quota admission with counters in %s', (_name, countersFor) => {
  /** One gateway instance's admission over a store shared with the others. */
  const instance = (store: Store, clock: ManualClock) => {
    const counters = countersFor(store, clock);
    return new Admission({
      limiters: { requests: counters.requests, tokens: counters.tokens },
      months: counters.months,
      clock,
    });
  };

  it('two instances sharing one store admit exactly the org rpm out of 200 concurrent requests', async () => {
    const store = createEmbeddedStore();
    const clock = new ManualClock(Date.now());
    const [a, b] = [instance(store, clock), instance(store, clock)];
    const s = settings({ 'llm.rpm': 50 });
    const results = await Promise.allSettled(
      Array.from({ length: 200 }, (_, i) =>
        (i % 2 ? a : b).admit(s, { ...caller, userId: `u${i}` }, 10, { checkMonth: true }),
      ),
    );
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(50);
    const refusals = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
    expect(refusals).toHaveLength(150);
    for (const r of refusals) expect(r.reason).toBeInstanceOf(RateLimited);
    // the next minute opens a new window
    clock.advance(61_000);
    await expect(a.admit(s, caller, 10, { checkMonth: true })).resolves.toBeDefined();
  });

  it('per-user rpm: the override beats the role entry, which beats the plan default', async () => {
    const store = createEmbeddedStore();
    const clock = new ManualClock(Date.now());
    const adm = instance(store, clock);
    const s = settings(
      {},
      {
        per_user_defaults: { rpm: 5 },
        org_user_quotas: { overrides: { vip: { rpm: 3 } }, by_role: { member: { rpm: 2 } } },
      },
    );
    const admitted = async (c: typeof caller) => {
      let n = 0;
      for (let i = 0; i < 10; i++) {
        try {
          await adm.admit(s, c, 1, { checkMonth: true });
          n++;
        } catch (err) {
          expect(err).toMatchObject({ code: 'RATE_LIMITED', details: { scope: 'user', key: 'llm.rpm' } });
        }
      }
      return n;
    };
    expect(await admitted({ ...caller, userId: 'vip', roleSlug: 'member' })).toBe(3);
    expect(await admitted({ ...caller, userId: 'm', roleSlug: 'member' })).toBe(2);
    expect(await admitted({ ...caller, userId: 'g', roleSlug: 'guest' })).toBe(5);
  });

  it("an organization API key's own rpm and tpm, apart from the other keys and the organization's", async () => {
    const store = createEmbeddedStore();
    const clock = new ManualClock(Date.now());
    const adm = instance(store, clock);
    const s = settings(
      { 'llm.rpm': 100 },
      {
        // a plan default for users never reaches a key
        per_user_defaults: { rpm: 1 },
        org_user_quotas: { overrides: {}, by_role: {}, by_api_key: { app: { rpm: 2 }, batch: { tpm: 50 } } },
      },
    );
    const key = (apiKeyId: string): Caller => ({ orgSlug: 'acme', userId: null, roleSlug: null, apiKeyId });
    const outcomes = async (c: Caller, tokens: number, n: number) => {
      const out: string[] = [];
      for (let i = 0; i < n; i++)
        out.push(
          await adm.admit(s, c, tokens, { checkMonth: true }).then(
            () => 'ok',
            (err: RateLimited) =>
              `${(err.details as { scope: string; key: string }).key}/${(err.details as { scope: string }).scope}`,
          ),
        );
      return out;
    };
    expect(await outcomes(key('app'), 1, 3)).toEqual(['ok', 'ok', 'llm.rpm/api_key']);
    // another key, with no entry: only the organization's limits
    expect(await outcomes(key('other'), 1, 5)).toEqual(['ok', 'ok', 'ok', 'ok', 'ok']);
    expect(await outcomes(key('batch'), 30, 2)).toEqual(['ok', 'llm.tpm/api_key']);
    // a prompt larger than the key's whole minute is said at once
    await expect(adm.admit(s, key('batch'), 80, { checkMonth: true })).rejects.toMatchObject({
      message: expect.stringContaining("the API key's limit of 50 tokens"),
      details: { key: 'llm.tpm', scope: 'api_key', limit: 50, requested: 80 },
    });
  });

  it("rate windows are calendar minutes, llm-quota's: the refusal's Retry-After is the minute's end", async () => {
    const store = createEmbeddedStore();
    // 40 s into a minute (near the real time: see above)
    const clock = new ManualClock(Math.floor(Date.now() / 60_000) * 60_000 + 40_000);
    const adm = instance(store, clock);
    const s = settings({}, { per_user_defaults: { rpm: 1 } });
    await adm.admit(s, caller, 1, { checkMonth: true });
    const refused = await adm.admit(s, caller, 1, { checkMonth: true }).catch((e: unknown) => e);
    expect(refused).toMatchObject({ code: 'RATE_LIMITED', retryAfter: 20 });
    // the next minute has begun 21 s later, not 60 s after the first request
    clock.advance(21_000);
    await expect(adm.admit(s, caller, 1, { checkMonth: true })).resolves.toBeDefined();
  });

  it('an unused reservation is given back to the minute that counted it, never to a later one', async () => {
    const store = createEmbeddedStore();
    const clock = new ManualClock(Math.floor(Date.now() / 60_000) * 60_000 + 10_000);
    const adm = instance(store, clock);
    const s = settings({ 'llm.tpm': 1_000 });
    // a long stream reserves 800 prompt tokens, and settles two minutes later having used 10
    const long = await adm.admit(s, caller, 800, { checkMonth: true });
    clock.advance(120_000);
    await adm.admit(s, caller, 800, { checkMonth: true });
    await long.settle({ totalTokens: 10, costMicros: 0 });
    // this minute really holds 800: another 800 would pass its 1,000
    await expect(adm.admit(s, caller, 800, { checkMonth: true })).rejects.toMatchObject({
      code: 'RATE_LIMITED',
      details: { key: 'llm.tpm' },
    });
    // within its own minute, an unused reservation is given back
    const quick = await adm.admit(s, caller, 150, { checkMonth: true });
    await quick.settle({ totalTokens: 0, costMicros: 0 });
    await expect(adm.admit(s, caller, 150, { checkMonth: true })).resolves.toBeDefined();
  });

  it('a refusal gives back what earlier windows counted', async () => {
    const store = createEmbeddedStore();
    const clock = new ManualClock(Date.now());
    const adm = instance(store, clock);
    const s = settings({ 'llm.rpm': 10, 'llm.tpm': 100 });
    await expect(adm.admit(s, caller, 150, { checkMonth: true })).rejects.toMatchObject({
      details: { key: 'llm.tpm' },
    });
    // 10 requests of 10 tokens still fit: the refused one left nothing behind
    for (let i = 0; i < 10; i++) await adm.admit(s, caller, 10, { checkMonth: true });
  });

  it('says at once, not worth retrying, that a prompt larger than a minute of tokens never fits', async () => {
    const store = createEmbeddedStore();
    const clock = new ManualClock(Date.now());
    const adm = instance(store, clock);
    const s = settings({ 'llm.tpm': 100 }, { per_user_defaults: { tpm: 50 } });
    const tooBig = await adm.admit(s, caller, 80, { checkMonth: true }).catch((e: unknown) => e);
    expect(tooBig).toMatchObject({
      code: 'RATE_LIMITED',
      retryable: false,
      details: { key: 'llm.tpm', scope: 'user', limit: 50, requested: 80 },
    });
    // a prompt that fits a minute but not this one's remainder: worth retrying once the window turns
    await adm.admit(s, caller, 40, { checkMonth: true });
    const later = await adm.admit(s, caller, 40, { checkMonth: true }).catch((e: unknown) => e);
    expect(later).toBeInstanceOf(RateLimited);
    expect((later as RateLimited).retryable).toBeUndefined();
  });

  it('the monthly token budget refuses with its own code, and settles to real usage', async () => {
    const store = createEmbeddedStore();
    const clock = new ManualClock('2026-11-24T10:00:00Z');
    const adm = instance(store, clock);
    const s = settings({ 'llm.monthly_tokens': 100 });
    const t = await adm.admit(s, caller, 30, { checkMonth: true });
    await t.settle({ totalTokens: 90, costMicros: 0 });
    const err = await adm.admit(s, caller, 20, { checkMonth: true }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(MonthlyBudgetExhausted);
    const answer = (err as MonthlyBudgetExhausted).toRateLimited();
    expect(answer).toMatchObject({
      code: 'MONTHLY_QUOTA_EXCEEDED',
      details: { key: 'llm.monthly_tokens', used: 90 },
      // an SDK's retries, seconds apart, cannot outlast a month
      retryable: false,
    });
    // 6 days, 14 hours to December
    expect(answer.retryAfter).toBe(6 * 86_400 + 14 * 3_600);
    await expect(adm.admit(s, caller, 10, { checkMonth: true })).resolves.toBeDefined();
  });

  it("a stream's ticket reports the crossing of the month's token limit", async () => {
    const store = createEmbeddedStore();
    const clock = new ManualClock(Date.now());
    const t = await instance(store, clock).admit(settings({ 'llm.monthly_tokens': 50 }), caller, 20, {
      checkMonth: true,
    });
    expect(await t.streamed(20)).toBe(true);
    expect(await t.streamed(10)).toBe(true);
    expect(await t.streamed(1)).toBe(false);
  });

  it('a store that stops answering mid-stream neither ends the stream nor loses its tokens', async () => {
    const store = createEmbeddedStore();
    const clock = new ManualClock(Date.now());
    const counters = countersFor(store, clock);
    let down = false;
    const months = {
      add: (org: string, tokens: number, cost: number) =>
        down ? Promise.reject(new Error('store unreachable')) : counters.months.add(org, tokens, cost),
    };
    const adm = new Admission({ limiters: counters, months, clock });
    const t = await adm.admit(settings({ 'llm.monthly_tokens': 50 }), caller, 20, { checkMonth: true });
    expect(await t.streamed(10)).toBe(true);
    down = true;
    // counted here while the store is away: the crossing still ends the stream
    expect(await t.streamed(15)).toBe(true);
    expect(await t.streamed(10)).toBe(false);
    down = false;
    // the answer's 45 tokens reach the month once the store is back, the 25 it missed included
    await t.settle({ totalTokens: 45, costMicros: 0 });
    expect((await counters.months.add('acme', 0, 0)).tokens).toBe(45);
  });

  it("an organization API key's month: its own token and cost budgets, over llm-quota's count, and its stream cut", async () => {
    const store = createEmbeddedStore();
    const clock = new ManualClock('2026-11-24T10:00:00Z');
    const adm = instance(store, clock);
    const key = (apiKeyId: string): Caller => ({ orgSlug: 'acme', userId: null, roleSlug: null, apiKeyId });
    const s = settings(
      { 'llm.monthly_tokens': 10_000 },
      {
        org_user_quotas: {
          overrides: {},
          by_role: {},
          by_api_key: {
            app: { monthly_tokens: 100 },
            counted: { monthly_tokens: 100 },
            spender: { monthly_cost: 1 },
          },
        },
        // what llm-quota counted: a floor under this instance's counters (after a restart on the embedded engine)
        api_key_months: { counted: { tokens: 90, cost: 0 } },
      },
    );
    await expect(adm.admit(s, key('counted'), 20, { checkMonth: true })).rejects.toMatchObject({
      scope: 'api_key',
      used: 90,
    });
    const first = await adm.admit(s, key('app'), 30, { checkMonth: true });
    await first.settle({ totalTokens: 85, costMicros: 0 });
    const refused = await adm.admit(s, key('app'), 20, { checkMonth: true }).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(MonthlyBudgetExhausted);
    expect((refused as MonthlyBudgetExhausted).toRateLimited()).toMatchObject({
      code: 'MONTHLY_QUOTA_EXCEEDED',
      message: "The API key's monthly budget (llm.monthly_tokens) is exhausted",
      details: { key: 'llm.monthly_tokens', scope: 'api_key', limit: 100, used: 85 },
    });
    // another key, and the organization's month, go on
    await expect(adm.admit(s, key('other'), 20, { checkMonth: true })).resolves.toBeDefined();
    // a stream crossing the key's budget is cut, and says whose: 85 + 5 reserved + 4 fits, 7 more does not
    const stream = await adm.admit(s, key('app'), 5, { checkMonth: true });
    expect(await stream.streamed(4)).toBe(true);
    expect(stream.crossed).toBeNull();
    expect(await stream.streamed(7)).toBe(false);
    expect(stream.crossed).toEqual({ scope: 'api_key', limit: 100 });
    // a cost budget: refused once spent
    const spent = await adm.admit(s, key('spender'), 1, { checkMonth: true });
    await spent.settle({ totalTokens: 1, costMicros: 1_000_000 });
    await expect(adm.admit(s, key('spender'), 1, { checkMonth: true })).rejects.toMatchObject({
      key: 'llm.monthly_cost',
      scope: 'api_key',
    });
    // checkMonth off (the downgrade's second admission): the key's budget is not what refuses
    await expect(adm.admit(s, key('spender'), 1, { checkMonth: false })).resolves.toBeDefined();
  });

  it("a stream is cut where llm-quota's count plus its own tokens cross the budget, though the gateway's counter starts lower (a key's budget set mid-month, a restart)", async () => {
    const store = createEmbeddedStore();
    const clock = new ManualClock('2026-11-24T10:00:00Z');
    const adm = instance(store, clock);
    // llm-quota counted 90 tokens of the month; this instance's counters hold none of them
    const s = settings(
      { 'llm.monthly_tokens': 100 },
      {
        month: { start: '2026-11-01T00:00:00.000Z', tokens: 90, cost: 0 },
        org_user_quotas: { overrides: {}, by_role: {}, by_api_key: { mid: { monthly_tokens: 100 } } },
        api_key_months: { mid: { tokens: 90, cost: 0 } },
      },
    );
    const org = await adm.admit(s, caller, 5, { checkMonth: true });
    // 90 + 5 reserved + 4 fits, 7 more does not
    expect(await org.streamed(4)).toBe(true);
    expect(await org.streamed(7)).toBe(false);
    expect(org.crossed).toEqual({ scope: 'org', limit: 100 });
    await org.settle({ totalTokens: 16, costMicros: 0 });

    const key = await adm.admit(
      { ...s, limits: {}, month: { ...s.month, tokens: 0 } },
      { orgSlug: 'acme', userId: null, roleSlug: null, apiKeyId: 'mid' },
      5,
      { checkMonth: true },
    );
    expect(await key.streamed(4)).toBe(true);
    expect(await key.streamed(7)).toBe(false);
    expect(key.crossed).toEqual({ scope: 'api_key', limit: 100 });
  });

  it('a request admitted before the month turns and settled after it counts in the month it settles in, as llm-quota counts its event: the month before gets its reservation back, none goes negative', async () => {
    const store = createEmbeddedStore();
    // one second before the next month begins (near the real time: see above)
    const now = new Date();
    const turn = Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1);
    const [before, after] = [monthKey(new Date(turn - 1)), monthKey(new Date(turn))];
    const clock = new ManualClock(turn - 1_000);
    const counters = countersFor(store, clock);
    const adm = new Admission({ limiters: counters, months: counters.months, clock });
    const s = settings({ 'llm.monthly_tokens': 100 });
    // a long prompt whose provider fails after midnight (nothing consumed), a short one answered after it (30 tokens)
    const failed = await adm.admit(s, caller, 90, { checkMonth: true });
    const answered = await adm.admit(s, caller, 5, { checkMonth: true });
    clock.advance(2_000);
    await failed.settle({ totalTokens: 0, costMicros: 0 });
    await answered.settle({ totalTokens: 30, costMicros: 0 });
    // the month before has its 95 reserved tokens back, and no more
    expect((await counters.months.add('acme', 0, 0, before)).tokens).toBe(0);
    // the new month holds the answer's 30 tokens, not 95 less: 70 more fit, and then nothing
    const next = { ...s, month: { start: `${after}-01T00:00:00.000Z`, tokens: 0, cost: 0 } };
    await adm.admit(next, caller, 70, { checkMonth: true });
    await expect(adm.admit(next, caller, 1, { checkMonth: true })).rejects.toMatchObject({
      key: 'llm.monthly_tokens',
      used: 100,
    });
    // the minutes are not months: the new month's first holds the 25 tokens used beyond the reservation, and the
    // 70 admitted in it; the unused 90 of the month's last minute are owed to no other
    expect((await counters.tokens.consume('acme', 0)).consumedPoints).toBe(95);
  });

  it('a stream that goes on past midnight counts in the new month, where its settlement will: its tokens move there, and its cut compares against that month', async () => {
    const store = createEmbeddedStore();
    const clock = new ManualClock('2026-11-30T23:59:58Z');
    const counters = countersFor(store, clock);
    const adm = new Admission({ limiters: counters, months: counters.months, clock });
    // llm-quota counted 25 tokens of November, of 50
    const s = settings(
      { 'llm.monthly_tokens': 50 },
      { month: { start: '2026-11-01T00:00:00.000Z', tokens: 25, cost: 0 } },
    );
    const stream = await adm.admit(s, caller, 10, { checkMonth: true });
    expect(await stream.streamed(10)).toBe(true);
    clock.advance(2_000);
    // another request has used 15 tokens of December
    const december = { ...s, month: { start: '2026-12-01T00:00:00.000Z', tokens: 0, cost: 0 } };
    await (await adm.admit(december, caller, 15, { checkMonth: true })).settle({
      totalTokens: 15,
      costMicros: 0,
    });
    // November's count cuts it no more: December's 15, the stream's 20 so far and 10 more fit its 50, 6 more do not
    expect(await stream.streamed(10)).toBe(true);
    expect(await stream.streamed(6)).toBe(false);
    expect(stream.crossed).toEqual({ scope: 'org', limit: 50 });
    await stream.settle({ totalTokens: 46, costMicros: 0 });
    expect((await counters.months.add('acme', 0, 0, '2026-11')).tokens).toBe(0);
    expect((await counters.months.add('acme', 0, 0, '2026-12')).tokens).toBe(61);
  });

  it('a store that fails to give the month before its reservation back still counts the request in the new month', async () => {
    const store = createEmbeddedStore();
    const clock = new ManualClock('2026-11-30T23:59:58Z');
    const counters = countersFor(store, clock);
    let refuseNovember = false;
    const months: QuotaCounters['months'] = {
      add: (org, tokens, costMicros, month) =>
        refuseNovember && month === '2026-11'
          ? Promise.reject(new Error('store unavailable'))
          : counters.months.add(org, tokens, costMicros, month),
    };
    const adm = new Admission({ limiters: counters, months, clock });
    const s = settings({ 'llm.monthly_tokens': 100 });
    const stream = await adm.admit(s, caller, 40, { checkMonth: true });
    const answer = await adm.admit(s, caller, 10, { checkMonth: true });
    clock.advance(3_000);
    refuseNovember = true;
    // the stream's first chunk after midnight and the answer's settlement move them to December all the same
    expect(await stream.streamed(5)).toBe(true);
    await answer.settle({ totalTokens: 20, costMicros: 0 });
    await stream.settle({ totalTokens: 60, costMicros: 0 });
    expect((await counters.months.add('acme', 0, 0, '2026-12')).tokens).toBe(80);
  });

  it("after the month turns, llm-quota's count of the month before (settings read then) floors nothing", async () => {
    const store = createEmbeddedStore();
    const clock = new ManualClock('2026-12-01T00:00:05Z');
    const adm = instance(store, clock);
    // read at 23:59:58 on November 30: llm-quota had counted November over both budgets
    const s = settings(
      { 'llm.monthly_tokens': 100, 'llm.monthly_cost': 1 },
      {
        month: { start: '2026-11-01T00:00:00.000Z', tokens: 150, cost: 2 },
        org_user_quotas: { overrides: {}, by_role: {}, by_api_key: { k: { monthly_tokens: 100 } } },
        api_key_months: { k: { tokens: 150, cost: 0 } },
      },
    );
    const org = await adm.admit(s, caller, 5, { checkMonth: true });
    // nor does it cut a stream of December
    expect(await org.streamed(50)).toBe(true);
    await org.settle({ totalTokens: 55, costMicros: 0 });
    const key: Caller = { orgSlug: 'acme', userId: null, roleSlug: null, apiKeyId: 'k' };
    await expect(adm.admit(s, key, 5, { checkMonth: true })).resolves.toBeDefined();
    // December's own use still counts
    await expect(adm.admit(s, caller, 50, { checkMonth: true })).rejects.toMatchObject({
      key: 'llm.monthly_tokens',
      used: 60,
    });
  });

  it("a refusal by the key's month gives back the organization's month its prompt reservation", async () => {
    const store = createEmbeddedStore();
    const clock = new ManualClock('2026-11-24T10:00:00Z');
    const counters = countersFor(store, clock);
    const adm = new Admission({ limiters: counters, months: counters.months, clock });
    const s = settings(
      { 'llm.monthly_tokens': 10_000 },
      { org_user_quotas: { overrides: {}, by_role: {}, by_api_key: { small: { monthly_tokens: 10 } } } },
    );
    const key: Caller = { orgSlug: 'acme', userId: null, roleSlug: null, apiKeyId: 'small' };
    await expect(adm.admit(s, key, 20, { checkMonth: true })).rejects.toMatchObject({ scope: 'api_key' });
    expect((await counters.months.add('acme', 0, 0)).tokens).toBe(0);
    expect((await counters.months.add('key:acme|small', 0, 0)).tokens).toBe(0);
  });
});
