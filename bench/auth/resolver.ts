/**
 * In-process figures for the hot paths, without HTTP: principal resolution (what POST /internal/principal
 * does) with 100 and with 20,000 users, to show it is index-backed (flat as data grows), and session JWT
 * signing with the cached KeyObject.
 *
 *   flock /tmp/bench.lock npx tsx bench/auth/resolver.ts
 */
import { createInProcessBus } from '@platform/bus';
import { loadConfig, silentLogger, systemClock } from '@platform/kernel';
import { createEmbeddedStore } from '@platform/store';
import { authConfigSchema } from '../../services/auth/src';
import type { CredentialToResolve } from '../../services/auth/src/domain/credential-introspection';
import { newAccessToken, sha256Hex } from '../../services/auth/src/domain/secrets';
import { signSessionToken } from '../../services/auth/src/domain/sessions';
import { createAuthServiceForTests } from '../../services/auth/src/testing';

const ITERATIONS = Number(process.env.BENCH_ITERATIONS ?? 5000);

async function timeIt(label: string, n: number, op: () => Promise<unknown>) {
  for (let i = 0; i < Math.min(500, n); i++) await op(); // warm-up
  const start = process.hrtime.bigint();
  for (let i = 0; i < n; i++) await op();
  const us = Number(process.hrtime.bigint() - start) / 1000 / n;
  console.log(
    `${label.padEnd(58)} ${us.toFixed(1).padStart(8)} µs/op ${Math.round(1e6 / us)
      .toString()
      .padStart(8)} ops/s`,
  );
}

async function scenario(users: number) {
  const config = loadConfig(authConfigSchema, {
    PLATFORM_INTERNAL_SECRET: 's'.repeat(40),
    LOG_LEVEL: 'silent',
  });
  const store = createEmbeddedStore();
  const service = await createAuthServiceForTests({
    config,
    clock: systemClock,
    logger: silentLogger(),
    store,
    bus: createInProcessBus(),
  });
  await service.start();
  const c = service.context.collections;
  const now = new Date();
  const later = new Date(Date.now() + 86_400_000);
  const orgs = Math.max(1, Math.floor(users / 10));
  for (let o = 0; o < orgs; o++) {
    await c.orgs.insertOne({
      _id: `org${o}`,
      slug: `org-${o}`,
      name: `Org ${o}`,
      createdAt: now,
      createdBy: 'u0',
      settings: {},
      subscription: null,
    });
  }
  let token = '';
  for (let u = 0; u < users; u++) {
    await c.users.insertOne({ _id: `u${u}`, anonymous: true, email: null, createdAt: now });
    await c.sessions.insertOne({
      _id: `s${u}`,
      userId: `u${u}`,
      clientId: 'x',
      activeOrgSlug: null,
      createdAt: now,
      expiresAt: later,
      revokedAt: null,
    });
    await c.memberships.insertOne({
      _id: `m${u}`,
      orgId: `org${u % orgs}`,
      orgSlug: `org-${u % orgs}`,
      userId: `u${u}`,
      role: 'member',
      createdAt: now,
    });
    token = newAccessToken();
    await c.accessTokens.insertOne({
      _id: `t${u}`,
      userId: `u${u}`,
      name: 't',
      tokenHash: sha256Hex(token),
      activeOrgSlug: null,
      createdAt: now,
      expiresAt: later,
      revokedAt: null,
    });
  }
  const last = users - 1;
  const session: CredentialToResolve = { kind: 'session', userId: `u${last}`, sessionId: `s${last}` };
  await timeIt(`resolve session, path org (${users} users)`, ITERATIONS, () =>
    service.context.introspection.resolve(session, `org-${last % orgs}`, 'r'),
  );
  await timeIt(`resolve access token, active org (${users} users)`, ITERATIONS, () =>
    service.context.introspection.resolve({ kind: 'access_token', token }, null, 'r'),
  );
  const sessionDoc = (await c.sessions.findOne({ _id: `s${last}` }))!;
  await timeIt('sign a session JWT (RS256, cached KeyObject)', ITERATIONS, () =>
    signSessionToken(service.context, sessionDoc, 'openid'),
  );
  await service.stop();
  await store.close();
}

async function main() {
  console.log(`auth in-process figures, ${ITERATIONS} iterations each, embedded store in memory\n`);
  await scenario(100);
  await scenario(20_000);
}

void main();
