import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { runCli } from '@platform/operator-cli';
import { tempDir } from '@platform/testkit';
import { anonymousLogin, operatorCliEnv, runCliJson, startTestPlatform, type TestPlatform } from '../harness';

/** The operator CLI against the real platform: every command, twice, to show it is idempotent. */
describe('operator CLI (pnpm platform)', () => {
  let platform: TestPlatform;
  let env: Record<string, string>;
  const secret = randomBytes(32).toString('base64url');

  const run = (...argv: string[]) => runCliJson(env, ...argv);
  const login = () => anonymousLogin(platform);

  beforeAll(async () => {
    platform = await startTestPlatform({ env: { PLATFORM_INTERNAL_SECRET: secret } });
    const operator = await login();
    env = operatorCliEnv(platform, secret, operator.token);
  });
  afterAll(async () => {
    await platform.stop();
  });

  it('creates an organization once, then reports that it exists', async () => {
    const first = await run('org', 'create', 'cli-org', '--name', 'CLI Org');
    expect(first).toMatchObject({ code: 0, outcome: { result: 'created', data: { slug: 'cli-org' } } });
    const again = await run('org', 'create', 'cli-org', '--name', 'CLI Org');
    expect(again).toMatchObject({ code: 0, outcome: { result: 'exists', data: { slug: 'cli-org' } } });
  });

  it('adds a member once, then reports the membership', async () => {
    const someone = await login();
    const first = await run('member', 'add', 'cli-org', someone.userId, '--role', 'member');
    expect(first).toMatchObject({ code: 0, outcome: { result: 'created' } });
    expect((await run('member', 'add', 'cli-org', someone.userId)).outcome.result).toBe('exists');
    const members = await fetch(`${platform.baseUrl}/v2/orgs/cli-org/members`, {
      headers: { authorization: `Bearer ${env.PLATFORM_TOKEN}` },
    });
    expect(JSON.stringify(await members.json())).toContain(someone.userId);
  });

  it('member add run again without --role keeps the role (an owner is not reset to member); another --role is updated', async () => {
    const someone = await login();
    const member = (...more: string[]) => run('member', 'add', 'cli-org', someone.userId, ...more);
    expect((await member('--role', 'owner')).outcome).toMatchObject({
      result: 'created',
      data: { role: 'owner' },
    });
    expect(await member()).toMatchObject({ code: 0, outcome: { result: 'exists', data: { role: 'owner' } } });
    expect(await member('--role', 'member')).toMatchObject({
      code: 0,
      outcome: { result: 'updated', data: { role: 'member' } },
    });
    expect((await member('--role', 'member')).outcome).toMatchObject({
      result: 'exists',
      data: { role: 'member' },
    });
  });

  it('member add --role by a caller who may add members but not list them adds the member', async () => {
    const owner = { authorization: `Bearer ${env.PLATFORM_TOKEN}`, 'content-type': 'application/json' };
    const role = await fetch(`${platform.baseUrl}/v2/orgs/cli-org/roles/recruiter`, {
      method: 'PUT',
      headers: owner,
      body: JSON.stringify({ permissions: ['members:manage'] }),
    });
    expect(role.status).toBeLessThan(300);
    const recruiter = await login();
    expect((await run('member', 'add', 'cli-org', recruiter.userId, '--role', 'recruiter')).code).toBe(0);
    const someone = await login();
    const added = await runCliJson(
      { ...env, PLATFORM_TOKEN: recruiter.token },
      'member',
      'add',
      'cli-org',
      someone.userId,
      '--role',
      'recruiter',
    );
    expect(added).toMatchObject({
      code: 0,
      outcome: { data: { userId: someone.userId, role: 'recruiter' } },
    });
  });

  it("member add with a role the organization has not names the organization's roles (built-in and custom), or only the refusal to a caller who may not list them", async () => {
    const owner = { authorization: `Bearer ${env.PLATFORM_TOKEN}`, 'content-type': 'application/json' };
    const role = await fetch(`${platform.baseUrl}/v2/orgs/cli-org/roles/auditor`, {
      method: 'PUT',
      headers: owner,
      body: JSON.stringify({ permissions: ['members:read'] }),
    });
    expect(role.status).toBeLessThan(300);
    const someone = await login();
    const unknown = await run('member', 'add', 'cli-org', someone.userId, '--role', 'admin');
    expect(unknown).toMatchObject({ code: 1, outcome: { result: 'failed', exitCode: 1 } });
    expect(unknown.err).toMatch(
      /^Adding the member failed \(400\): Unknown role admin \(request id [\w.:-]+\)\nThe roles of cli-org: owner, member, guest, (\S+, )*auditor(, \S+)*$/,
    );
    // the recruiter (members:manage alone, made above) may not list the roles: the refusal alone
    const recruiter = await login();
    expect((await run('member', 'add', 'cli-org', recruiter.userId, '--role', 'recruiter')).code).toBe(0);
    const unlisted = await runCliJson(
      { ...env, PLATFORM_TOKEN: recruiter.token },
      'member',
      'add',
      'cli-org',
      someone.userId,
      '--role',
      'admin',
    );
    expect(unlisted.code).toBe(1);
    expect(unlisted.err).toMatch(
      /^Adding the member failed \(400\): Unknown role admin \(request id [\w.:-]+\)$/,
    );
  });

  it('assigns a plan, and refuses an unknown one', async () => {
    const plans = (await (
      await fetch(`${platform.upstreams.llmQuota}/internal/plans`, {
        headers: { 'x-platform-internal-secret': secret },
      })
    ).json()) as { plans: Record<string, unknown> };
    const plan = Object.keys(plans.plans).at(-1)!;
    const assigned = await run('plan', 'assign', 'cli-org', plan);
    expect(assigned.code).toBe(0);
    expect(JSON.stringify(assigned.outcome.data)).toContain(plan);
    expect((await run('plan', 'assign', 'cli-org', plan)).code).toBe(0);
    const unknown = await run('plan', 'assign', 'cli-org', 'no-such-plan');
    expect(unknown.code).toBe(1);
    expect(unknown.err).toMatch(/no-such-plan/);
  });

  it('issues an organization API key once (shown once), then reports it exists without the secret', async () => {
    const first = await run('apikey', 'issue', 'cli-org', '--name', 'ci', '--permission', 'models:read');
    expect(first.code).toBe(0);
    expect(first.outcome.data.apiKey).toMatch(/^iak_cli-org_/);
    const again = await run('apikey', 'issue', 'cli-org', '--name', 'ci', '--permission', 'models:read');
    expect(again.outcome.result).toBe('exists');
    expect(JSON.stringify(again.outcome)).not.toContain('iak_');
    const usage = await fetch(`${platform.gatewayUrl}/v1/quotas/usage`, {
      headers: { 'x-platform-api-key': first.outcome.data.apiKey },
    });
    expect(usage.status).toBe(200);
  });

  it('rotates the signing keys: a new key is published at once, a second call does not stack keys', async () => {
    const kids = async () =>
      (
        (await (await fetch(`${platform.baseUrl}/oidc/jwks`)).json()) as { keys: Array<{ kid: string }> }
      ).keys.map((k) => k.kid);
    const before = await kids();
    const rotated = await run('keys', 'rotate');
    expect(rotated).toMatchObject({ code: 0, outcome: { result: 'started' } });
    const pending = rotated.outcome.data.pendingKid as string;
    expect(before).not.toContain(pending);
    expect(await kids()).toContain(pending);
    const again = await run('keys', 'rotate');
    expect(again.outcome).toMatchObject({ result: 'pending', data: { pendingKid: pending } });
    expect((await kids()).length).toBe(before.length + 1);
  });

  it('sso add says what became of the client secret and the organization; --no-client-secret and --no-org remove them', async () => {
    const sso = (...more: string[]) =>
      run('sso', 'add', 'cli-idp', '--issuer', 'https://idp.example', '--client-id', 'platform', ...more);
    expect((await run('org', 'create', 'cli-sso-org')).code).toBe(0);
    expect(await sso('--client-secret', 'company-secret', '--org', 'cli-sso-org')).toMatchObject({
      code: 0,
      outcome: {
        result: 'created',
        data: { orgSlug: 'cli-sso-org', hasClientSecret: true, client_secret: 'set' },
      },
    });
    // renamed, neither given: both kept, and said so (before: the data alone, no word of the secret)
    const lines: string[] = [];
    const io = { out: (l: string) => lines.push(l), err: (l: string) => lines.push(l) };
    const renamed = ['sso', 'add', 'cli-idp', '--issuer', 'https://idp.example', '--client-id', 'platform'];
    expect(await runCli([...renamed, '--name', 'CLI IdP'], env, io)).toBe(0);
    expect(lines.slice(1)).toEqual([
      'client secret: stored (kept the stored one)',
      'organization: cli-sso-org (kept the stored one)',
    ]);
    expect(JSON.parse(lines[0]!.replace(/^updated: /, ''))).toMatchObject({
      orgSlug: 'cli-sso-org',
      hasClientSecret: true,
      client_secret: 'kept',
    });
    expect((await sso('--name', 'CLI IdP')).outcome).toMatchObject({
      result: 'exists',
      data: { orgSlug: 'cli-sso-org', client_secret: 'kept' },
    });
    // pointed at another issuer (or client id) without a secret: refused, the company's secret is never sent there
    // (before: `updated`, client secret kept)
    const moved = await run(
      'sso',
      'add',
      'cli-idp',
      '--issuer',
      'https://other-idp.example',
      '--client-id',
      'platform',
    );
    expect(moved.code).toBe(1);
    expect(moved.err).toContain('issuer or client id changed');
    // before: unknown options (exit 2), nothing said the secret or the organization could be removed
    expect(await sso('--name', 'CLI IdP', '--no-client-secret', '--no-org')).toMatchObject({
      code: 0,
      outcome: {
        result: 'updated',
        data: { orgSlug: null, hasClientSecret: false, client_secret: 'removed' },
      },
    });
    lines.length = 0;
    expect(await runCli([...renamed, '--name', 'CLI IdP', '--no-client-secret'], env, io)).toBe(0);
    expect(lines.slice(1)).toEqual([
      'client secret: none (public client)',
      "organization: none (the platform's provider, kept)",
    ]);
    expect((await sso('--name', 'CLI IdP', '--no-client-secret')).outcome).toMatchObject({
      result: 'exists',
      data: { client_secret: 'none' },
    });
    expect(
      (await run('sso', 'add', 'cli-idp-2', '--issuer', 'https://idp.example', '--client-id', 'p')).outcome,
    ).toMatchObject({
      result: 'created',
      data: { orgSlug: null, hasClientSecret: false, client_secret: 'none' },
    });
  });

  it('oidc-client add run again without --confidential or --name keeps the secret and the name; --public drops the secret', async () => {
    const add = ['oidc-client', 'add', 'cli-app', '--redirect-uri', 'https://app.example/cb'];
    const created = await run(...add, '--confidential', '--name', 'App');
    expect(created.outcome).toMatchObject({
      result: 'created',
      data: { name: 'App', tokenEndpointAuthMethod: 'client_secret_post' },
    });
    const secret = created.outcome.data.clientSecret as string;
    expect(secret).toEqual(expect.any(String));

    // its redirect URIs changed, --confidential forgotten (before: made public, the secret and the name gone)
    const lines: string[] = [];
    const io = { out: (l: string) => lines.push(l), err: (l: string) => lines.push(l) };
    const moved = [...add, '--redirect-uri', 'https://app.example/cb2'];
    expect(await runCli(moved, env, io)).toBe(0);
    expect(lines.slice(1)).toEqual(['confidential, secret kept']);
    const kept = JSON.parse(lines[0]!.replace(/^updated: /, ''));
    expect(kept).toMatchObject({ name: 'App', tokenEndpointAuthMethod: 'client_secret_post' });
    expect(kept.clientSecret).toBeUndefined();
    expect((await run(...moved, '--confidential')).outcome.result).toBe('exists');

    lines.length = 0;
    expect(await runCli([...moved, '--public'], env, io)).toBe(0);
    expect(lines.slice(1)).toEqual(['public']);
    expect(JSON.parse(lines[0]!.replace(/^updated: /, ''))).toMatchObject({
      name: 'App',
      tokenEndpointAuthMethod: 'none',
    });
    // made confidential again: a new secret, the application must be given it
    lines.length = 0;
    expect(await runCli([...moved, '--confidential'], env, io)).toBe(0);
    const renewed = JSON.parse(lines[0]!.replace(/^updated: /, ''));
    expect(renewed.clientSecret).toEqual(expect.any(String));
    expect(renewed.clientSecret).not.toBe(secret);
    expect(lines.slice(1)).toEqual([
      'confidential: a new client secret (clientSecret above), shown this once: give it to the application',
    ]);
  });

  it('oidc-client add --rotate-secret replaces a leaked secret, shown once, the client confidential throughout', async () => {
    const add = ['oidc-client', 'add', 'cli-rotated-app', '--redirect-uri', 'https://app.example/cb'];
    const leaked = (await run(...add, '--confidential')).outcome.data.clientSecret as string;
    // the token endpoint through the edge: a wrong secret is invalid_client, a right one gets to the (missing) code
    const redeemWith = async (clientSecret: string) =>
      (
        (await (
          await fetch(`${platform.baseUrl}/oidc/token`, {
            method: 'POST',
            body: new URLSearchParams({
              grant_type: 'authorization_code',
              code: 'not-a-code',
              redirect_uri: 'https://app.example/cb',
              client_id: 'cli-rotated-app',
              client_secret: clientSecret,
            }),
          })
        ).json()) as { error: string }
      ).error;
    expect(await redeemWith(leaked)).toBe('invalid_grant');

    // before: an unknown option (exit 2); --public then --confidential left the client public in between
    const lines: string[] = [];
    const io = { out: (l: string) => lines.push(l), err: (l: string) => lines.push(l) };
    expect(await runCli([...add, '--rotate-secret'], env, io)).toBe(0);
    const rotated = JSON.parse(lines[0]!.replace(/^updated: /, ''));
    expect(rotated).toMatchObject({ tokenEndpointAuthMethod: 'client_secret_post' });
    expect(rotated.clientSecret).toEqual(expect.any(String));
    expect(rotated.clientSecret).not.toBe(leaked);
    expect(lines.slice(1)).toEqual([
      'confidential: a new client secret (clientSecret above), shown this once: give it to the application',
    ]);
    expect(await redeemWith(leaked)).toBe('invalid_client');
    expect(await redeemWith(rotated.clientSecret)).toBe('invalid_grant');
    // run again without it: kept, not shown
    expect((await run(...add)).outcome).toMatchObject({
      result: 'exists',
      data: { tokenEndpointAuthMethod: 'client_secret_post' },
    });

    // a public client has no secret: auth refuses (exit 1, naming the field); with --public, a usage error
    await run('oidc-client', 'add', 'cli-public-app', '--redirect-uri', 'https://app.example/cb');
    const refused = await run(
      'oidc-client',
      'add',
      'cli-public-app',
      '--redirect-uri',
      'https://app.example/cb',
      '--rotate-secret',
    );
    expect(refused).toMatchObject({ code: 1, outcome: { result: 'failed' } });
    expect(refused.err).toContain('rotateSecret: a public client has no secret to rotate');
    expect((await run(...add, '--rotate-secret', '--public')).code).toBe(2);
    expect(await redeemWith(rotated.clientSecret)).toBe('invalid_grant');
  });

  it("oidc-client add without --redirect-uri keeps a client's redirect URIs (a secret rotated alone); a new client needs one", async () => {
    const uris = ['https://app.example/cb', 'https://app.example/cb2'];
    const add = ['oidc-client', 'add', 'cli-kept-uris-app'];
    expect(
      (await run(...add, '--redirect-uri', uris[0]!, '--redirect-uri', uris[1]!, '--confidential')).outcome,
    ).toMatchObject({ result: 'created', data: { redirectUris: uris } });
    // before: a usage error (exit 2), so a rotation in a hurry that named one URI dropped the other
    const rotated = await run(...add, '--rotate-secret');
    expect(rotated).toMatchObject({
      code: 0,
      outcome: {
        result: 'updated',
        data: {
          redirectUris: uris,
          tokenEndpointAuthMethod: 'client_secret_post',
          clientSecret: expect.any(String),
        },
      },
    });
    expect((await run(...add)).outcome).toMatchObject({ result: 'exists', data: { redirectUris: uris } });
    // the application still signs in at each of them, through the edge
    for (const uri of uris) {
      const query = new URLSearchParams({
        client_id: 'cli-kept-uris-app',
        redirect_uri: uri,
        response_type: 'code',
        scope: 'openid',
      });
      const started = await fetch(`${platform.baseUrl}/oidc/auth?${query}`, { redirect: 'manual' });
      expect([uri, started.status]).toEqual([uri, 303]);
    }

    // a new client has none to keep: auth's 400 names the field (exit 1), nothing registered
    const refused = await run('oidc-client', 'add', 'cli-no-uris-app', '--confidential');
    expect(refused).toMatchObject({ code: 1, outcome: { result: 'failed' } });
    expect(refused.err).toContain('redirectUris: ');
    expect(
      (await run('oidc-client', 'add', 'cli-no-uris-app', '--redirect-uri', uris[0]!)).outcome.result,
    ).toBe('created');
  });

  it('oidc-client add run again without --post-logout-redirect-uri keeps the logout redirects; --no-post-logout-redirect-uri clears them', async () => {
    const bye = 'https://app.example/signed-out';
    const add = ['oidc-client', 'add', 'cli-logout-app', '--redirect-uri', 'https://app.example/cb'];
    // the application's logout, through the edge
    const signOut = async () =>
      (
        await fetch(
          `${platform.baseUrl}/oidc/session/end?${new URLSearchParams({ client_id: 'cli-logout-app', post_logout_redirect_uri: bye })}`,
        )
      ).status;
    expect((await run(...add, '--post-logout-redirect-uri', bye)).outcome).toMatchObject({
      result: 'created',
      data: { postLogoutRedirectUris: [bye] },
    });
    expect(await signOut()).toBe(200);

    // its redirect URIs changed (before: the logout redirects cleared, the application's logout refused)
    const moved = [...add, '--redirect-uri', 'https://app.example/cb2'];
    expect((await run(...moved)).outcome).toMatchObject({
      result: 'updated',
      data: { postLogoutRedirectUris: [bye] },
    });
    expect(await signOut()).toBe(200);

    expect((await run(...moved, '--no-post-logout-redirect-uri')).outcome).toMatchObject({
      result: 'updated',
      data: { postLogoutRedirectUris: [] },
    });
    expect(await signOut()).toBe(400);
    expect(
      (await run(...moved, '--no-post-logout-redirect-uri', '--post-logout-redirect-uri', bye)).code,
    ).toBe(2);
  });

  it('explains usage errors and missing credentials with exit code 2', async () => {
    expect(await runCli(['--help'], {}, { out: () => undefined, err: () => undefined })).toBe(0);
    expect((await run('org', 'launch')).code).toBe(2);
    const lines: string[] = [];
    const code = await runCli(
      ['org', 'create', 'x1'],
      { PLATFORM_URL: platform.baseUrl, DATA_DIR: '/nonexistent' },
      {
        out: () => undefined,
        err: (l) => lines.push(l),
      },
    );
    expect(code).toBe(2);
    expect(lines.join('\n')).toMatch(/PLATFORM_TOKEN/);
  });

  it("shows a refusal with the platform's message and its request id (what the logs are searched by)", async () => {
    const refused = await run('member', 'add', 'no-such-org', 'someone');
    expect(refused.code).toBe(1);
    const requestId = /\(request id ([\w.:-]+)\)$/.exec(refused.err)?.[1];
    expect(refused.err).toMatch(
      /^Listing the members failed \(404\): Organization no-such-org does not exist \(request id /,
    );
    expect(requestId).toEqual(expect.any(String));
    const internalRefusal = await runCliJson({ ...env, PLATFORM_INTERNAL_SECRET: 'wrong' }, 'keys', 'list');
    expect(internalRefusal.err).toMatch(
      /^Listing the signing keys failed \(401\): .+ \(request id [\w.:-]+\)$/,
    );
  });

  it('names the fix when the platform refuses the token (a session ended or revoked), whichever command met it', async () => {
    for (const argv of [
      ['org', 'create', 'cli-org'],
      ['providers', 'list'],
    ]) {
      const refused = await runCliJson({ ...env, PLATFORM_TOKEN: 'ended-session' }, ...argv);
      expect(refused.code).toBe(1);
      expect(refused.err).toMatch(
        /^Authenticating with the operator credential failed \(401\): .+ \(request id [\w.:-]+\) \(sign in again, and give the new token in --token or PLATFORM_TOKEN\)$/,
      );
    }
  });

  it('with --json, prints a failure as JSON on stdout too (a refusal, a usage error, a wrong flag)', async () => {
    const refused = await run('member', 'add', 'no-such-org', 'someone');
    expect(refused).toMatchObject({ code: 1, outcome: { result: 'failed', exitCode: 1 } });
    expect(refused.outcome.error).toBe(refused.err);
    expect(await run('org', 'create')).toMatchObject({
      code: 2,
      outcome: {
        result: 'failed',
        exitCode: 2,
        error: 'Usage: pnpm platform org create <slug> [--name NAME]',
      },
    });
    const none = await run();
    expect(none).toMatchObject({
      code: 2,
      outcome: { result: 'failed', exitCode: 2, error: 'No command given (pnpm platform --help lists them)' },
    });
    expect(none.err).toContain('Usage: pnpm platform <command>');
    expect(await run('org', 'create', 'x1', '--bogus')).toMatchObject({
      code: 2,
      outcome: { result: 'failed', exitCode: 2, error: expect.stringMatching(/^Unknown option '--bogus'/) },
    });
  });

  it('names a malformed URL as a usage error (exit 2, no stack trace), whichever flag or variable gave it', async () => {
    const attempt = async (argv: string[], extra: Record<string, string>) => {
      const lines: string[] = [];
      const code = await runCli(
        argv,
        { DATA_DIR: '/nonexistent', PLATFORM_TOKEN: 't', ...extra },
        {
          out: () => undefined,
          err: (l) => lines.push(l),
        },
      );
      return { code, said: lines[0] };
    };
    expect(await attempt(['org', 'create', 'x1'], { PLATFORM_URL: 'localhost:8080' })).toEqual({
      code: 2,
      said: expect.stringMatching(/^PLATFORM_URL must be an http:\/\/ or https:\/\/ URL/),
    });
    expect(await attempt(['--url', 'not a url', 'org', 'create', 'x1'], {})).toEqual({
      code: 2,
      said: expect.stringMatching(/^--url is not a URL/),
    });
    expect(
      await attempt(['keys', 'rotate'], { AUTH_URL: 'auth:8081', PLATFORM_INTERNAL_SECRET: secret }),
    ).toEqual({ code: 2, said: expect.stringMatching(/^AUTH_URL /) });
  });

  it('reads the services and the secret of a local pnpm start from DATA_DIR/standalone.json, an empty variable being unset', async () => {
    const data = tempDir('cli-hints-');
    try {
      writeFileSync(
        `${data.dir}/standalone.json`,
        JSON.stringify({
          authUrl: platform.upstreams.auth,
          llmQuotaUrl: platform.upstreams.llmQuota,
          internalSecret: secret,
        }),
      );
      writeFileSync(`${data.dir}/standalone.lock`, `${process.pid}\n`);
      // as a shell that sourced an .env file with `PLATFORM_INTERNAL_SECRET=` and `AUTH_URL=` has them
      const listed = await runCliJson(
        { DATA_DIR: data.dir, PLATFORM_INTERNAL_SECRET: '', AUTH_URL: '' },
        'keys',
        'list',
      );
      expect(listed).toMatchObject({ code: 0, outcome: { result: 'listed' } });
    } finally {
      data.remove();
    }
  });

  it("finds a local pnpm start's edge in DATA_DIR/standalone.json (its PORT, its gateway root), unless PLATFORM_URL names another", async () => {
    const data = tempDir('cli-hints-edge-');
    try {
      writeFileSync(
        `${data.dir}/standalone.json`,
        JSON.stringify({
          baseUrl: platform.baseUrl,
          gatewayUrl: platform.gatewayUrl,
          internalSecret: secret,
        }),
      );
      writeFileSync(`${data.dir}/standalone.lock`, `${process.pid}\n`);
      const token = env.PLATFORM_TOKEN!;
      const created = await runCliJson(
        { DATA_DIR: data.dir, PLATFORM_TOKEN: token },
        'org',
        'create',
        'from-hints',
      );
      expect(created).toMatchObject({ code: 0, outcome: { result: 'created' } });
      // the gateway root too: a platform administrator's command reaches llm-gateway (refused, not unreachable)
      const providers = await runCliJson({ DATA_DIR: data.dir, PLATFORM_TOKEN: token }, 'providers', 'list');
      expect(providers.err).toMatch(/^Listing the providers failed \(403/);
      // another platform named: the local edge is not used for it
      const closed = createServer().listen(0, '127.0.0.1');
      await once(closed, 'listening');
      const { port } = closed.address() as AddressInfo;
      closed.close();
      const elsewhere = await runCliJson(
        { DATA_DIR: data.dir, PLATFORM_TOKEN: token, PLATFORM_URL: `http://127.0.0.1:${port}` },
        'providers',
        'list',
      );
      expect(elsewhere.err).toContain(`Cannot reach http://127.0.0.1:${port}`);
    } finally {
      data.remove();
    }
  });

  it('ignores the DATA_DIR/standalone.json of a pnpm start that is gone (killed with SIGKILL, its lock held by no one)', async () => {
    const data = tempDir('cli-hints-stale-');
    try {
      writeFileSync(
        `${data.dir}/standalone.json`,
        JSON.stringify({ authUrl: platform.upstreams.auth, internalSecret: secret }),
      );
      writeFileSync(`${data.dir}/standalone.lock`, `${spawnSync(process.execPath, ['-e', '']).pid}\n`);
      const listed = await runCliJson({ DATA_DIR: data.dir }, 'keys', 'list');
      expect(listed.code).toBe(2);
      expect(listed.err).toMatch(/^This command talks to auth directly: --auth-url or AUTH_URL/);
    } finally {
      data.remove();
    }
  });

  it('says why a service cannot be reached (the connection error, not "fetch failed")', async () => {
    const closed = createServer().listen(0, '127.0.0.1');
    await once(closed, 'listening');
    const { port } = closed.address() as AddressInfo;
    closed.close();
    const lines: string[] = [];
    const code = await runCli(
      ['keys', 'rotate'],
      { DATA_DIR: '/nonexistent', AUTH_URL: `http://127.0.0.1:${port}`, PLATFORM_INTERNAL_SECRET: secret },
      { out: () => undefined, err: (l) => lines.push(l) },
    );
    expect(code).toBe(1);
    expect(lines.join('\n')).toBe(
      `Cannot reach http://127.0.0.1:${port}: connect ECONNREFUSED 127.0.0.1:${port}`,
    );
  });

  it('names a service that takes the request and never answers (a paused process), after --timeout, instead of waiting on', async () => {
    const silent = createServer(() => undefined).listen(0, '127.0.0.1');
    await once(silent, 'listening');
    const url = `http://127.0.0.1:${(silent.address() as AddressInfo).port}`;
    try {
      const elsewhere = { ...env, PLATFORM_URL: url, PLATFORM_GATEWAY_URL: url, AUTH_URL: url };
      for (const [argv, call] of [
        [['keys', 'list', '--timeout', '1'], 'GET /internal/signing-keys'],
        [['org', 'create', 'x1', '--timeout', '1'], 'POST /v2/orgs'],
      ] as const) {
        const answered = await runCliJson(elsewhere, ...argv);
        expect(answered).toMatchObject({ code: 1, outcome: { result: 'failed', exitCode: 1 } });
        expect(answered.err).toBe(
          `${url} did not answer ${call} within 1 s (stopped or overloaded? --timeout SECONDS waits longer)`,
        );
      }
      const fromEnv = await runCliJson({ ...elsewhere, PLATFORM_TIMEOUT: '1' }, 'providers', 'list');
      expect(fromEnv.err).toMatch(new RegExp(`^${url} did not answer GET /v1/providers within 1 s`));
      for (const [bad, extra] of [
        [['--timeout', '0'], {}],
        [[], { PLATFORM_TIMEOUT: '30s' }],
      ] as const) {
        const refused = await runCliJson({ ...elsewhere, ...extra }, 'keys', 'list', ...bad);
        expect(refused).toMatchObject({ code: 2, outcome: { result: 'failed', exitCode: 2 } });
        expect(refused.err).toMatch(/^(--timeout|PLATFORM_TIMEOUT) is a whole number of seconds, 1 to 86400/);
      }
    } finally {
      silent.closeAllConnections();
      silent.close();
    }
  });

  it('refuses a web page answering 200 (another server on that URL): exit 1 naming it, never done, never a stack trace', async () => {
    const page = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/html' });
      res.end('<html>another app</html>');
    }).listen(0, '127.0.0.1');
    await once(page, 'listening');
    const url = `http://127.0.0.1:${(page.address() as AddressInfo).port}`;
    try {
      const elsewhere = {
        ...env,
        PLATFORM_URL: url,
        PLATFORM_GATEWAY_URL: url,
        AUTH_URL: url,
        LLM_QUOTA_URL: url,
      };
      for (const argv of [
        ['keys', 'revoke', 'some-kid'],
        ['admin', 'grant', 'someone'],
        ['apikey', 'issue', 'cli-org', '--name', 'ci'],
        ['models', 'export'],
      ]) {
        const answered = await runCliJson(elsewhere, ...argv);
        expect({ argv, code: answered.code, result: answered.outcome.result }).toEqual({
          argv,
          code: 1,
          result: 'failed',
        });
        expect(answered.err).toMatch(
          new RegExp(
            `^${url} is not the platform: it answered (GET|POST|PUT) /\\S+ with 200 text/html, not JSON`,
          ),
        );
      }
    } finally {
      page.close();
    }
  });

  it('refuses another JSON service answering 200 on that URL: exit 1 naming it, never listed, done or a stack trace', async () => {
    const other = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{"ok":true}');
    }).listen(0, '127.0.0.1');
    await once(other, 'listening');
    const url = `http://127.0.0.1:${(other.address() as AddressInfo).port}`;
    try {
      const elsewhere = {
        ...env,
        PLATFORM_URL: url,
        PLATFORM_GATEWAY_URL: url,
        AUTH_URL: url,
        LLM_QUOTA_URL: url,
      };
      for (const argv of [
        ['keys', 'list'],
        ['keys', 'rotate'],
        ['keys', 'revoke', 'some-kid'],
        ['member', 'add', 'cli-org', 'someone'],
        ['apikey', 'issue', 'cli-org', '--name', 'ci'],
        ['oidc-client', 'add', 'app', '--redirect-uri', 'https://app.example/cb'],
        ['sso', 'add', 'acme', '--issuer', 'https://idp.example', '--client-id', 'platform'],
        ['providers', 'list'],
        ['providers', 'add', 'p', '--type', 'mock'],
        ['models', 'export'],
        ['org', 'allow', 'cli-org', '--all'],
      ]) {
        const answered = await runCliJson(elsewhere, ...argv);
        expect({ argv, code: answered.code, result: answered.outcome.result }).toEqual({
          argv,
          code: 1,
          result: 'failed',
        });
        expect(answered.err).toMatch(
          new RegExp(
            `^${url} is not the platform: it answered (GET|POST|PUT|PATCH) /\\S+ with 200 and JSON the platform does not answer`,
          ),
        );
      }
    } finally {
      other.close();
    }
  });

  it('says when an answer is cut short (the service went away while answering), not a stack trace', async () => {
    const cutting = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': '100' });
      res.write('{"keys": [', () => res.socket?.destroy());
    }).listen(0, '127.0.0.1');
    await once(cutting, 'listening');
    const { port } = cutting.address() as AddressInfo;
    try {
      const lines: string[] = [];
      const code = await runCli(
        ['keys', 'list'],
        { DATA_DIR: '/nonexistent', AUTH_URL: `http://127.0.0.1:${port}`, PLATFORM_INTERNAL_SECRET: secret },
        { out: () => undefined, err: (l) => lines.push(l) },
      );
      expect({ code, said: lines.join('\n') }).toEqual({
        code: 1,
        said: `The answer of http://127.0.0.1:${port} was cut short: other side closed`,
      });
    } finally {
      cutting.close();
    }
  });
});
