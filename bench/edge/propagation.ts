/**
 * How fast auth's events reach the edges over NATS (issue 3: "a revoked credential is refused by every edge
 * within 1 s"): the whole platform on a real nats-server, a second edge on its own NATS connection, and N access
 * tokens each revoked through the first edge. Per revocation, the time from auth's answer to the DELETE until
 * each edge refuses the token (each edge asked back to back; its cache would keep the token 30 s otherwise).
 *
 *   npx tsx bench/edge/propagation.ts [revocations=100]
 */
import { randomBytes } from 'node:crypto';
import { startNatsServer } from '@platform/testkit';
import { callJson, startSecondEdge, startTestPlatform } from '../../test/harness';
import { delaySummary } from '../delays';

const N = Number(process.argv[2] ?? 100);
const GIVE_UP_MS = 10_000;

async function refusedAfter(base: string, token: string, since: number): Promise<number> {
  for (;;) {
    if ((await callJson(`${base}/v2/me`, 'GET', { bearer: token })).status === 401)
      return performance.now() - since;
    if (performance.now() - since > GIVE_UP_MS) throw new Error(`${base} still accepts a revoked token`);
  }
}

async function main() {
  const nats = await startNatsServer();
  const secret = randomBytes(32).toString('base64url');
  const platform = await startTestPlatform({ natsUrl: nats.url, env: { PLATFORM_INTERNAL_SECRET: secret } });
  const second = await startSecondEdge(platform, nats.url, secret);
  const edges = { first: platform.baseUrl, second: second.server.url };
  const times: Record<keyof typeof edges, number[]> = { first: [], second: [] };
  try {
    const session: string = (await callJson(`${platform.baseUrl}/v2/login/anonymous`, 'POST')).body.token;
    for (let i = 0; i < N; i++) {
      const created = await callJson(`${platform.baseUrl}/v2/user/accessTokens`, 'POST', {
        bearer: session,
        body: { name: `bench-${i}`, expiresAt: new Date(Date.now() + 3_600_000).toISOString() },
      });
      const token: string = created.body.token;
      // both edges have it cached
      for (const base of Object.values(edges))
        if ((await callJson(`${base}/v2/me`, 'GET', { bearer: token })).status !== 200)
          throw new Error('token refused before');
      const revoked = await callJson(
        `${platform.baseUrl}/v2/user/accessTokens/${created.body._id}`,
        'DELETE',
        {
          bearer: session,
        },
      );
      if (revoked.status >= 300) throw new Error(`revocation refused (${revoked.status})`);
      const at = performance.now();
      const [first, secondMs] = await Promise.all([
        refusedAfter(edges.first, token, at),
        refusedAfter(edges.second, token, at),
      ]);
      times.first.push(first);
      times.second.push(secondMs);
    }
  } finally {
    await second.stop();
    await platform.stop();
    await nats.dispose();
  }
  for (const [edge, ms] of Object.entries(times)) {
    console.log(`${edge} edge  ${delaySummary(ms)}`);
  }
  const late = [...times.first, ...times.second].filter((ms) => ms > 1_000).length;
  console.log(`refusals later than 1 s after the revocation's answer: ${late} of ${2 * N}`);
}

void main().then(
  () => process.exit(0),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);
