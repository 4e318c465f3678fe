import { randomBytes } from 'node:crypto';
import { runCli } from '@platform/operator-cli';
import { anonymousLogin, operatorCliEnv, runCliJson, startTestPlatform, type TestPlatform } from '../harness';

/**
 * `pnpm platform plan assign` names an organization that auth knows: llm-quota learns organizations from their
 * traffic only (decision 0017), so the CLI asks auth first and never gives a plan to a typo.
 */
describe('operator CLI: plan assign', () => {
  let platform: TestPlatform;
  let env: Record<string, string>;
  const secret = randomBytes(32).toString('base64url');

  const run = (...argv: string[]) => runCliJson(env, ...argv);
  const quotaSettings = (org: string) =>
    fetch(`${platform.upstreams.llmQuota}/internal/orgs/${org}/quota-settings`, {
      headers: { 'x-platform-internal-secret': secret },
    });

  beforeAll(async () => {
    platform = await startTestPlatform({ env: { PLATFORM_INTERNAL_SECRET: secret } });
    const operator = await anonymousLogin(platform);
    env = operatorCliEnv(platform, secret, operator.token);
  });
  afterAll(() => platform?.stop());

  it('refuses an organization that does not exist (exit 1, naming it), and llm-quota stores nothing for it', async () => {
    const ghost = await run('plan', 'assign', 'ghost-org', 'free');
    expect(ghost).toMatchObject({ code: 1, outcome: { result: 'failed', exitCode: 1 } });
    expect(ghost.err).toMatch(/ghost-org/);
    expect(ghost.err).toMatch(/no organization/i);
    expect((await quotaSettings('ghost-org')).status).toBe(404);
  });

  it('assigns a plan to an organization that exists, whoever its members are', async () => {
    const someone = await anonymousLogin(platform);
    const created = await fetch(`${platform.baseUrl}/v2/orgs`, {
      method: 'POST',
      headers: { authorization: `Bearer ${someone.token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ slug: 'plan-org', name: 'Plan Org' }),
    });
    expect(created.status).toBe(201);
    const assigned = await run('plan', 'assign', 'plan-org', 'free');
    expect(assigned).toMatchObject({ code: 0, outcome: { result: 'updated' } });
    expect((await quotaSettings('plan-org')).status).toBe(200);
  });

  it('needs auth to check the organization: without its URL, a usage error naming the setting', async () => {
    const { AUTH_URL: _unset, ...withoutAuth } = env;
    const out: string[] = [];
    const err: string[] = [];
    const code = await runCli(
      ['plan', 'assign', 'plan-org', 'free'],
      { ...withoutAuth, DATA_DIR: '/nonexistent' },
      {
        out: (l) => out.push(l),
        err: (l) => err.push(l),
      },
    );
    expect(code).toBe(2);
    expect(err.join('\n')).toMatch(/--auth-url or AUTH_URL/);
  });
});
