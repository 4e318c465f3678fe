import { type AuthHarness, startAuth } from './helpers';
import { APP_REDIRECT, authorizeApp, registerApp, signUp, userinfo } from './oidc-app';

const API_LINE = 'Use the platform API as you: your organizations, their API keys, models and usage';

/**
 * The platform API's resource scope `api` (decision 0109): the consent page names it, and an access token's `scope`
 * claim holds it only when its grant does, which the edge requires of the provider's tokens beyond userinfo.
 */
describe('OpenID Connect access tokens and the `api` scope', () => {
  let h: AuthHarness;
  beforeAll(async () => {
    h = await startAuth({
      env: {
        PASSWORD_SCRYPT_N: '1024',
        PASSWORD_SCRYPT_P: '1',
        OIDC_FIRST_PARTY_REDIRECT_URIS: APP_REDIRECT,
      },
    });
    await registerApp(h, 'notes-app');
  });
  afterAll(() => h.stop());

  /** the access token `clientId` obtains, its header and claims, and the consent page's lines (none: no page) */
  async function grant(clientId: string, scope: string) {
    const person = await signUp(h);
    let listed: string[] = [];
    const onConsent = (page: string) => {
      listed = [...page.matchAll(/<li>([^<]*)<\/li>/g)].map((m) => m[1]!);
    };
    const tokens = await (await authorizeApp(h, person, clientId, scope, onConsent)).redeem();
    expect(tokens.status).toBe(200);
    const token = tokens.body.access_token as string;
    const [header, claims] = token
      .split('.')
      .slice(0, 2)
      .map((part) => JSON.parse(Buffer.from(part, 'base64url').toString()));
    return { person, token, header, claims, listed };
  }

  it('an application that did not ask for `api`: not on the consent page, not in the token’s scope', async () => {
    const { person, token, header, claims, listed } = await grant('notes-app', 'openid email');
    expect(listed).toEqual(['Know who you are (your user id)', 'See your email address']);
    expect(header.typ).toBe('at+jwt');
    expect(claims.scope).toBe('openid email');
    // userinfo answers it as before
    expect((await userinfo(h, token)).body).toEqual({
      sub: person.userId,
      email: person.email,
      email_verified: false,
    });
  });

  it('an application that asks for `api`: the consent page says what it allows, the token’s scope holds it', async () => {
    const { person, token, claims, listed } = await grant('notes-app', 'openid api');
    expect(listed).toEqual(['Know who you are (your user id)', API_LINE]);
    expect(claims.scope).toBe('openid api');
    expect((await userinfo(h, token)).body).toEqual({ sub: person.userId });
  });

  it('the first-party client holds `api` without asking, and without a consent page', async () => {
    const { claims, listed } = await grant('platform-web', 'openid email');
    expect(listed).toEqual([]);
    expect(claims.scope.split(' ')).toContain('api');
  });
});
