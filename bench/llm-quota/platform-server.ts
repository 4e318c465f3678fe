/**
 * Child process of the endpoint benchmark: the whole platform (edge, auth, llm-quota, legacy-agent) as
 * `pnpm start` runs it, on the embedded store and the in-process bus, on the given port. It seeds
 * usage for the organization `bench-co` (events for the users listed in BENCH_USERS, once the parent
 * sends `seed` on stdin) so that the quota endpoint reads real counters. Prints `ready`, then `seeded`.
 * Usage: platform-server.ts <port> <dataDir>
 */
import { randomUUID } from 'node:crypto';
import { type Principal, permissionTree, Subjects } from '@platform/contracts';
import { PRINCIPAL_HEADER, sealPrincipal, silentLogger } from '@platform/kernel';
import { startPlatform } from '@platform/standalone';
import { waitFor } from '@platform/testkit';

const SEEDED = 5_000;

/** An organization key of bench-co, to read the counters from llm-quota directly (not through the edge). */
const reader: Principal = {
  credential: { kind: 'org_api_key', id: 'bench-reader', projectId: null },
  session: {
    id: null,
    org: {
      slug: 'bench-co',
      name: 'Bench',
      role: { slug: 'api-key', permissions: ['models:read'], scopes: [] },
      groups: [],
      settings: {},
      subscription: null,
    },
  },
  user: { id: null, email: null, anonymous: false, role: null },
  run: {
    permissions: permissionTree(['models:read']),
    scopes: [],
    correlationId: 'bench',
    sourceWorkspaceId: null,
  },
};

async function main() {
  const [port, dataDir] = process.argv.slice(2) as [string, string];
  const platform = await startPlatform({
    env: { ...process.env, DATA_DIR: dataDir, LOG_LEVEL: 'silent' },
    logger: silentLogger(),
    port: Number(port),
    host: '127.0.0.1',
  });
  console.log('ready');
  process.stdin.on('data', async (chunk: Buffer) => {
    const users = chunk.toString().trim().split(',');
    const now = new Date().toISOString();
    for (let i = 0; i < SEEDED; i++) {
      await platform.bus.publishDurable(Subjects.llmCompletion, {
        id: randomUUID(),
        version: 1,
        occurredAt: now,
        orgSlug: 'bench-co',
        userId: users[i % users.length],
        model: 'gpt-4o-mini',
        provider: 'openai',
        usage: { prompt_tokens: 40, completion_tokens: 10, total_tokens: 50 },
        cost: 0.0001,
      });
    }
    // Wait until llm-quota has counted them all, so that counting does not share the measurement.
    await waitFor(
      async () => {
        const res = await fetch(`${platform.upstreams.llmQuota}/v1/quotas/usage`, {
          headers: { [PRINCIPAL_HEADER]: sealPrincipal(reader, process.env.PLATFORM_INTERNAL_SECRET!) },
        });
        const body = (await res.json()) as { enforced: Array<{ key: string; used: number }> };
        return body.enforced.find((g) => g.key === 'llm.monthly_tokens')?.used === SEEDED * 50;
      },
      { timeoutMs: 120_000, intervalMs: 200, what: 'the seeded usage counted' },
    );
    console.log('seeded');
  });
  process.on('SIGINT', () => void platform.stop().then(() => process.exit(0)));
}

void main().catch((err) => {
  console.error(err);
  process.exit(1);
});
