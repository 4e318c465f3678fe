import { createHmac } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { API_SCOPE, type Principal } from '@platform/contracts';
import Provider, { type Configuration, interactionPolicy, type KoaContextWithOIDC } from 'oidc-provider';
import { ACCESS_TOKEN_COOKIE, CSRF_COOKIE } from '../accounts/cookies';
import type { MfaDoc } from '../accounts/mfa';
import { publicBaseUrl } from '../accounts/public-url';
import { revokeSession } from '../accounts/sessions';
import type { AuthContext } from '../context';
import type { UserDoc } from '../data/collections';
import type { SigningKey } from '../domain/key-rotation';
import { sessionRemovalTime } from '../domain/removal-times';
import { pageSession } from '../pages/page-session';
import type { OidcClients } from './clients';
import { clientCors } from './cors';
import { pruneLegacyExpired, storeAdapterFactory } from './store-adapter';

export const OIDC_SCOPES = ['openid', 'email', 'profile', 'offline_access'];

/** The claims each scope gives (OpenID Connect Core 5.4), in ID tokens and at userinfo alike. */
const CLAIMS_OF_SCOPE = {
  openid: ['sub'],
  email: ['email', 'email_verified'],
  profile: ['name', 'given_name', 'family_name'],
} as const;

type UserClaims = {
  sub: string;
  email?: string;
  email_verified?: boolean;
  name?: string;
  given_name?: string;
  family_name?: string;
};

/** Every claim a person has; what a token may see of them is chosen by its scope (`claimsForScope`). */
export function claimsOf(u: UserDoc): UserClaims {
  const name = [u.firstName, u.lastName].filter(Boolean).join(' ');
  return {
    sub: u._id,
    ...(u.email ? { email: u.email, email_verified: Boolean(u.emailVerifiedAt) } : {}),
    ...(name ? { name } : {}),
    ...(u.firstName ? { given_name: u.firstName } : {}),
    ...(u.lastName ? { family_name: u.lastName } : {}),
  };
}

/** The claims a space-separated scope gives; `sub` always. */
export function claimsForScope(claims: UserClaims, scope: string): Partial<UserClaims> {
  const granted = new Set<string>(['sub']);
  // own members only: an operator's PASSWORD_SCOPE may name `constructor`
  for (const s of scope.split(' '))
    if (Object.hasOwn(CLAIMS_OF_SCOPE, s))
      for (const claim of CLAIMS_OF_SCOPE[s as keyof typeof CLAIMS_OF_SCOPE]) granted.add(claim);
  return Object.fromEntries(Object.entries(claims).filter(([claim]) => granted.has(claim)));
}

/**
 * The OpenID Connect scope a grant holds, which userinfo answers by (an access token's `scope` claim adds `api`:
 * `tokenScope`), `openid` when the grant is gone.
 */
export async function grantedScope(provider: Provider, grantId: string): Promise<string> {
  const grant = await provider.Grant.find(grantId);
  return grant?.getOIDCScope() || 'openid';
}

/**
 * An access token's `scope` claim: the grant's OpenID Connect scope, and `api` when the grant holds it for the
 * platform API (consented, or given to a first-party client): the edge refuses the provider's tokens without it
 * everywhere but userinfo.
 */
async function tokenScope(provider: Provider, grantId: string, resource: string): Promise<string> {
  const grant = await provider.Grant.find(grantId);
  const scope = grant?.getOIDCScope() || 'openid';
  return grant?.getResourceScope(resource).split(' ').includes(API_SCOPE) ? `${scope} ${API_SCOPE}` : scope;
}

/** `{base_url}` and the issuer `{base_url}/oidc`. */
export function oidcIssuer(c: Pick<AuthContext, 'config'>): { base: string; issuer: string } {
  const base = publicBaseUrl(c.config);
  return { base, issuer: `${base}/oidc` };
}

const derivedSecret = (secret: string, purpose: string) =>
  createHmac('sha256', secret).update(purpose).digest('base64url');

const hasSecondFactor = async (c: AuthContext, userId: string) =>
  Boolean((await c.store.collection<MfaDoc>('mfa').findOne({ _id: userId }))?.secret);

/** The browser's own password or SSO session (the platform's pages), never an app's session JWT. */
async function browserSession(c: AuthContext, req: { principal?: Principal | null }) {
  const signedIn = await pageSession(c, req);
  return signedIn?.session.clientId === c.config.PASSWORD_CLIENT_ID ? signedIn : null;
}

/**
 * The person signed in to the platform in this browser, with the second factor when the account has
 * one. Never an application's access token: it is a session JWT too, which the edge reads from a cookie
 * or a Bearer header alike, and holding one must not sign its holder in here.
 */
export async function browserSignIn(
  c: AuthContext,
  req: { principal?: Principal | null },
): Promise<{ userId: string; since: Date } | null> {
  const signedIn = await browserSession(c, req);
  // A session from before the person turned on two-step verification does not skip it.
  if (!signedIn || (!signedIn.session.mfa && (await hasSecondFactor(c, signedIn.user._id)))) return null;
  return { userId: signedIn.user._id, since: signedIn.session.createdAt };
}

