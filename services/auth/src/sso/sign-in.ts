import { createHmac, timingSafeEqual } from 'node:crypto';
import { AppError, Forbidden } from '@platform/kernel';
import { DuplicateKeyError } from '@platform/store';
import type { Request, Response, Router } from 'express';
import * as oidc from 'openid-client';
import { emailTaken, normalizeEmail, passwordAccountOf, signupRefused } from '../accounts/accounts';
import { secureCookies } from '../accounts/cookies';
import { publicBaseUrl } from '../accounts/public-url';
import type { AuthContext } from '../context';
import type { UserDoc } from '../data/collections';
import { userIsLive } from '../domain/liveness';
import { newId } from '../domain/secrets';
import { formName } from '../pages/form-fields';
import { html, sendPage } from '../pages/html';
import { readCookie, safeNext } from '../pages/page-session';
import type { SsoClients, SsoIdentityDoc, SsoProvider } from './providers';

const STATE_COOKIE = 'sso-state';
const STATE_SECONDS = 600;

interface PendingSso {
  slug: string;
  state: string;
  nonce: string;
  verifier: string;
  next: string;
  exp: number;
}

const memberOf = async (c: AuthContext, userId: string, orgSlug: string) =>
  Boolean(await c.collections.memberships.findOne({ userId, orgSlug }));

/**
 * A link, with the organization its provider last made its person a member of (`_id`): null while none did, absent on
 * links written before this was kept (their people joined then, at every sign-in).
 */
type IdentityLink = SsoIdentityDoc & { joinedOrgId?: string | null };

/**
 * Which local user an external identity signs in as: the one it was linked to before; else the user
 * whose email it proves (the provider says `email_verified`, and the local address was verified too,
 * so nobody can pre-register someone else's address and wait) and, for a company's provider, a member
 * of its organization already; else a new user. A company provider's users become members of its
 * organization when they first sign in with it as the organization's (at their first link, or at their first sign-in
 * after the provider became the organization's): a member the organization removed, or who left, is not put back by
 * their next sign-in (the provider vouches for who they are, not for their place in the organization).
 */
