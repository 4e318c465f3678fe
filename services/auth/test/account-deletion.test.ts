import { Subjects } from '@platform/contracts';
import { sealPrincipal } from '@platform/kernel';
import { createEmbeddedStore } from '@platform/store';
import { tempDir } from '@platform/testkit';
import * as OTPAuth from 'otpauth';
import { Mfa } from '../src/accounts/mfa';
import { hashPassword } from '../src/accounts/passwords';
import { openUserSession } from '../src/accounts/sessions';
import type { UserDoc } from '../src/data/collections';
import { newId } from '../src/domain/secrets';
import { openOidcModels } from '../src/oidc/store-adapter';
import { openSsoCollections, SsoClients } from '../src/sso/providers';
import { userForIdentity } from '../src/sso/sign-in';
import {
  type Actor,
  type AuthHarness,
  INTERNAL_SECRET,
  randomAddress,
  recordEvents,
  startAuth,
  type UserActor,
} from './helpers';
import { startMailCatcher } from './mail-catcher';
import { storeWithInsertGate } from './store-gate';

/** DELETE /v2/me at the service (the edge's part is played by the harness; test/e2e has it through the edge). */

const PASSWORD = 'correct horse battery';
let n = 0;
const unique = (prefix: string) => `${prefix}-${++n}-${Math.random().toString(36).slice(2, 7)}`;