/**
 * The provider's own session (its cookie) holds only while the platform session it came from does: a
 * sign-out, a new password or a revoked session asks for the person again at the next authorization.
 */
function loginPolicy(c: AuthContext) {
  const policy = interactionPolicy.base();
  const { Check } = interactionPolicy;
  policy.get('login')!.checks.add(
    new Check('platform_session', 'The platform session has ended', async (ctx) => {
      const { accountId } = ctx.oidc.session!;
      if (!accountId) return Check.NO_NEED_TO_PROMPT;
      const signedIn = await browserSignIn(c, ctx.req as { principal?: Principal | null });
      return signedIn?.userId === accountId ? Check.NO_NEED_TO_PROMPT : Check.REQUEST_PROMPT;
    }),
  );
  return policy;
}

function configuration(
  c: AuthContext,
  key: SigningKey,
  clients: OidcClients,
  renderError: NonNullable<Configuration['renderError']>,
  logoutSource: NonNullable<NonNullable<Configuration['features']>['rpInitiatedLogout']>['logoutSource'],
): Configuration {
  const { config } = c;
  const { base } = oidcIssuer(c);
  const privateJwk = {
    ...(key.key.export({ format: 'jwk' }) as Record<string, string>),
    kid: key.kid,
    alg: key.alg,
    use: 'sig',
  };
  const user = (id: string) => c.collections.users.findOne({ _id: id });
  return {
    adapter: storeAdapterFactory(c.store, c.clock, clients, c.logger) as never,
    jwks: { keys: [privateJwk as never] },
    cookies: {
      keys: [derivedSecret(config.PLATFORM_INTERNAL_SECRET, 'oidc-provider-cookies')],
      long: { signed: true, sameSite: 'lax' },
      short: { signed: true, sameSite: 'lax' },
    },
    scopes: OIDC_SCOPES,
    claims: {
      openid: [...CLAIMS_OF_SCOPE.openid],
      email: [...CLAIMS_OF_SCOPE.email],
      profile: [...CLAIMS_OF_SCOPE.profile],
    },
    conformIdTokenClaims: false,
    async findAccount(_ctx, sub) {
      const u = await user(sub);
      if (!u || u.anonymous || !u.email || u.deletedAt) return undefined;
      return {
        accountId: u._id,
        async claims() {
          return claimsOf(u);
        },
      };
    },
    clientDefaults: {
      id_token_signed_response_alg: key.alg as never,
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    },
    // PKCE for every client (public ones above all); S256 only.
    pkce: { required: () => true },
    // a page of another origin (a single-page application) calling the token or revocation endpoint
    clientBasedCORS: (ctx, origin, client) => {
      const cors = clientCors(client, origin);
      // the provider answered the Origin before it knew the client: a confidential client's backend is served bare
      if (cors === 'unreadable')
        for (const name of ['access-control-allow-origin', 'access-control-expose-headers']) ctx.remove(name);
      return cors !== 'refused';
    },
    interactions: {
      policy: loginPolicy(c),
      url: (_ctx, interaction) => `/oidc/interaction/${interaction.uid}`,
    },
    features: {
      devInteractions: { enabled: false },
      revocation: {
        enabled: true,
        // Another client's token is not revoked, and answered 200 as an invalid one is (RFC 7009 2.2), whether the
        // client is public or confidential (the provider's default refuses a confidential one with 400): no answer
        // tells a client whether a token it holds is valid. JWT access tokens are answered alike (`routes.ts`).
        allowedPolicy: (_ctx, client, token) => token.clientId === client.clientId,
      },
      userinfo: { enabled: true },
      rpInitiatedLogout: { enabled: true, logoutSource },
      resourceIndicators: {
        enabled: true,
        // Every access token is a session JWT for the platform API; the edge accepts it beyond userinfo only
        // when the grant holds `api` (decision 0109).
        defaultResource: () => `${base}/`,
        useGrantedResource: () => true,
        getResourceServerInfo: () => ({
          scope: API_SCOPE,
          audience: config.JWT_AUDIENCE,
          accessTokenTTL: config.OIDC_ACCESS_TOKEN_TTL_SECONDS,
          accessTokenFormat: 'jwt',
          jwt: { sign: { alg: key.alg as never, kid: key.kid } },
        }),
      },
    },
    formats: {
      customizers: {
        // spec 2.5 claims: the platform's issuer, a platform session per grant (what logout and
        // revocation end), and the scopes the user granted (`api` included when granted: 0109).
        async jwt(_ctx, token, jwt) {
          const t = token as unknown as {
            grantId: string;
            accountId: string;
            clientId: string;
            scope?: string;
          };
          const exp = jwt.payload.exp as number;
          const expiresAt = new Date(exp * 1000);
          // The grant may renew this session for REFRESH_TOKENS_MAX_AGE: the store keeps it until then (0094).
          const refreshableUntil = new Date(c.clock.now().getTime() + config.REFRESH_TOKENS_MAX_AGE * 1000);
          await c.collections.sessions.updateOne(
            { _id: t.grantId },
            {
              $setOnInsert: {
                userId: t.accountId,
                clientId: t.clientId,
                activeOrgSlug: null,
                createdAt: c.clock.now(),
                revokedAt: null,
                // Sign-in asks for the second factor whenever the account has one.
                mfa: await hasSecondFactor(c, t.accountId),
              },
              $max: { expiresAt, removeAt: sessionRemovalTime(config, expiresAt, refreshableUntil) },
            },
            { upsert: true },
          );
          jwt.payload.iss = config.JWT_ISSUER;
          jwt.payload.platformSessionId = t.grantId;
          jwt.payload.scope = await tokenScope(
            (_ctx as KoaContextWithOIDC).oidc.provider,
            t.grantId,
            `${base}/`,
          );
        },
      },
    },
    issueRefreshToken: async (_ctx, client) => client.grantTypeAllowed('refresh_token'),
    // Every refresh answers a new refresh token; presenting a spent one revokes the grant (the family).
    rotateRefreshToken: true,
    ttl: {
      AccessToken: config.OIDC_ACCESS_TOKEN_TTL_SECONDS,
      AuthorizationCode: 60,
      IdToken: config.OIDC_ACCESS_TOKEN_TTL_SECONDS,
      Interaction: 3600,
      Session: config.REFRESH_TOKENS_MAX_AGE,
      Grant: config.REFRESH_TOKENS_MAX_AGE,
      RefreshToken: config.REFRESH_TOKENS_MAX_AGE,
    },
    async loadExistingGrant(ctx) {
      const grantId =
        ctx.oidc.result?.consent?.grantId || ctx.oidc.session!.grantIdFor(ctx.oidc.client!.clientId);
      if (grantId) return ctx.oidc.provider.Grant.find(grantId);
      // The platform's own pages need no consent screen.
      const doc = await clients.find(ctx.oidc.client!.clientId);
      if (!doc?.firstParty) return undefined;
      const grant = new ctx.oidc.provider.Grant({
        clientId: doc._id,
        accountId: ctx.oidc.session!.accountId!,
      });
      grant.addOIDCScope(OIDC_SCOPES.join(' '));
      grant.addResourceScope(`${base}/`, API_SCOPE);
      await grant.save();
      return grant;
    },
    renderError,
  };
}

