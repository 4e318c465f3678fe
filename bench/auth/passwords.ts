/**
 * What a password sign-in costs: one scrypt hash at the default parameters (PASSWORD_SCRYPT_N=32768,
 * r=8, p=3: 32 MiB each) and at the OWASP baseline (2^17, 8, 1: 128 MiB), and a throttled (locked)
 * attempt, which is a store round trip and no hash. Sets the expectation for login capacity per core.
 *
 *   flock /tmp/bench.lock npx tsx bench/auth/passwords.ts
 */
import { ManualClock } from '@platform/kernel';
import { createEmbeddedStore } from '@platform/store';
import { hashPassword, verifyPassword } from '../../services/auth/src/accounts/passwords';
import {
  type RateCounterDoc,
  RateLimiterStorePort,
} from '../../services/auth/src/accounts/store-rate-limiter';

const N = Number(process.env.BENCH_ITERATIONS ?? 20);

async function timeIt(label: string, n: number, op: () => Promise<unknown>) {
  await op();
  const start = process.hrtime.bigint();
  for (let i = 0; i < n; i++) await op();
  const ms = Number(process.hrtime.bigint() - start) / 1e6 / n;
  console.log(
    `${label.padEnd(52)} ${ms.toFixed(2).padStart(9)} ms/op ${(1000 / ms).toFixed(0).padStart(7)} ops/s`,
  );
}

async function main() {
  for (const params of [
    { N: 32_768, r: 8, p: 3 },
    { N: 131_072, r: 8, p: 1 },
  ]) {
    const stored = await hashPassword('correct horse battery staple', params);
    await timeIt(`verify scrypt N=${params.N} r=${params.r} p=${params.p}`, N, () =>
      verifyPassword('correct horse battery staple', stored),
    );
  }
  const store = createEmbeddedStore();
  const limiter = new RateLimiterStorePort({
    collection: store.collection<RateCounterDoc>('rate_counters'),
    clock: new ManualClock(),
    keyPrefix: 'bench',
    points: 1,
    duration: 900,
    blockDuration: 900,
  });
  await limiter.consume('locked').catch(() => undefined);
  await limiter.consume('locked').catch(() => undefined);
  await timeIt('throttled attempt (embedded store, no hash)', 2000, () =>
    limiter.consume('locked').catch(() => undefined),
  );
  await store.close();
}

void main();