describe('deleting one’s own account', () => {
  const folder = tempDir('auth-account-deletion-');
  const gated = storeWithInsertGate(createEmbeddedStore({ dataDir: folder.dir, compactionIntervalMs: 0 }));
  let h: AuthHarness;
  beforeAll(async () => {
    h = await startAuth({
      store: gated.store,
      env: { PASSWORD_SCRYPT_N: '1024', PASSWORD_SCRYPT_P: '1', ACCOUNT_MAIL_RATE_LIMIT: '1000' },
    });
  });
  afterAll(async () => {
    await h.stop();
    await gated.store.close();
    folder.remove();
  });

  const col = () => h.service.context.collections;

  /** An SSO provider as an operator configures one: of organization `orgSlug`, or the platform's own (null). */
  const ssoProvider = (orgSlug: string | null) => {
    const now = h.clock.now();
    return {
      _id: unique('idp'),
      name: 'Acme SSO',
      issuer: 'https://sso.example.com',
      clientId: 'platform',
      clientSecret: null,
      orgSlug,
      createdAt: now,
      updatedAt: now,
    };
  };

  /** A user without a password, who signs in as `sub` at a new SSO provider of the platform's. */
  async function ssoOnlyUser(label: string, sub: string, fields: Partial<UserDoc> = {}) {
    const c = h.service.context;
    const now = h.clock.now();
    const user: UserDoc = {
      _id: newId(),
      anonymous: false,
      email: `${unique(label)}@example.com`,
      createdAt: now,
      ...fields,
    };
    await c.collections.users.insertOne(user);
    const sso = openSsoCollections(c.store);
    const provider = ssoProvider(null);
    await sso.providers.insertOne(provider);
    await sso.identities.insertOne({
      _id: `${provider._id}:${sub}`,
      provider: provider._id,
      sub,
      userId: user._id,
      linkedAt: now,
    });
    return { user, provider: provider._id, sso };
  }

  async function signUp(email = `${unique('del')}@example.com`) {
    const res = await h.http
      .post('/v2/signup')
      .set('x-forwarded-for', randomAddress())
      .send({ email, password: PASSWORD });
    expect(res.status).toBe(201);
    const { userId, sessionId, token, refreshToken } = res.body;
    const actor: UserActor = { userId, sessionId, token, credential: { kind: 'session', userId, sessionId } };
    return { email, refreshToken, actor };
  }

  async function org(owner: Actor, ...members: Array<[UserActor, string]>) {
    const slug = unique('org');
    expect((await h.call(owner, 'post', '/v2/orgs', { slug, name: `Org ${slug}` })).status).toBe(201);
    for (const [user, role] of members)
      expect(
        (await h.call(owner, 'post', `/v2/orgs/${slug}/members`, { userId: user.userId, role })).status,
      ).toBe(201);
    return slug;
  }

  it('a password account: asks the password, then every credential stops and everything of the person goes', async () => {
    const { email, refreshToken, actor } = await signUp();
    const other = await h.newUser();
    // a second session, an access token, the OpenID provider's state, an organization of their own with a key,
    // a workspace and its key, and one they share
    const second = await h.http
      .post('/v2/login')
      .set('x-forwarded-for', randomAddress())
      .send({ email, password: PASSWORD });
    const secondActor: Actor = {
      credential: { kind: 'session', userId: actor.userId, sessionId: second.body.sessionId },
    };
    const at = await h.call(actor, 'post', '/v2/user/accessTokens', {
      name: 'script',
      expiresAt: new Date(h.clock.now().getTime() + 86_400_000).toISOString(),
    });
    expect(at.status).toBe(201);
    await openOidcModels(h.store).insertOne({
      _id: `RefreshToken:${unique('rt')}`,
      model: 'RefreshToken',
      grantId: unique('grant'),
      uid: null,
      userCode: null,
      accountId: actor.userId,
      payload: '{}',
      expiresAt: null,
    });
    const own = await org(actor);
    const key = await h.call(actor, 'post', `/v2/orgs/${own}/apikeys`, {
      name: 'ci',
      permissions: ['models:read'],
    });
    const ws = await h.call(actor, 'post', '/v2/workspaces', { name: 'Docs' });
    const wsKey = await h.call(actor, 'post', `/v2/workspaces/${ws.body.id}/security/apikeys`, {
      name: 'bot',
      rules: [{ action: 'read', subject: 'workspace' }],
    });
    expect(wsKey.status).toBe(201);
    const shared = await org(other, [actor, 'member']);

    // what the account page shows first, and what the API asks
    const bare = await h.call(actor, 'delete', '/v2/me');
    expect(bare.status).toBe(403);
    expect(bare.body).toMatchObject({ error: 'ReauthenticationRequired', details: { needs: ['password'] } });
    const wrong = await h.call(actor, 'delete', '/v2/me', { password: 'not the password' });
    expect(wrong.body).toMatchObject({ status: 403, error: 'InvalidCredentials' });
    expect(
      (await h.call(h.accessToken(at.body.token), 'delete', '/v2/me', { password: PASSWORD })).status,
    ).toBe(403);
    expect((await h.call(actor, 'get', '/v2/me')).status).toBe(200);

    const events = recordEvents(h.bus, [Subjects.credentialRevoked, Subjects.orgDeleted]);
    const done = await h.call(actor, 'delete', '/v2/me', { password: PASSWORD });
    expect(done.status).toBe(204);
    expect(done.headers['set-cookie']?.toString()).toMatch(/access-token=;/);
    events.stop();
    expect(events.seen.map((e) => e.payload)).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ kind: 'user', id: actor.userId }),
        expect.objectContaining({ kind: 'session', id: actor.sessionId }),
        expect.objectContaining({ kind: 'session', id: second.body.sessionId }),
        expect.objectContaining({ kind: 'access_token', id: at.body._id }),
        expect.objectContaining({ kind: 'org_api_key', id: key.body._id }),
        expect.objectContaining({ kind: 'workspace_api_key', id: wsKey.body._id }),
        expect.objectContaining({ orgSlug: own }),
      ]),
    );

    // every credential of the person is refused
    for (const who of [
      actor,
      secondActor,
      h.accessToken(at.body.token),
      h.apiKey(key.body.apiKey),
      h.apiKey(wsKey.body.apiKey),
    ])
      expect((await h.call(who, 'get', '/v2/me')).status).toBe(401);
    const refresh = await h.http.post('/v2/login/refresh').send({ refreshToken });
    expect(refresh.status).toBe(401);
    const login = await h.http
      .post('/v2/login')
      .set('x-forwarded-for', randomAddress())
      .send({ email, password: PASSWORD });
    expect(login.body.error).toBe('InvalidCredentials');

    // nothing of theirs is kept; the organization they shared stays, without them
    const userId = actor.userId;
    expect(await col().users.findOne({ _id: userId })).toBeNull();
    expect(await col().accounts.findOne({ userId })).toBeNull();
    expect(await col().accountTokens.findOne({ userId })).toBeNull();
    expect(await col().memberships.find({ userId })).toEqual([]);
    expect(await col().workspaceMembers.find({ userId })).toEqual([]);
    expect(await col().sessions.find({ userId, revokedAt: null })).toEqual([]);
    expect(await col().accessTokens.find({ userId, revokedAt: null })).toEqual([]);
    expect(await openOidcModels(h.store).find({ accountId: userId })).toEqual([]);
    expect(await col().orgs.findOne({ slug: own })).toBeNull();
    expect(await col().workspaces.findOne({ _id: ws.body.id })).toBeNull();
    const sharedMembers = await h.call(other, 'get', `/v2/orgs/${shared}/members`);
    expect(sharedMembers.body.map((m: { userId: string }) => m.userId)).toEqual([other.userId]);
    // the slug of the organization deleted with it is nobody's again
    expect((await h.call(other, 'post', '/v2/orgs', { slug: own, name: 'Mine now' })).body).toMatchObject({
      status: 409,
      error: 'OrgSlugTaken',
      details: { reason: 'deleted' },
    });

    // the address is free at once: a new account, a new person
    const again = await signUp(email);
    expect(again.actor.userId).not.toBe(userId);
    expect((await h.call(again.actor, 'get', '/v2/me')).body).toMatchObject({ email, memberships: [] });
  });

  it('asks the password of the address the account holds, not that of a sign-up it once cut short', async () => {
    const anon = await h.newUser();
    // a sign-up of this anonymous user stored its password and stopped; the person then signed up with another
    const at = h.clock.now();
    await col().accounts.insertOne({
      _id: `${unique('cut')}@example.com`,
      userId: anon.userId,
      passwordHash: await hashPassword('the password of the sign-up cut short', { N: 1024, r: 8, p: 1 }),
      createdAt: at,
      passwordChangedAt: at,
    });
    const signedUp = await h.call(anon, 'post', '/v2/signup', {
      email: `${unique('del')}@example.com`,
      password: PASSWORD,
    });
    expect(signedUp.status).toBe(201);
    const { userId, sessionId } = signedUp.body;
    const actor: Actor = { credential: { kind: 'session', userId, sessionId } };
    expect((await h.call(actor, 'delete', '/v2/me', { password: PASSWORD })).status).toBe(204);
    expect(await col().accounts.find({ userId })).toEqual([]);
  });
  it('with two-step verification on, asks a code too (each wrong one counted)', async () => {
    const { actor } = await signUp();
    const mfa = new Mfa(h.service.context);
    const { secret } = await mfa.begin(actor.userId, 'x');
    const totp = new OTPAuth.TOTP({ secret: OTPAuth.Secret.fromBase32(secret) });
    expect(
      await mfa.confirm(actor.userId, totp.generate({ timestamp: h.clock.now().getTime() })),
    ).not.toBeNull();
    const onlyPassword = await h.call(actor, 'delete', '/v2/me', { password: PASSWORD });
    expect(onlyPassword.body).toMatchObject({
      status: 403,
      error: 'ReauthenticationRequired',
      details: { needs: ['password', 'mfaCode'] },
    });
    const wrongCode = await h.call(actor, 'delete', '/v2/me', { password: PASSWORD, mfaCode: '000000' });
    expect(wrongCode.body).toMatchObject({ status: 403, error: 'InvalidMfaCode' });
    h.clock.advance(30_000);
    const code = totp.generate({ timestamp: h.clock.now().getTime() });
    expect((await h.call(actor, 'delete', '/v2/me', { password: PASSWORD, mfaCode: code })).status).toBe(204);
    expect(await h.service.context.store.collection('mfa').findOne({ _id: actor.userId })).toBeNull();
  });

  it('is refused (409 LastOwner, naming them) while the person is the last owner of what others use', async () => {
    const { actor } = await signUp();
    const colleague = await h.newUser();
    const shared = await org(actor, [colleague, 'member']);
    const ws = await h.call(actor, 'post', `/v2/workspaces`, { name: 'Team docs' });
    expect(
      (
        await h.call(actor, 'put', `/v2/workspaces/${ws.body.id}/members/${colleague.userId}`, {
          role: 'viewer',
        })
      ).status,
    ).toBe(201);

    const refused = await h.call(actor, 'delete', '/v2/me', { password: 'not even checked' });
    expect(refused.status).toBe(409);
    expect(refused.body).toMatchObject({
      error: 'LastOwner',
      details: {
        organizations: [{ slug: shared, members: 2 }],
        workspaces: [{ id: ws.body.id, name: 'Team docs', orgSlug: shared, members: 2 }],
      },
    });
    expect(refused.body.message).toContain(shared);
    expect(refused.body.message).toContain('Team docs');
    // nothing changed
    expect((await h.call(actor, 'get', '/v2/me')).body.memberships).toHaveLength(1);

    // hand both over: then it goes, and the colleague keeps them
    await h.call(actor, 'post', `/v2/orgs/${shared}/members`, { userId: colleague.userId, role: 'owner' });
    await h.call(actor, 'put', `/v2/workspaces/${ws.body.id}/members/${colleague.userId}`, { role: 'owner' });
    expect((await h.call(actor, 'delete', '/v2/me', { password: PASSWORD })).status).toBe(204);
    expect((await h.call(colleague, 'get', `/v2/orgs/${shared}/members`)).body).toEqual([
      expect.objectContaining({ userId: colleague.userId, role: 'owner' }),
    ]);
    expect((await h.call(colleague, 'get', `/v2/workspaces/${ws.body.id}`)).status).toBe(200);
  });

  it('an account without a password (SSO only) needs a sign-in of the last ten minutes; its identity goes', async () => {
    const c = h.service.context;
    const { user, provider, sso } = await ssoOnlyUser('sso', 'sub-1', { emailVerifiedAt: h.clock.now() });
    const old = await openUserSession(c, user);
    h.clock.advance(11 * 60_000);
    const stale: Actor = { credential: { kind: 'session', userId: user._id, sessionId: old.sessionId } };
    const refused = await h.call(stale, 'delete', '/v2/me');
    expect(refused.body).toMatchObject({
      status: 403,
      error: 'ReauthenticationRequired',
      details: { needs: ['recentSignIn'], providers: [provider] },
    });
    const fresh = await openUserSession(c, user);
    const now2: Actor = { credential: { kind: 'session', userId: user._id, sessionId: fresh.sessionId } };
    expect((await h.call(now2, 'delete', '/v2/me')).status).toBe(204);
    expect(await sso.identities.findOne({ userId: user._id })).toBeNull();
    expect((await h.call(stale, 'get', '/v2/me')).status).toBe(401);
  });

  it('the page: without a password, a stale sign-in is sent to sign in again, a fresh one confirms with a button', async () => {
    const c = h.service.context;
    const { user, provider } = await ssoOnlyUser('page', 'p');
    const headersOf = async (sessionId: string) => {
      const { principal } = await c.introspection.resolve(
        { kind: 'session', userId: user._id, sessionId },
        null,
        't',
      );
      return {
        'x-platform-principal': sealPrincipal(principal, INTERNAL_SECRET, h.clock),
        'x-platform-user-id': user._id,
      };
    };
    const old = await openUserSession(c, user);
    h.clock.advance(11 * 60_000);
    const stale = await headersOf(old.sessionId);
    const page = await h.http.get('/account/delete').set(stale);
    expect(page.status).toBe(200);
    expect(page.text).toContain(
      `href="/account/sso/${provider}?next=%2Faccount%2Fdelete">Sign in again with Acme SSO</a>`,
    );
    expect(page.text).not.toContain('action="/account/delete"');

    const fresh = await headersOf((await openUserSession(c, user)).sessionId);
    const ready = await h.http.get('/account/delete').set(fresh);
    expect(ready.text).toContain(
      'You signed in with Acme SSO less than 10 minutes ago: that is confirmation enough.',
    );
    expect(ready.text).not.toContain('type="password"');
    const csrf = /action="\/account\/delete"[\s\S]*?name="csrf" value="([^"]+)"/.exec(ready.text)![1]!;
    const forged = await h.http.post('/account/delete').set(fresh).type('form').send({ csrf: 'forged' });
    expect(forged.status).toBe(403);
    expect(await c.collections.users.findOne({ _id: user._id })).not.toBeNull();
    const done = await h.http.post('/account/delete').set(fresh).type('form').send({ csrf });
    expect(done.status).toBe(303);
    expect(done.headers.location).toBe('/account/deleted');
    expect(await c.collections.users.findOne({ _id: user._id })).toBeNull();
    const bye = await h.http.get('/account/deleted');
    expect(bye.text).toContain('Your account is deleted');
  });

  it('an anonymous user deletes with its session alone; an application’s token never deletes an account', async () => {
    const anon = await h.newUser();
    const mine = await org(anon);
    expect((await h.call(anon, 'delete', '/v2/me')).status).toBe(204);
    expect(await col().users.findOne({ _id: anon.userId })).toBeNull();
    expect(await col().orgs.findOne({ slug: mine })).toBeNull();

    const { actor } = await signUp();
    const now = h.clock.now();
    const appSession = newId();
    await col().sessions.insertOne({
      _id: appSession,
      userId: actor.userId,
      clientId: 'notes-app',
      activeOrgSlug: null,
      createdAt: now,
      expiresAt: new Date(now.getTime() + 3_600_000),
      revokedAt: null,
    });
    const app: Actor = { credential: { kind: 'session', userId: actor.userId, sessionId: appSession } };
    const refused = await h.call(app, 'delete', '/v2/me', { password: PASSWORD });
    expect(refused.body).toMatchObject({ status: 403, error: 'PlatformSessionRequired' });
    expect((await h.call(actor, 'get', '/v2/me')).status).toBe(200);
  });

  it('an access token minted while the account is being deleted does not outlive it', async () => {
    const { actor } = await signUp();
    const held = gated.gate('access_tokens', (doc) => (doc as { userId?: string }).userId === actor.userId);
    const minting = h.call(actor, 'post', '/v2/user/accessTokens', {
      name: 'late',
      expiresAt: new Date(h.clock.now().getTime() + 86_400_000).toISOString(),
    });
    await held.arrived;
    expect((await h.call(actor, 'delete', '/v2/me', { password: PASSWORD })).status).toBe(204);
    held.release();
    const minted = await minting;
    expect(minted.status).toBe(401);
    expect(await col().accessTokens.find({ userId: actor.userId, revokedAt: null })).toEqual([]);
  });

  it('someone adding the person to an organization while it is deleted leaves no membership behind', async () => {
    const { actor } = await signUp();
    const owner = await h.newUser();
    const theirs = await org(owner);
    const held = gated.gate('memberships', (doc) => (doc as { userId?: string }).userId === actor.userId);
    const adding = h.call(owner, 'post', `/v2/orgs/${theirs}/members`, {
      userId: actor.userId,
      role: 'member',
    });
    await held.arrived;
    expect((await h.call(actor, 'delete', '/v2/me', { password: PASSWORD })).status).toBe(204);
    held.release();
    expect((await adding).body).toMatchObject({ status: 404, error: 'UserNotFound' });
    expect(await col().memberships.find({ userId: actor.userId })).toEqual([]);
    expect(
      (await h.call(owner, 'post', `/v2/orgs/${theirs}/members`, { userId: actor.userId, role: 'member' }))
        .status,
    ).toBe(404);
  });

  it('a workspace the person creates while their account is deleted leaves no role of theirs behind', async () => {
    const { actor } = await signUp();
    const owner = await h.newUser();
    const theirs = await org(owner, [actor, 'member']);
    await h.call(actor, 'put', '/v2/user/active-org', { orgSlug: theirs });
    const held = gated.gate(
      'workspaces',
      (doc) => (doc as { createdBy?: string }).createdBy === actor.userId,
    );
    const creating = h.call(actor, 'post', '/v2/workspaces', { name: 'Late' });
    await held.arrived;
    expect((await h.call(actor, 'delete', '/v2/me', { password: PASSWORD })).status).toBe(204);
    held.release();
    expect((await creating).status).toBe(401);
    expect(await col().workspaceMembers.find({ userId: actor.userId })).toEqual([]);
    expect(await col().workspaces.find({ createdBy: actor.userId })).toEqual([]);
  });

  it("a company's SSO sign-in that meets the deletion leaves neither a membership nor an identity behind", async () => {
    const { email, actor } = await signUp();
    await col().users.updateOne({ _id: actor.userId }, { $set: { emailVerifiedAt: h.clock.now() } });
    const owner = await h.newUser();
    const company = await org(owner, [actor, 'member']);
    const sso = new SsoClients(
      openSsoCollections(h.service.context.store),
      'unused: this provider is never discovered',
    );
    const provider = ssoProvider(company);
    // the sign-in found the person by their address and is about to link the identity to them
    const held = gated.gate('sso_identities', (doc) => (doc as { userId?: string }).userId === actor.userId);
    const signingIn = userForIdentity(h.service.context, sso, provider, {
      sub: 'sub-late',
      email,
      email_verified: true,
    }).then(
      () => 'signed in',
      (err) => err.error,
    );
    await held.arrived;
    expect((await h.call(actor, 'delete', '/v2/me', { password: PASSWORD })).status).toBe(204);
    held.release();
    expect(await signingIn).toBe('AccountDeleted');
    expect(await col().memberships.find({ userId: actor.userId })).toEqual([]);
    expect(await sso.collections.identities.find({ userId: actor.userId })).toEqual([]);
  });

  it("a deleted organization's SSO provider signs nobody in and makes no account", async () => {
    const owner = await h.newUser();
    const company = await org(owner);
    const sso = new SsoClients(
      openSsoCollections(h.service.context.store),
      'unused: this provider is never discovered',
    );
    const provider = ssoProvider(company);
    expect((await h.call(owner, 'delete', `/v2/orgs/${company}`)).status).toBe(204);
    const email = `${unique('newcomer')}@example.com`;
    const outcome = await userForIdentity(h.service.context, sso, provider, {
      sub: 'sub-after',
      email,
      email_verified: true,
    }).then(
      () => 'signed in',
      (err) => err.error,
    );
    expect(outcome).toBe('SsoProviderClosed');
    expect(await col().users.findOne({ email })).toBeNull();
    expect(await sso.collections.identities.find({ _id: `${provider._id}:sub-after` })).toEqual([]);
  });

  it('a deletion a crash cut short is finished by the retention pass', async () => {
    const { actor } = await signUp();
    const mine = await org(actor);
    // the mark is written, and the process died before anything else
    await col().users.updateOne({ _id: actor.userId }, { $set: { deletedAt: h.clock.now() } });
    expect((await h.call(actor, 'get', '/v2/me')).status).toBe(401);
    h.clock.advance(16 * 60_000);
    const pass = await h.service.retention.run();
    expect(pass?.deletionsFinished.accounts).toBeGreaterThanOrEqual(1);
    expect(await col().users.findOne({ _id: actor.userId })).toBeNull();
    expect(await col().orgs.findOne({ slug: mine })).toBeNull();
    expect(await col().sessions.find({ userId: actor.userId, revokedAt: null })).toEqual([]);
  });

  it('a store error while finishing it keeps the account marked (its credentials stay refused) for the next pass', async () => {
    const { actor } = await signUp();
    const owner = await h.newUser();
    const theirs = await org(owner, [actor, 'member']);
    await col().users.updateOne({ _id: actor.userId }, { $set: { deletedAt: h.clock.now() } });
    h.clock.advance(16 * 60_000);
    // the pass's first removal fails (a store that went away a moment)
    const memberships = col().memberships;
    let failed = false;
    memberships.deleteOne = async () => {
      Reflect.deleteProperty(memberships, 'deleteOne');
      failed = true;
      throw new Error('the store went away');
    };
    await h.service.retention.run();
    expect(failed).toBe(true);
    // not given back to whoever holds its session: the person asked for it to go
    expect(await col().users.findOne({ _id: actor.userId })).toMatchObject({ deletedAt: expect.any(Date) });
    expect((await h.call(actor, 'get', '/v2/me')).status).toBe(401);
    h.clock.advance(61 * 60_000);
    expect((await h.service.retention.run())?.deletionsFinished.accounts).toBeGreaterThanOrEqual(1);
    expect(await col().users.findOne({ _id: actor.userId })).toBeNull();
    expect(await col().memberships.find({ orgSlug: theirs, userId: actor.userId })).toEqual([]);
  });
});

