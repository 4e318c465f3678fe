/**
 * Auth benchmark: the edge's cache-miss path (`POST /internal/principal` for a session, an access token
 * and an organization API key, each in an organization), the anonymous login (RS256 signing with a cached
 * KeyObject plus two store writes) and the JWKS. Auth runs alone in a child process on the embedded store;
 * autocannon drives it over loopback with keep-alive.
 *
 *   flock /tmp/bench.lock npx tsx bench/auth/run.ts      # BENCH_SECONDS=5, BENCH_CONNECTIONS=20
 *
 * Stops by itself; prints the figures to stdout.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Principal } from '@platform/contracts';
import { sealPrincipal } from '@platform/kernel';
import { freePort } from '@platform/testkit';

// biome-ignore lint/suspicious/noExplicitAny: autocannon ships no types
const autocannon = require('autocannon') as any;

const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 20);
const SECRET = 'bench-internal-secret-0123456789abcdefghijkl';
/** run only scenarios whose name contains this text */
const ONLY = process.env.BENCH_ONLY;
/** write a CPU profile of auth into this folder */
const PROFILE_DIR = process.env.BENCH_PROFILE_DIR;

async function main() {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'auth-bench-'));
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const nodeArgs = PROFILE_DIR ? ['--cpu-prof', `--cpu-prof-dir=${PROFILE_DIR}`] : [];
  const child: ChildProcess = spawn(
    process.execPath,
    [...nodeArgs, '--import', 'tsx', path.join(__dirname, 'server.ts'), String(port), dir],
    {
      env: { ...process.env, PLATFORM_INTERNAL_SECRET: SECRET, ANONYMOUS_LOGIN_RATE_LIMIT: '100000000' },
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  try {
    await new Promise<void>((resolve, reject) => {
      child.stdout!.on('data', (d: Buffer) => d.toString().includes('ready') && resolve());
      child.once('exit', (code) => reject(new Error(`auth exited (${code})`)));
    });

    // Seed: a user with a session, an organization, an access token and an organization key.
    const post = async (p: string, body: unknown, headers: Record<string, string> = {}) => {
      const res = await fetch(`${base}${p}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...headers },
        body: JSON.stringify(body),
      });
      return (await res.json()) as Record<string, string> & { principal: Principal };
    };
    const login = await post('/v2/login/anonymous', {});
    const session = { kind: 'session', userId: login.userId, sessionId: login.sessionId };
    const asUser = async () => {
      const { principal } = await post(
        '/internal/principal',
        { credential: session },
        { 'x-platform-internal-secret': SECRET },
      );
      return {
        'x-platform-principal': sealPrincipal(principal, SECRET),
        'x-platform-user-id': login.userId!,
      };
    };
    await post('/v2/orgs', { slug: 'bench-org', name: 'Bench' }, await asUser());
    const token = (
      await post(
        '/v2/user/accessTokens',
        { name: 'b', expiresAt: new Date(Date.now() + 86_400_000).toISOString() },
        await asUser(),
      )
    ).token!;
    const orgKey = (
      await post('/v2/orgs/bench-org/apikeys', { name: 'b', permissions: ['models:read'] }, await asUser())
    ).apiKey!;

    const internal = (credential: unknown) => ({
      method: 'POST',
      path: '/internal/principal',
      headers: { 'content-type': 'application/json', 'x-platform-internal-secret': SECRET },
      body: JSON.stringify({ credential, orgSlug: 'bench-org' }),
    });
    const scenarios: Array<[string, Record<string, unknown>]> = [
      ['POST /internal/principal (session)', internal(session)],
      ['POST /internal/principal (access token)', internal({ kind: 'access_token', token })],
      ['POST /internal/principal (org API key)', internal({ kind: 'api_key', key: orgKey })],
      ['POST /v2/login/anonymous', { method: 'POST', path: '/v2/login/anonymous' }],
      ['GET /oidc/jwks', { method: 'GET', path: '/oidc/jwks' }],
      // /healthz is on the admin port now: an unknown route is the express floor (a 404 in the envelope).
      ['GET /nowhere (express 404 floor, for scale)', { method: 'GET', path: '/nowhere' }],
    ];
    console.log(
      `auth benchmark: ${SECONDS}s per scenario, ${CONNECTIONS} connections, loopback, embedded store\n`,
    );
    console.log('scenario                                  req/s    p50 ms  p99 ms  non-2xx');
    for (const [name, request] of scenarios) {
      if (ONLY && !name.includes(ONLY)) continue;
      await autocannon({ url: base, connections: CONNECTIONS, duration: 1, requests: [request] }); // warm-up (JIT)
      const result = await autocannon({
        url: base,
        connections: CONNECTIONS,
        duration: SECONDS,
        requests: [request],
      });
      console.log(
        `${name.padEnd(40)} ${String(Math.round(result.requests.average)).padStart(7)} ${String(result.latency.p50).padStart(8)} ${String(result.latency.p99).padStart(7)} ${String(result.non2xx).padStart(8)}`,
      );
    }
  } finally {
    child.kill('SIGINT');
    await new Promise((resolve) => child.once('exit', resolve));
    rmSync(dir, { recursive: true, force: true });
  }
}

void main().catch((err) => {
  console.error(err);
  process.exit(1);
});
