import { ManualClock } from '@platform/kernel';
import { createEmbeddedStore } from '@platform/store';
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
});