describe('the mail saying an account was deleted', () => {
  let h: AuthHarness;
  let mail: Awaited<ReturnType<typeof startMailCatcher>>;
  beforeAll(async () => {
    mail = await startMailCatcher();
    h = await startAuth({
      env: { PASSWORD_SCRYPT_N: '1024', PASSWORD_SCRYPT_P: '1', SMTP_URL: mail.url },
    });
  });
  afterAll(async () => {
    await h.stop();
    await mail.close();
  });

  async function signUpAndDelete(confirm: boolean) {
    const email = `${unique('bye')}@example.com`;
    const res = await h.http
      .post('/v2/signup')
      .set('x-forwarded-for', randomAddress())
      .send({ email, password: PASSWORD });
    expect(res.status).toBe(201);
    const { userId, sessionId } = res.body;
    const actor: Actor = { credential: { kind: 'session', userId, sessionId } };
    if (confirm) {
      const link = new URL(await mail.linkFor(email, '/account/verify-email'));
      expect((await h.http.get(`${link.pathname}${link.search}`)).text).toContain(`${email} is confirmed`);
    }
    expect((await h.call(actor, 'delete', '/v2/me', { password: PASSWORD })).status).toBe(204);
    // sent (or not) before the answer
    return mail.mails.filter((m) => m.to.includes(email) && m.raw.includes('Your account was deleted'));
  }

  it('goes to an address its owner confirmed, never to one they did not (it may be someone else’s)', async () => {
    expect(await signUpAndDelete(true)).toHaveLength(1);
    expect(await signUpAndDelete(false)).toEqual([]);
  });
});