export async function userForIdentity(
  c: AuthContext,
  sso: SsoClients,
  provider: SsoProvider,
  claims: {
    sub: string;
    email?: unknown;
    email_verified?: unknown;
    given_name?: unknown;
    family_name?: unknown;
  },
): Promise<UserDoc> {
  // a company's provider signs nobody in once its organization is deleted (decision 0099): no accounts made by it
  if (provider.orgSlug && !(await c.collections.orgs.findOne({ slug: provider.orgSlug }))) {
    throw new Forbidden(`${provider.name} belonged to an organization that no longer exists`, {
      error: 'SsoProviderClosed',
    });
  }
  const identities = sso.collections.identities;
  const id = `${provider._id}:${claims.sub}`;
  const linked: IdentityLink | null = await identities.findOne({ _id: id });
  let user = linked ? await c.collections.users.findOne({ _id: linked.userId }) : null;
  if (user?.deletedAt) {
    throw new Forbidden('This account is being deleted', { error: 'AccountDeleted' });
  }
  // the account it named was deleted (decision 0099): the identity may sign up again
  if (linked && !user) await identities.deleteOne({ _id: id, userId: linked.userId });
  /** what this sign-in wrote for the user: taken back if their account is deleted meanwhile */
  let linkedNow = false;
  let joinedNow: string | undefined;
  /** the organization the link made its person a member of (see IdentityLink); undefined: none to make */
  let joinedOrgId = user ? linked?.joinedOrgId : undefined;
  if (!user) {
    if (typeof claims.email !== 'string' || claims.email_verified !== true) {
      throw new Forbidden(`${provider.name} did not confirm an email address for this account`, {
        error: 'SsoEmailUnverified',
      });
    }
    const email = normalizeEmail(claims.email);
    const now = c.clock.now();
    const existing = await c.collections.users.findOne({
      email,
      anonymous: false,
      deletedAt: { $exists: false },
    });
    if (existing && !existing.emailVerifiedAt) {
      throw new Forbidden(
        `An account with ${email} exists but its email is not confirmed: confirm it (or reset its password) first`,
        { error: 'SsoLinkRefused' },
      );
    }
    // A company's provider vouches for its own people only: whoever runs it can assert any address.
    if (existing && provider.orgSlug && !(await memberOf(c, existing._id, provider.orgSlug))) {
      throw new Forbidden(
        `An account with ${email} exists outside ${provider.name}'s organization: sign in with its password`,
        { error: 'SsoLinkRefused' },
      );
    }
    // A password sign-up holding the address whose user is not written yet (decision 0121): no second account
    // (a record one cut short left, past its grace, is removed instead).
    const signingUp = () => passwordAccountOf(c, email);
    if (!existing && (await signingUp())) throw signupRefused();
    user = existing ?? {
      _id: newId(),
      anonymous: false,
      email,
      emailVerifiedAt: now,
      firstName: formName(claims.given_name, 100) || null,
      lastName: formName(claims.family_name, 100) || null,
      createdAt: now,
    };
    if (!existing) {
      await c.collections.users.insertOne(user);
      // looked for again with this user stored: of a sign-up (or another sign-in) racing for the address, one stops
      if ((await signingUp()) || (await emailTaken(c, email, user._id))) {
        await c.collections.users.deleteOne({ _id: user._id });
        throw signupRefused();
      }
    }
    try {
      const link: IdentityLink = {
        _id: id,
        provider: provider._id,
        sub: claims.sub,
        userId: user._id,
        linkedAt: now,
        joinedOrgId: null,
      };
      await identities.insertOne(link);
      linkedNow = true;
      joinedOrgId = null;
    } catch (err) {
      if (!(err instanceof DuplicateKeyError)) throw err;
    }
  }
  if (provider.orgSlug && joinedOrgId !== undefined) {
    const org = await c.collections.orgs.findOne({ slug: provider.orgSlug });
    if (org && joinedOrgId !== org._id) {
      const joined = await c.collections.memberships.updateOne(
        { orgId: org._id, userId: user._id },
        { $setOnInsert: { _id: newId(), orgSlug: org.slug, role: 'member', createdAt: c.clock.now() } },
        { upsert: true },
      );
      joinedNow = joined.upsertedId;
      await identities.updateOne({ _id: id, userId: user._id }, { $set: { joinedOrgId: org._id } });
    }
  }
  // the account was deleted while this ran (decision 0099): what this sign-in wrote for it goes too
  if (!(await userIsLive(c, user._id))) {
    if (linkedNow) await identities.deleteOne({ _id: id, userId: user._id });
    if (joinedNow) await c.collections.memberships.deleteOne({ _id: joinedNow });
    throw new Forbidden('This account is being deleted', { error: 'AccountDeleted' });
  }
  return user;
}

/**
 * Sign-in with an external provider (authorization code, PKCE, state and nonce, through openid-client):
 * `/account/sso/:slug` goes to the provider; its callback signs the person in (then the local second
 * factor, when enrolled). The pending request lives in a signed, HttpOnly, ten-minute cookie.
 */
