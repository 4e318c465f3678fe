import { ManualClock } from '@platform/kernel';
import { createEmbeddedStore } from '@platform/store';
import { waitFor } from '@platform/testkit';
import { RateLimiterRes } from 'rate-limiter-flexible';
import { createStoreRateLimiter } from './store-rate-limiter';

const outcome = (p: Promise<unknown>) =>
  p.then(
    () => 'allowed',
    (err) => (err instanceof RateLimiterRes ? 'limited' : 'failed'),
  );

describe('a rate limiter counting in the store', () => {
  it('is shared by every limiter on one store (every auth instance), and resets after its window', async () => {
    const store = createEmbeddedStore();
    const clock = new ManualClock('2026-01-01T00:00:00Z');
    const options = { store, clock, keyPrefix: 'login', points: 3, durationSeconds: 60 };
    const instanceA = createStoreRateLimiter(options);
    const instanceB = createStoreRateLimiter(options);
    const results = await Promise.all(
      [instanceA, instanceB, instanceA, instanceB, instanceA].map((l) => outcome(l.consume('198.51.100.7'))),
    );
    expect(results.filter((r) => r === 'allowed')).toHaveLength(3);
    expect(results.filter((r) => r === 'limited')).toHaveLength(2);
    expect(await outcome(instanceB.consume('198.51.100.8'))).toBe('allowed');
    clock.advance(60_001);
    expect(await outcome(instanceB.consume('198.51.100.7'))).toBe('allowed');
    await store.close();
  });

  it('leaves idle counters to the store, an hour past their window, whatever the window', async () => {
    // the store's TTL sweep on a clock of its own, moved past the counter's time
    let storeNow = Date.now();
    const store = createEmbeddedStore({ ttlSweepIntervalMs: 10, now: () => storeNow });
    const clock = new ManualClock('2026-01-01T00:00:00Z');
    const counters = store.collection('rate_limits');
    for (const durationSeconds of [60, 600]) {
      const limiter = createStoreRateLimiter({
        store,
        clock,
        keyPrefix: `w${durationSeconds}`,
        points: 3,
        durationSeconds,
      });
      await limiter.consume('198.51.100.9');
    }
    expect(await counters.count({})).toBe(2);
    storeNow += (60 + 3600 + 5) * 1000;
    await waitFor(async () => (await counters.count({})) === 1, { what: 'the 60 s counter removed' });
    storeNow += 600 * 1000;
    await waitFor(async () => (await counters.count({})) === 0, { what: 'the 600 s counter removed' });
    await store.close();
  });
});
