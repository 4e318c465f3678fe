import { type Actor, type AuthHarness, startAuth } from './helpers';
import { authorizeApp, registerApp, signUp, userinfo } from './oidc-app';

/**
 * `{base_url}/oidc/me` answers the claims the access token's scope gives (OpenID Connect Core 5.3.2, 5.4): `sub`
 * always, `email` and `email_verified` with `email`, the names with `profile` (decision 0103).
 */
describe('OpenID Connect userinfo follows the access token’s scope', () => {
  let h: AuthHarness;
  beforeAll(async () => {
    h = await startAuth({ env: { PASSWORD_SCRYPT_N: '1024', PASSWORD_SCRYPT_P: '1' } });
    await registerApp(h, 'notes-app');
  });
  afterAll(() => h.stop());

  /** Ada Lovelace, signed in to the platform, with an unconfirmed address */
  async function ada() {
    const person = await signUp(h);
    await h.service.context.collections.users.updateOne(
      { _id: person.userId },
      { $set: { firstName: 'Ada', lastName: 'Lovelace' } },
    );
    return person;
  }

  /** an access token of notes-app; its `scope` claim is what the person allowed */
  async function appToken(person: { userId: string; sessionId: string }, scope: string) {
    const tokens = await (await authorizeApp(h, person, 'notes-app', scope)).redeem();
    expect(tokens.status).toBe(200);
    const token = tokens.body.access_token as string;
    expect(JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString()).scope).toBe(scope);
    return token;
  }

  it('`openid` alone: `sub` alone', async () => {
    const person = await ada();
    const me = await userinfo(h, await appToken(person, 'openid'));
    expect(me.status).toBe(200);
    expect(me.headers['cache-control']).toBe('no-store');
    expect(me.body).toEqual({ sub: person.userId });
  });

  it('`openid email`: the email claims, not the name', async () => {
    const person = await ada();
    const me = await userinfo(h, await appToken(person, 'openid email'));
    expect(me.body).toEqual({ sub: person.userId, email: person.email, email_verified: false });
  });

  it('`openid profile`: the names, not the email', async () => {
    const person = await ada();
    const me = await userinfo(h, await appToken(person, 'openid profile'));
    expect(me.body).toEqual({
      sub: person.userId,
      name: 'Ada Lovelace',
      given_name: 'Ada',
      family_name: 'Lovelace',
    });
  });

  it('`openid email profile`: every claim, as in the ID token', async () => {
    const person = await ada();
    const tokens = await (await authorizeApp(h, person, 'notes-app', 'openid email profile')).redeem();
    const me = await userinfo(h, tokens.body.access_token);
    const everything = {
      sub: person.userId,
      email: person.email,
      email_verified: false,
      name: 'Ada Lovelace',
      given_name: 'Ada',
      family_name: 'Lovelace',
    };
    expect(me.body).toEqual(everything);
    const idToken = JSON.parse(Buffer.from(tokens.body.id_token.split('.')[1], 'base64url').toString());
    expect(idToken).toMatchObject(everything);
  });

  it('the consent page lists only the scopes it knows: none named like Object’s own members', async () => {
    const person = await ada();
    let listed: string[] = [];
    const onConsent = (page: string) => {
      listed = [...page.matchAll(/<li>([^<]*)<\/li>/g)].map((m) => m[1]!);
    };
    await authorizeApp(h, person, 'notes-app', 'openid constructor __proto__ toString email', onConsent);
    expect(listed).toEqual(['Know who you are (your user id)', 'See your email address']);
  });

  it('the platform’s own sessions answer what their `scope` claim grants; an `at:` token has none beyond `openid`', async () => {
    const person = await ada();
    const session: Actor = {
      credential: { kind: 'session', userId: person.userId, sessionId: person.sessionId },
    };
    // PASSWORD_SCOPE, `openid email profile` unless configured otherwise
    expect((await h.call(session, 'get', '/oidc/me')).body).toEqual({
      sub: person.userId,
      email: person.email,
      email_verified: false,
      name: 'Ada Lovelace',
      given_name: 'Ada',
      family_name: 'Lovelace',
    });
    const anonymous = await h.newUser();
    expect((await h.call(anonymous, 'get', '/oidc/me')).body).toEqual({ sub: anonymous.userId });
    const at = await h.call(session, 'post', '/v2/user/accessTokens', {
      name: 'script',
      expiresAt: new Date(h.clock.now().getTime() + 86_400_000).toISOString(),
    });
    expect(at.status).toBe(201);
    expect((await h.call(h.accessToken(at.body.token), 'get', '/oidc/me')).body).toEqual({
      sub: person.userId,
    });
  });
});
