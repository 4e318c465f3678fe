import { runCli } from '@platform/operator-cli';
import { describeWithNats, type NatsServerHandle, startNatsServer, waitFor } from '@platform/testkit';
import * as oidc from 'openid-client';
import { startMailCatcher } from '../../services/auth/test/mail-catcher';
import {
  callJson,
  type JsonReply,
  startPlatformWithMail,
  startSecondEdge,
  startTestPlatform,
  type TestPlatform,
} from '../harness';
import { BrowserAgent, formFields } from '../support/browser-agent';

/**
 * Leaving for good, and closing an organization, as clients do it through the edge (decision 0099): every
 * credential of a deleted account is refused at once, a deleted organization's keys are refused by the gateway,
 * its slug is nobody's again, and racing writes leave nothing alive.
 */

const PASSWORD = 'correct horse battery';
const REDIRECT = 'http://127.0.0.1:7/callback';
let n = 0;
const unique = (prefix: string) => `${prefix}-${++n}-${Math.random().toString(36).slice(2, 7)}`;

describe('deleting accounts and organizations through the edge', () => {
  let p: TestPlatform;
  let mail: Awaited<ReturnType<typeof startMailCatcher>>;
  let base: string;
  let client: oidc.Configuration;
  const secret = 'deletion-e2e-internal-secret-0123456789abcdef';

  beforeAll(async () => {
    let cliEnv: Record<string, string>;
    ({ p, mail, base, cliEnv } = await startPlatformWithMail({
      secret,
      env: {
        JWKS_PUBLISH_DELAY_SECONDS: '0',
        ANONYMOUS_LOGIN_RATE_LIMIT: '1000',
        ACCOUNT_MAIL_RATE_LIMIT: '1000',
      },
    }));
    const io = { out: () => undefined, err: (l: string) => console.error(l) };
    const add = ['oidc-client', 'add', 'notes-app', '--redirect-uri', REDIRECT, '--name', 'Notes App'];
    expect(await runCli(add, cliEnv, io)).toBe(0);
    client = await oidc.discovery(new URL(`${base}/oidc`), 'notes-app', undefined, oidc.None(), {
      execute: [oidc.allowInsecureRequests],
    });
  });
  afterAll(async () => {
    await p.stop();
    await mail.close();
  });

  const api = (method: string, path: string, bearer?: string, body?: unknown): Promise<JsonReply> =>
    callJson(`${base}${path}`, method, { bearer, body });
  const withKey = (method: string, url: string, apiKey: string) => callJson(url, method, { apiKey });
  const signUp = async (email = `${unique('gone')}@example.com`) => {
    const s = await api('POST', '/v2/signup', undefined, { email, password: PASSWORD });
    expect(s.status).toBe(201);
    return { email, ...(s.body as { userId: string; token: string; refreshToken: string }) };
  };
  const anonymous = async () =>
    (await api('POST', '/v2/login/anonymous')).body as { userId: string; token: string };
  /** within the edge's revocation guarantee (the bus's delivery): a second, polled, not slept */
  const refusedSoon = (status: () => Promise<number>, what: string) =>
    waitFor(async () => (await status()) === 401, { timeoutMs: 10_000, intervalMs: 100, what });

  /**
   * Notes App signs the person in with code + PKCE, offline access and the platform API (`api`, decision 0109): an
   * access token and a refresh token.
   */
  async function signInToNotesApp(email: string) {
    const browser = new BrowserAgent(base);
    const verifier = oidc.randomPKCECodeVerifier();
    const state = oidc.randomState();
    const url = oidc.buildAuthorizationUrl(client, {
      redirect_uri: REDIRECT,
      scope: 'openid email offline_access api',
      code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
      state,
      prompt: 'consent',
    });
    const page = await browser.go(url.toString());
    const uid = /\/oidc\/interaction\/([^/"]+)\/login/.exec(page.text)![1]!;
    const consent = await browser.go(`/oidc/interaction/${uid}/login`, {
      method: 'POST',
      form: { ...formFields(page.text, `/oidc/interaction/${uid}/login`), email, password: PASSWORD },
    });
    const confirmUid = /\/oidc\/interaction\/([^/"]+)\/confirm/.exec(consent.text)![1]!;
    const callback = await browser.go(`/oidc/interaction/${confirmUid}/confirm`, {
      method: 'POST',
      form: formFields(consent.text, `/oidc/interaction/${confirmUid}/confirm`),
    });
    return oidc.authorizationCodeGrant(client, new URL(callback.url), {
      pkceCodeVerifier: verifier,
      expectedState: state,
    });
  }

  it('a deleted account: its session JWT (cached at the edge), at: token, refresh tokens and app tokens are refused at once; its email signs up anew', async () => {
    const person = await signUp();
    // the mail saying the account was deleted goes to a confirmed address only (decision 0103)
    await fetch(await mail.linkFor(person.email, '/account/verify-email'));
    const at = await api('POST', '/v2/user/accessTokens', person.token, {
      name: 'script',
      expiresAt: new Date(Date.now() + 86_400_000).toISOString(),
    });
    const app = await signInToNotesApp(person.email);
    const slug = unique('solo');
    expect((await api('POST', '/v2/orgs', person.token, { slug, name: 'Solo' })).status).toBe(201);
    const key = (
      await api('POST', `/v2/orgs/${slug}/apikeys`, person.token, {
        name: 'ci',
        permissions: ['models:read'],
      })
    ).body.apiKey as string;
    // every credential works, and the edge has each one verified and cached
    for (const bearer of [person.token, at.body.token, app.access_token])
      expect((await api('GET', '/v2/me', bearer)).status).toBe(200);
    expect((await withKey('GET', `${p.gatewayUrl}/v1/models`, key)).status).toBe(200);

    const needsPassword = await api('DELETE', '/v2/me', person.token);
    expect(needsPassword.body).toMatchObject({ status: 403, error: 'ReauthenticationRequired' });
    expect((await api('DELETE', '/v2/me', at.body.token, { password: PASSWORD })).status).toBe(403);
    expect((await api('DELETE', '/v2/me', app.access_token, { password: PASSWORD })).body).toMatchObject({
      status: 403,
      error: 'PlatformSessionRequired',
    });
    expect((await api('DELETE', '/v2/me', person.token, { password: PASSWORD })).status).toBe(204);

    // the JWT that made the request: refused on its very next request
    expect((await api('GET', '/v2/me', person.token)).status).toBe(401);
    await refusedSoon(
      async () => (await api('GET', '/v2/me', at.body.token)).status,
      'the at: token refused',
    );
    await refusedSoon(
      async () => (await api('GET', '/v2/me', app.access_token)).status,
      "the app's token refused",
    );
    await refusedSoon(
      async () => (await withKey('GET', `${p.gatewayUrl}/v1/models`, key)).status,
      'the org key refused',
    );
    expect(
      (await api('POST', '/v2/login/refresh', undefined, { refreshToken: person.refreshToken })).status,
    ).toBe(401);
    await expect(oidc.refreshTokenGrant(client, app.refresh_token!)).rejects.toThrow();
    expect(
      (await api('POST', '/v2/login', undefined, { email: person.email, password: PASSWORD })).status,
    ).toBe(401);
    const mailed = await waitFor(() =>
      mail.mails.find((m) => m.to.includes(person.email) && /deleted/.test(m.raw)),
    );
    expect(mailed.raw).toContain('Your account was deleted');

    // the organization only they belonged to is gone, its slug nobody's
    const other = await anonymous();
    expect((await api('POST', '/v2/orgs', other.token, { slug, name: 'Mine now' })).body).toMatchObject({
      status: 409,
      error: 'OrgSlugTaken',
    });

    // the address is free at once: a new person, who inherits nothing
    const again = await signUp(person.email);
    expect(again.userId).not.toBe(person.userId);
    expect((await api('GET', '/v2/me', again.token)).body).toMatchObject({
      email: person.email,
      memberships: [],
    });
    expect((await api('GET', '/v2/me', person.token)).status).toBe(401);
  });

  it('is refused with 409 while the person is the last owner of an organization others belong to', async () => {
    const person = await signUp();
    const colleague = await anonymous();
    const slug = unique('team');
    await api('POST', '/v2/orgs', person.token, { slug, name: 'Team' });
    await api('POST', `/v2/orgs/${slug}/members`, person.token, { userId: colleague.userId, role: 'member' });
    const refused = await api('DELETE', '/v2/me', person.token, { password: PASSWORD });
    expect(refused.status).toBe(409);
    expect(refused.body).toMatchObject({
      error: 'LastOwner',
      details: { organizations: [{ slug, name: 'Team', members: 2 }] },
    });
    expect(refused.body.message).toContain(slug);
    expect((await api('GET', '/v2/me', person.token)).status).toBe(200);
    await api('POST', `/v2/orgs/${slug}/members`, person.token, { userId: colleague.userId, role: 'owner' });
    expect((await api('DELETE', '/v2/me', person.token, { password: PASSWORD })).status).toBe(204);
    expect((await api('GET', `/v2/orgs/${slug}/members`, colleague.token)).body).toEqual([
      expect.objectContaining({ userId: colleague.userId, role: 'owner' }),
    ]);
  });

  it('an organization renamed is read with its new name; deleted, its keys are refused by the gateway, its members lose it, its slug stays taken', async () => {
    const owner = await anonymous();
    const member = await anonymous();
    const slug = unique('acme');
    await api('POST', '/v2/orgs', owner.token, { slug, name: 'Acme' });
    await api('POST', `/v2/orgs/${slug}/members`, owner.token, { userId: member.userId, role: 'member' });
    expect((await api('PUT', '/v2/user/active-org', member.token, { orgSlug: slug })).body).toMatchObject({
      activeOrgSlug: slug,
      activeOrgSource: 'session',
    });
    const key = (
      await api('POST', `/v2/orgs/${slug}/apikeys`, owner.token, { name: 'ci', permissions: ['models:read'] })
    ).body.apiKey as string;
    expect((await withKey('GET', `${p.gatewayUrl}/v1/models`, key)).status).toBe(200);
    expect((await withKey('GET', `${p.gatewayUrl}/v1/quotas/usage`, key)).status).toBe(200);
    expect((await api('GET', '/llm/v1/quotas/usage', member.token)).body.orgSlug).toBe(slug);

    expect((await api('PATCH', `/v2/orgs/${slug}`, member.token, { name: 'Mine' })).body).toMatchObject({
      status: 403,
      error: 'OwnerOnly',
    });
    const renamed = await api('PATCH', `/v2/orgs/${slug}`, owner.token, { name: 'Acme Robotics' });
    expect(renamed.body).toMatchObject({ slug, name: 'Acme Robotics' });
    expect((await api('GET', `/v2/orgs/${slug}`, member.token)).body).toMatchObject({
      slug,
      name: 'Acme Robotics',
    });
    expect((await api('GET', '/v2/me', member.token)).body.memberships[0]).toMatchObject({
      orgName: 'Acme Robotics',
    });

    expect((await api('DELETE', `/v2/orgs/${slug}`, member.token)).status).toBe(403);
    expect((await api('DELETE', `/v2/orgs/${slug}`, owner.token)).status).toBe(204);

    await refusedSoon(
      async () => (await withKey('GET', `${p.gatewayUrl}/v1/models`, key)).status,
      'the key refused',
    );
    expect((await api('GET', `/v2/orgs/${slug}`, owner.token)).body).toMatchObject({
      status: 404,
      error: 'OrgNotFound',
    });
    expect((await api('GET', '/v2/me', member.token)).body).toMatchObject({
      activeOrgSlug: null,
      memberships: [],
    });
    expect((await api('GET', '/llm/v1/quotas/usage', member.token)).body.error).toBe('NO_ORG_CONTEXT');
    expect((await api('POST', '/v2/orgs', member.token, { slug, name: 'Squat' })).body).toMatchObject({
      status: 409,
      error: 'OrgSlugTaken',
      details: { reason: 'deleted' },
    });
    // llm-quota learned of it: its settings are served to no one, not even an operator
    await waitFor(async () => {
      const res = await fetch(`${p.upstreams.llmQuota}/internal/orgs/${slug}/quota-settings`, {
        headers: { 'x-platform-internal-secret': secret },
      });
      return res.status === 404 && ((await res.json()) as { error: string }).error === 'OrgDeleted';
    });
  });

  it('keys and members added while the organization is deleted never work (racing requests)', async () => {
    const owner = await anonymous();
    const slug = unique('race');
    await api('POST', '/v2/orgs', owner.token, { slug, name: 'Race' });
    const people = await Promise.all(Array.from({ length: 10 }, () => anonymous()));
    const keys = Array.from({ length: 10 }, (_, i) =>
      api('POST', `/v2/orgs/${slug}/apikeys`, owner.token, { name: `k${i}`, permissions: ['models:read'] }),
    );
    const adds = people.map((x) =>
      api('POST', `/v2/orgs/${slug}/members`, owner.token, { userId: x.userId, role: 'member' }),
    );
    const deletion = api('DELETE', `/v2/orgs/${slug}`, owner.token);
    const [minted, added, deleted] = await Promise.all([Promise.all(keys), Promise.all(adds), deletion]);
    expect(deleted.status).toBe(204);
    expect(minted.every((r) => [201, 404].includes(r.status))).toBe(true);
    expect(added.every((r) => [201, 404].includes(r.status))).toBe(true);
    for (const r of minted.filter((x) => x.status === 201))
      await refusedSoon(
        async () => (await withKey('GET', `${p.gatewayUrl}/v1/models`, r.body.apiKey)).status,
        'a raced key',
      );
    for (const x of people) expect((await api('GET', '/v2/me', x.token)).body.memberships).toEqual([]);
  });

  it('access tokens minted while the account is deleted never work (racing requests)', async () => {
    const person = await signUp();
    const expiresAt = new Date(Date.now() + 86_400_000).toISOString();
    const minting = Array.from({ length: 10 }, (_, i) =>
      api('POST', '/v2/user/accessTokens', person.token, { name: `t${i}`, expiresAt }),
    );
    const deletion = api('DELETE', '/v2/me', person.token, { password: PASSWORD });
    const [tokens, deleted] = await Promise.all([Promise.all(minting), deletion]);
    expect(deleted.status).toBe(204);
    for (const t of tokens.filter((r) => r.status === 201))
      await refusedSoon(async () => (await api('GET', '/v2/me', t.body.token)).status, 'a raced token');
  });
});

describeWithNats('two edges on one NATS: a deletion through one is obeyed by both', () => {
  const secret = 'deletion-nats-internal-secret-0123456789abcdef';
  let nats: NatsServerHandle;
  let p: TestPlatform;
  let second: Awaited<ReturnType<typeof startSecondEdge>>;
  beforeAll(async () => {
    nats = await startNatsServer();
    p = await startTestPlatform({ natsUrl: nats.url, env: { PLATFORM_INTERNAL_SECRET: secret } });
    second = await startSecondEdge(p, nats.url, secret);
  });
  afterAll(async () => {
    await second.stop();
    await p.stop();
    await nats.dispose();
  });

  // Both edges hold the session JWT verified and its principal cached for up to a minute: only auth's event, over
  // NATS, explains a refusal by the second edge before then (the same event a logout or a revocation sends).
  it("the deleted person's session JWT and the deleted organization's key are refused by the other edge too", async () => {
    const edges = [p.baseUrl, second.server.url];
    const person = (await callJson(`${p.baseUrl}/v2/login/anonymous`, 'POST')).body as { token: string };
    const owner = (await callJson(`${p.baseUrl}/v2/login/anonymous`, 'POST')).body as { token: string };
    const slug = unique('nats-org');
    await callJson(`${p.baseUrl}/v2/orgs`, 'POST', { bearer: owner.token, body: { slug, name: 'Nats' } });
    const key = (
      await callJson(`${p.baseUrl}/v2/orgs/${slug}/apikeys`, 'POST', {
        bearer: owner.token,
        body: { name: 'ci', permissions: ['models:read'] },
      })
    ).body.apiKey as string;
    const me = (base: string) => async () =>
      (await callJson(`${base}/v2/me`, 'GET', { bearer: person.token })).status;
    const quota = (base: string) => async () =>
      (await callJson(`${base}/llm/v1/quotas/usage`, 'GET', { apiKey: key })).status;
    for (const base of edges) {
      expect(await me(base)()).toBe(200);
      expect(await quota(base)()).toBe(200);
    }

    expect((await callJson(`${p.baseUrl}/v2/me`, 'DELETE', { bearer: person.token })).status).toBe(204);
    expect((await callJson(`${p.baseUrl}/v2/orgs/${slug}`, 'DELETE', { bearer: owner.token })).status).toBe(
      204,
    );
    await Promise.all(
      edges.flatMap((base) => [
        waitFor(async () => (await me(base)()) === 401, {
          timeoutMs: 10_000,
          what: `${base} to refuse the JWT`,
        }),
        waitFor(async () => (await quota(base)()) === 401, {
          timeoutMs: 10_000,
          what: `${base} to refuse the key`,
        }),
      ]),
    );
  });
});
