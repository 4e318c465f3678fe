import { ManualClock } from '@platform/kernel';
import type { CatalogueModel } from '../catalogue/catalogue';
import { ProviderError, ProviderTimeoutError } from '../providers';
import { DeploymentBalancer, isDeploymentFault } from './deployment-balancer';

/** a model's pool: one deployment per weight, on providers p0, p1, ... */
function poolOf(...weights: number[]): CatalogueModel[] {
  const pool: CatalogueModel[] = [];
  weights.forEach((weight, i) => {
    pool.push({
      model_id: 'acme/model',
      providerName: `p${i}`,
      weight,
      health: { coolUntil: 0 },
      pool,
    } as unknown as CatalogueModel);
  });
  return pool;
}

const failure = (
  upstreamStatus: number | null,
  extra: { retryAfterSeconds?: number; retryable?: boolean } = {},
) =>
  new ProviderError({
    provider: 'p0',
    model: 'm',
    upstreamStatus,
    providerErrorType: 'x',
    retryable: extra.retryable ?? true,
    retryAfterSeconds: extra.retryAfterSeconds ?? null,
    message: 'failed',
  });

/** a draw that returns the given numbers in turn */
const draws = (...values: number[]) => {
  let i = 0;
  return () => values[i++ % values.length]!;
};

describe('which deployment a request calls', () => {
  const clock = new ManualClock(new Date('2026-01-01T00:00:00Z'));
  const balancer = (random: () => number = Math.random) =>
    new DeploymentBalancer({ clock, windowMs: 10_000, maxMs: 60_000, random });

  it('draws by weight: a deployment of weight 3 takes the first three quarters of the draw', () => {
    const b = balancer(draws(0, 0.5, 0.74, 0.75, 0.99));
    const pool = poolOf(3, 1);
    expect([0, 1, 2, 3, 4].map(() => b.pick(pool, 0))).toEqual([0, 0, 0, 1, 1]);
  });

  it('leaves out the deployments the request already tried, and those cooling down', () => {
    const b = balancer(draws(0));
    const pool = poolOf(1, 1, 1);
    expect(b.pick(pool, 0b001)).toBe(1);
    expect(b.failed(pool[1]!, failure(503))).toBe(true);
    expect(b.pick(pool, 0b001)).toBe(2);
    expect(b.hasFresh(pool, 0b101)).toBe(false);
    clock.advance(10_001);
    expect(b.pick(pool, 0b001)).toBe(1);
  });

  it('when every deployment is cooling down, calls the one back soonest rather than refusing', () => {
    const b = balancer();
    const pool = poolOf(1, 1, 1);
    b.failed(pool[0]!, failure(429, { retryAfterSeconds: 30 }));
    b.failed(pool[1]!, failure(500));
    clock.advance(1);
    b.failed(pool[2]!, failure(500));
    expect(b.hasFresh(pool, 0)).toBe(false);
    // p1 failed before p2 with the same window; p0's Retry-After keeps it out longest
    expect(b.pick(pool, 0)).toBe(1);
    expect(b.pick(pool, 0b111)).toBe(1);
    clock.advance(60_000);
  });

  it("honours a provider's Retry-After up to the bound, and a later, shorter failure does not shorten a cooldown", () => {
    const b = balancer(draws(0));
    const pool = poolOf(1, 1);
    const start = clock.now().getTime();
    b.failed(pool[0]!, failure(429, { retryAfterSeconds: 3600 }));
    expect(pool[0]!.health.coolUntil).toBe(start + 60_000);
    b.failed(pool[0]!, failure(429, { retryAfterSeconds: 1 }));
    expect(pool[0]!.health.coolUntil).toBe(start + 60_000);
    b.failed(pool[1]!, failure(429, { retryAfterSeconds: 2 }));
    expect(pool[1]!.health.coolUntil).toBe(start + 2_000);
    clock.advance(60_000);
  });

  it("cools down on the deployment's own faults only, and never a model of one deployment", () => {
    const b = balancer();
    const pool = poolOf(1, 1);
    for (const request of [
      failure(400, { retryable: false }),
      failure(401, { retryable: false }),
      new Error('x'),
    ])
      expect(b.failed(pool[0]!, request)).toBe(false);
    expect(pool[0]!.health.coolUntil).toBe(0);
    // OpenAI's out-of-credit 429 says x-should-retry: false; another key may have credit
    expect(isDeploymentFault(failure(429, { retryable: false }))).toBe(true);
    expect(isDeploymentFault(failure(null))).toBe(true);
    expect(isDeploymentFault(new ProviderTimeoutError('p0', 'm', 100, false))).toBe(true);
    const alone = poolOf(1);
    expect(b.failed(alone[0]!, failure(503))).toBe(false);
    expect(alone[0]!.health.coolUntil).toBe(0);
  });

  it('a model of one deployment neither draws nor reads the clock', () => {
    const b = new DeploymentBalancer({
      clock: {
        now: () => {
          throw new Error('read the clock');
        },
      },
      windowMs: 1,
      maxMs: 1,
      random: () => {
        throw new Error('drew');
      },
    });
    const alone = poolOf(1);
    alone[0]!.health.coolUntil = 1;
    expect(b.pick(alone, 0)).toBe(0);
  });
});
