import { randomBytes } from 'node:crypto';
import { runCli } from '@platform/operator-cli';
import { waitFor } from '@platform/testkit';
import jwt from 'jsonwebtoken';
import { callJson, runCliJson, startTestPlatform, type TestPlatform } from '../harness';

/** `pnpm platform keys list | revoke` against the real platform (decision 0102). */
describe('operator CLI: signing keys (pnpm platform keys)', () => {
  let platform: TestPlatform;
  let env: Record<string, string>;
  const secret = randomBytes(32).toString('base64url');

  const run = (...argv: string[]) => runCliJson(env, ...argv);
  const kidOf = (token: string) => jwt.decode(token, { complete: true })!.header.kid!;
  const jwksKids = async () =>
    (
      (await (await fetch(`${platform.baseUrl}/oidc/jwks`)).json()) as { keys: Array<{ kid: string }> }
    ).keys.map((k) => k.kid);

  beforeAll(async () => {
    platform = await startTestPlatform({ env: { PLATFORM_INTERNAL_SECRET: secret } });
    env = { AUTH_URL: platform.upstreams.auth, PLATFORM_INTERNAL_SECRET: secret };
  });
  afterAll(async () => {
    await platform.stop();
  });

  it('lists the keys: kid, state and dates, never key material', async () => {
    const listed = await run('keys', 'list');
    expect(listed.code).toBe(0);
    expect(listed.outcome.result).toBe('listed');
    const [only] = await jwksKids();
    expect(listed.outcome.data).toEqual([
      {
        kid: only,
        state: 'active',
        alg: 'RS256',
        createdAt: expect.any(String),
        activatesAt: expect.any(String),
        retiredAt: null,
        removeAfter: null,
        revokedAt: null,
      },
    ]);
    expect(JSON.stringify(listed.outcome)).not.toMatch(/PRIVATE|enc:v1|"d":|"n":/);
  });

  it('revokes a key: its tokens are refused through the edge, a new key signs; again: reported, not repeated', async () => {
    const login = await callJson(`${platform.baseUrl}/v2/login/anonymous`, 'POST');
    const token = login.body.token as string;
    const leaked = kidOf(token);
    expect((await callJson(`${platform.baseUrl}/v2/me`, 'GET', { bearer: token })).status).toBe(200);

    const revoked = await run('keys', 'revoke', leaked);
    expect(revoked).toMatchObject({
      code: 0,
      outcome: { result: 'revoked', data: { kid: leaked, state: 'active', withdrawn: [] } },
    });
    const signingKid = revoked.outcome.data.signingKid as string;
    expect(signingKid).not.toBe(leaked);
    expect(await jwksKids()).toEqual([signingKid]);
    await waitFor(
      async () => (await callJson(`${platform.baseUrl}/v2/me`, 'GET', { bearer: token })).status === 401,
      { what: 'the edge refusing the revoked key' },
    );
    const fresh = (await callJson(`${platform.baseUrl}/v2/login/anonymous`, 'POST')).body.token as string;
    expect(kidOf(fresh)).toBe(signingKid);
    expect((await callJson(`${platform.baseUrl}/v2/me`, 'GET', { bearer: fresh })).status).toBe(200);

    const again = await run('keys', 'revoke', leaked);
    expect(again).toMatchObject({ code: 0, outcome: { result: 'already_revoked', data: { signingKid } } });
    expect(await jwksKids()).toEqual([signingKid]);

    const listed = (await run('keys', 'list')).outcome.data as Array<{ kid: string; state: string }>;
    expect(listed.map((k) => [k.kid, k.state])).toEqual([
      [signingKid, 'active'],
      [leaked, 'revoked'],
    ]);
  });

  it('refuses an unknown kid (exit 1, naming it) and a missing one (usage, exit 2)', async () => {
    const unknown = await run('keys', 'revoke', 'no-such-kid');
    expect(unknown.code).toBe(1);
    expect(unknown.err).toMatch(/no signing key no-such-kid/);
    expect((await run('keys', 'revoke')).code).toBe(2);
    const noSecret = await runCli(
      ['keys', 'list'],
      { AUTH_URL: platform.upstreams.auth, DATA_DIR: `${platform.dataDir}/nowhere` },
      { out: () => undefined, err: () => undefined },
    );
    expect(noSecret).toBe(2);
  });
});