export function mountSsoPages(
  router: Router,
  c: AuthContext,
  sso: SsoClients,
  finish: (req: Request, res: Response, user: UserDoc, next: string) => Promise<void>,
): void {
  const key = createHmac('sha256', c.config.PLATFORM_INTERNAL_SECRET).update('sso-state').digest();
  const sign = (body: string) => createHmac('sha256', key).update(body).digest('base64url');
  /** `reset`: the message tells the person to reset the password of the account holding the address */
  const failed = (res: Response, message: string, status = 400, reset = false) =>
    sendPage(res, {
      platformName: c.config.PLATFORM_NAME,
      status,
      title: 'Sign-in failed',
      body: html`<div class="card"><h1>Sign-in failed</h1><p class="lead">${message}</p>${
        reset
          ? html`<div class="links"><a href="/account/login">Back to sign in</a><a href="/account/forgot-password">Reset your password</a></div>`
          : html`<a href="/account/login">Back to sign in</a>`
      }</div>`,
    });

  /**
   * The provider and its configuration: null when there is none; undefined (logged) when its discovery fails or its
   * secret opens no more (sealed under a lost at-rest secret: naming the provider again mends it).
   */
  const providerOf = (slug: string) =>
    sso.get(slug).catch((err) => {
      c.logger.warn({ err, slug }, 'identity provider discovery failed');
      return undefined;
    });
  const unreachable = (res: Response) =>
    failed(res, 'The sign-in provider cannot be reached right now. Try again later.', 502);

  router.get('/account/sso/:slug', async (req, res) => {
    const slug = String(req.params.slug);
    const found = await providerOf(slug);
    if (found === null) return failed(res, 'There is no such sign-in provider.', 404);
    if (!found) return unreachable(res);
    const base = publicBaseUrl(c.config);
    const pending: PendingSso = {
      slug,
      state: oidc.randomState(),
      nonce: oidc.randomNonce(),
      verifier: oidc.randomPKCECodeVerifier(),
      next: safeNext(req.query.next),
      exp: Math.floor(c.clock.now().getTime() / 1000) + STATE_SECONDS,
    };
    const body = Buffer.from(JSON.stringify(pending)).toString('base64url');
    res.cookie(STATE_COOKIE, `${body}.${sign(body)}`, {
      httpOnly: true,
      sameSite: 'lax',
      secure: secureCookies(base),
      path: '/account/sso',
      maxAge: STATE_SECONDS * 1000,
    });
    const url = oidc.buildAuthorizationUrl(found.config, {
      redirect_uri: `${base}/account/sso/${slug}/callback`,
      scope: 'openid email profile',
      code_challenge: await oidc.calculatePKCECodeChallenge(pending.verifier),
      code_challenge_method: 'S256',
      state: pending.state,
      nonce: pending.nonce,
    });
    res.redirect(303, url.toString());
  });

  router.get('/account/sso/:slug/callback', async (req, res) => {
    const slug = String(req.params.slug);
    const base = publicBaseUrl(c.config);
    const raw = readCookie(req, STATE_COOKIE);
    res.clearCookie(STATE_COOKIE, {
      httpOnly: true,
      sameSite: 'lax',
      secure: secureCookies(base),
      path: '/account/sso',
    });
    const [body, mac] = (raw ?? '').split('.');
    const expected = Buffer.from(sign(body ?? ''));
    // bytes against bytes: a signature of as many characters but other bytes (non-ASCII) must not throw
    const given = Buffer.from(mac ?? '');
    if (!body || !mac || expected.length !== given.length || !timingSafeEqual(expected, given)) {
      return failed(res, 'The sign-in took too long or was started elsewhere. Please start again.');
    }
    const pending = JSON.parse(Buffer.from(body, 'base64url').toString()) as PendingSso;
    if (pending.slug !== slug || pending.exp < c.clock.now().getTime() / 1000) {
      return failed(res, 'The sign-in took too long. Please start again.');
    }
    // an instance that has not discovered it yet (another one, or one started since) discovers it here
    const found = await providerOf(slug);
    if (found === null) return failed(res, 'There is no such sign-in provider.', 404);
    if (!found) return unreachable(res);
    let claims: Parameters<typeof userForIdentity>[3];
    try {
      const tokens = await oidc.authorizationCodeGrant(found.config, new URL(req.originalUrl, base), {
        pkceCodeVerifier: pending.verifier,
        expectedState: pending.state,
        expectedNonce: pending.nonce,
        idTokenExpected: true,
      });
      const idToken = tokens.claims()!;
      // Many providers put email and profile claims only in userinfo (OIDC Core 5.4).
      claims =
        idToken.email === undefined
          ? {
              ...(await oidc.fetchUserInfo(found.config, tokens.access_token, idToken.sub)),
              sub: idToken.sub,
            }
          : idToken;
    } catch (err) {
      c.logger.warn({ err, slug }, 'external sign-in refused');
      return failed(res, `${found.provider.name} did not complete the sign-in.`);
    }
    let user: UserDoc;
    try {
      user = await userForIdentity(c, sso, found.provider, claims);
    } catch (err) {
      if (err instanceof AppError) {
        const reset = err.error === 'SsoLinkRefused' || err.error === 'SignupRefused';
        return failed(res, err.message, err.kind === 'conflict' ? 409 : 403, reset);
      }
      throw err;
    }
    await finish(req, res, user, pending.next);
  });
}