/**
 * node-oidc-provider signing with auth's current rotating key (the one set `/oidc/jwks` publishes).
 * The provider is rebuilt when the signing key changes; all of its state lives in the store, so a
 * rebuild (or another instance) carries on every code, session and refresh token.
 */
export class OidcProviderHost {
  private current: {
    kid: string;
    provider: Provider;
    callback: (req: IncomingMessage, res: ServerResponse) => void;
  } | null = null;

  constructor(
    private readonly c: AuthContext,
    readonly clients: OidcClients,
    private readonly hooks: {
      renderError: NonNullable<Configuration['renderError']>;
      logoutSource: NonNullable<NonNullable<Configuration['features']>['rpInitiatedLogout']>['logoutSource'];
    },
  ) {}

  async provider(): Promise<Provider> {
    const key = await this.c.keys.signingKey();
    if (this.current?.kid !== key.kid) {
      if (!this.current) await pruneLegacyExpired(this.c.store, this.c.clock);
      const provider = new Provider(
        oidcIssuer(this.c).issuer,
        configuration(this.c, key, this.clients, this.hooks.renderError, this.hooks.logoutSource),
      );
      provider.proxy = true;
      // A revoked grant (logout, RFC 7009, a reused refresh token) ends its platform session at every edge.
      provider.on('grant.revoked', (_ctx: unknown, grantId: string) => {
        revokeSession(this.c, grantId).catch((err) =>
          this.c.logger.error({ err }, 'session revocation failed'),
        );
      });
      // "Yes, sign me out" (RP-initiated logout) signs the browser out of the platform too: else its
      // cookie would sign the person straight back in at the next authorization.
      provider.on('end_session.success', (ctx: KoaContextWithOIDC) => {
        if (!ctx.oidc.params?.logout) return;
        for (const name of [ACCESS_TOKEN_COOKIE, CSRF_COOKIE]) {
          ctx.cookies.set(name, null, { path: '/', signed: false, httpOnly: name === ACCESS_TOKEN_COOKIE });
        }
        browserSession(this.c, ctx.req as { principal?: Principal | null })
          .then((signedIn) => signedIn && revokeSession(this.c, signedIn.session._id))
          .catch((err) => this.c.logger.error({ err }, 'session revocation failed'));
      });
      provider.on('server_error', (_ctx: unknown, err: Error) =>
        this.c.logger.error({ err }, 'oidc-provider error'),
      );
      this.current = { kid: key.kid, provider, callback: provider.callback() as never };
    }
    return this.current!.provider;
  }

  /** The express handler for `/oidc/*` (mounted after auth's own `/oidc` routes). */
  async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    await this.provider();
    this.current!.callback(req, res);
  }
}
