import { costToMicros, microsToCost, percentOf } from './gauges';
import { BUILT_IN_PLANS } from './plans';
import { apiKeyLimit, effectiveUserLimit } from './user-limits';
import { counterId, countersBefore, minuteStart, monthStart, nextMonthStart, windowLabel } from './windows';

describe('windows (UTC, aligned)', () => {
  it('start at second 0 of the minute and midnight of the first of the month', () => {
    const at = new Date('2025-12-31T23:59:59.999Z');
    expect(minuteStart(at).toISOString()).toBe('2025-12-31T23:59:00.000Z');
    expect(monthStart(at).toISOString()).toBe('2025-12-01T00:00:00.000Z');
    expect(nextMonthStart(at).toISOString()).toBe('2026-01-01T00:00:00.000Z');
    // a time zone offset in the input changes nothing: windows are UTC
    expect(monthStart(new Date('2025-03-01T00:30:00+01:00')).toISOString()).toBe('2025-02-01T00:00:00.000Z');
    expect(windowLabel('minute', minuteStart(at))).toBe('2025-12-31T23:59');
    expect(windowLabel('month', monthStart(at))).toBe('2025-12');
  });

  it('give each counter an id no org slug or user id can collide with', () => {
    const start = new Date('2025-03-01Z');
    expect(counterId({ orgSlug: 'acme' }, 'month', start)).toBe('month|2025-03|org|acme');
    expect(counterId({ orgSlug: 'acme', userId: 'u|1' }, 'month', start)).toBe(
      'month|2025-03|user|acme|u%7C1',
    );
    expect(counterId({ orgSlug: 'a', userId: 'b|c' }, 'month', start)).not.toBe(
      counterId({ orgSlug: 'a|b', userId: 'c' }, 'month', start),
    );
  });

  it('select old minute counters by id range', () => {
    const range = countersBefore('minute', new Date('2025-03-15T12:00:30Z'));
    const id = (t: string) => counterId({ orgSlug: 'acme' }, 'minute', new Date(t));
    const inRange = (value: string) => value >= range.$gte && value < range.$lt;
    expect(inRange(id('2025-03-15T11:59:00Z'))).toBe(true);
    expect(inRange(id('2025-03-15T12:00:00Z'))).toBe(false);
    expect(inRange(counterId({ orgSlug: 'acme' }, 'month', new Date('2020-01-01Z')))).toBe(false);
  });
});

describe('percent', () => {
  it('rounds half up, shows 100 only once the limit is reached, and may pass 100', () => {
    expect(percentOf(0, 60)).toBe(0);
    expect(percentOf(3, 60)).toBe(5);
    expect(percentOf(1, 200)).toBe(1); // 0.5 rounds up
    expect(percentOf(1, 201)).toBe(0);
    expect(percentOf(999, 1000)).toBe(99); // 99.9 is not "full"
    expect(percentOf(1000, 1000)).toBe(100);
    expect(percentOf(1509, 1000)).toBe(150);
  });

  it('is not thrown off by binary floating point (113 % reads 113, 14.5 % rounds up)', () => {
    // (1130 / 1000) * 100 is 112.99999999999999 in binary floating point
    expect(percentOf(1130, 1000)).toBe(113);
    expect(percentOf(1_130_000, 1_000_000)).toBe(113);
    expect(percentOf(57, 50)).toBe(114);
    expect(percentOf(1.13, 1)).toBe(113); // a cost
    expect(percentOf(0.3, 0.1)).toBe(300);
    expect(percentOf(29, 200)).toBe(15); // 14.5 rounds half up
    expect(percentOf(0.29, 2)).toBe(15);
  });

  it('reads 100 for a zero limit: nothing is allowed', () => {
    expect(percentOf(0, 0)).toBe(100);
    expect(percentOf(5, 0)).toBe(100);
  });

  it('counts cost in exact millionths', () => {
    let micros = 0;
    for (let i = 0; i < 10; i++) micros += costToMicros(0.1);
    expect(microsToCost(micros)).toBe(1);
    expect(costToMicros(0.0000004)).toBe(0);
  });
});

describe('per-user limits', () => {
  const plan = BUILT_IN_PLANS.free!;
  const quotas = {
    overrides: { u1: { rpm: 5 } },
    by_role: { member: { rpm: 10, tpm: 1000 }, guest: { rpm: 0 } },
    by_api_key: { k1: { tpm: 500 } },
  };

  it('take the user override, then the role, then the plan default, field by field', () => {
    expect(effectiveUserLimit('rpm', quotas, plan, 'u1', 'member')).toEqual({ limit: 5, source: 'override' });
    expect(effectiveUserLimit('tpm', quotas, plan, 'u1', 'member')).toEqual({ limit: 1000, source: 'role' });
    expect(effectiveUserLimit('rpm', quotas, plan, 'u2', 'guest')).toEqual({ limit: 0, source: 'role' });
    expect(effectiveUserLimit('tpm', quotas, plan, 'u2', 'guest')).toEqual({ limit: 10_000, source: 'plan' });
    expect(effectiveUserLimit('rpm', quotas, plan, 'u2', null)).toEqual({ limit: 20, source: 'plan' });
  });

  it('are none when no level sets one, and ignore inherited object keys', () => {
    const bare = { ...plan, per_user_defaults: {} };
    const none = { overrides: {}, by_role: {}, by_api_key: {} };
    expect(effectiveUserLimit('rpm', none, bare, 'u', 'member')).toBeNull();
    expect(effectiveUserLimit('rpm', none, bare, 'constructor', 'toString')).toBeNull();
  });

  it("an API key's are its own entry, field by field, with no plan default", () => {
    expect(apiKeyLimit('tpm', quotas, 'k1')).toEqual({ limit: 500, source: 'override' });
    expect(apiKeyLimit('rpm', quotas, 'k1')).toBeNull();
    expect(apiKeyLimit('rpm', quotas, 'k2')).toBeNull();
    expect(apiKeyLimit('rpm', quotas, 'constructor')).toBeNull();
  });
});
