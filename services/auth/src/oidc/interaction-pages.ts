import { API_SCOPE } from '@platform/contracts';
import { AppError } from '@platform/kernel';
import express, { type Request, type RequestHandler, type Response, type Router } from 'express';
import { errors } from 'oidc-provider';
import type { Accounts, PasswordCheck } from '../accounts/accounts';
import { clientAddress } from '../accounts/client-address';
import type { AuthContext } from '../context';
import type { FormTokens } from '../pages/csrf';
import { formText } from '../pages/form-fields';
import { html, type Raw, sendPage } from '../pages/html';
import { signInForm } from '../pages/sign-in-form';
import type { FinishPassword } from '../pages/sign-in-pages';
import type { SsoClients, SsoProvider } from '../sso/providers';
import { UnreadableClientSecret } from './clients';
import { browserSignIn, type OidcProviderHost } from './provider';

const SCOPE_TEXT: Record<string, string> = {
  openid: 'Know who you are (your user id)',
  email: 'See your email address',
  profile: 'See your name',
  offline_access: 'Stay signed in (keep access when you are away)',
  // the platform API's resource scope (decision 0109): without it the application's token reads userinfo only
  [API_SCOPE]: 'Use the platform API as you: your organizations, their API keys, models and usage',
};

/** Why the provider asks who the person is; only these may be answered by the browser's platform session. */
const SESSION_ANSWERS = new Set(['no_session', 'platform_session']);

/**
 * The pages of an OpenID Connect interaction (`interactions.url`): sign in, then consent. A person
 * already signed in to the platform (the edge resolved the `access-token` cookie) skips the sign-in
 * form. Forms carry a CSRF token bound to the interaction; the interaction cookie is SameSite=Lax.
 */
export function mountInteractionPages(
  router: Router,
  c: AuthContext,
  host: OidcProviderHost,
  accounts: Accounts,
  tokens: FormTokens,
  finishPassword: FinishPassword,
  sso: SsoClients,
): void {
  const platformName = c.config.PLATFORM_NAME;
  const form = express.urlencoded({ extended: false, limit: '16kb' });

  const targetsOf = async (clientId: string): Promise<string[]> => {
    const doc = await host.clients.find(clientId);
    return [...new Set((doc?.metadata.redirect_uris ?? []).map((u) => new URL(u).origin))];
  };

  const page = async (res: Response, clientId: string, title: string, body: Raw, status = 200) =>
    sendPage(res, { platformName, title, body, status, formTargets: await targetsOf(clientId) });

  // An interaction that is unknown, expired or finished (a back button, a second tab) is the person's
  // to restart at the application, not a server error; so is one of an application whose secret opens no more (the
  // provider refuses it as unknown from now on, and the operator is told).
  const interaction =
    (handler: (req: Request, res: Response) => Promise<unknown>): RequestHandler =>
    async (req, res, next) => {
      try {
        await handler(req, res);
      } catch (err) {
        if (err instanceof UnreadableClientSecret) c.logger.error({ clientId: err.client._id }, err.message);
        else if (!(err instanceof errors.OIDCProviderError) || err.status >= 500) return next(err);
        sendPage(res, {
          platformName,
          title: 'Sign-in problem',
          status: err instanceof errors.OIDCProviderError ? err.status : 400,
          body: html`<div class="card"><h1>This sign-in request is no longer valid</h1><p class="lead">It has expired or was already used. Go back to the application and sign in again.</p></div>`,
        });
      }
    };

  const loginForm = (
    uid: string,
    clientName: string,
    error?: string,
    email = '',
    providers: SsoProvider[] = [],
  ) =>
    signInForm({
      lead: html`to continue to <strong>${clientName}</strong>`,
      action: `/oidc/interaction/${uid}/login`,
      hidden: { csrf: tokens.issue(uid, 'interaction-login') },
      ssoNext: `/oidc/interaction/${uid}`,
      novalidate: true,
      error,
      email,
      providers,
    });

  /** `account`: whose account the access is to (the person may have more than one) */
  const consentForm = (
    uid: string,
    clientName: string,
    scopes: string[],
    account: string | null,
  ) => html`<div class="card">
<h1>Allow access?</h1><p class="lead">${
    account
      ? html`<strong>${clientName}</strong> asks for access to your account <strong>${account}</strong>. It will be able to:`
      : html`<strong>${clientName}</strong> will be able to:`
  }</p>
<ul>${scopes.map((s) => html`<li>${SCOPE_TEXT[s] ?? s}</li>`)}</ul>
<form method="post" action="/oidc/interaction/${uid}/confirm">
<input type="hidden" name="csrf" value="${tokens.issue(uid, 'interaction-confirm')}">
<button type="submit">Allow</button>
</form>
<form method="post" action="/oidc/interaction/${uid}/abort">
<input type="hidden" name="csrf" value="${tokens.issue(uid, 'interaction-abort')}">
<button type="submit" class="secondary">Deny</button>
</form>
</div>`;

  const clientNameOf = async (clientId: string) => {
    const doc = await host.clients.find(clientId);
    return doc?.metadata.client_name ?? clientId;
  };

  router.get(
    '/oidc/interaction/:uid',
    interaction(async (req, res) => {
      const provider = await host.provider();
      const details = await provider.interactionDetails(req, res);
      const clientId = String(details.params.client_id);
      const clientName = await clientNameOf(clientId);
      if (details.prompt.name === 'login') {
        const signedIn = await browserSignIn(c, req);
        // prompt=login, max_age, id_token_hint: only a sign-in made during this interaction answers them.
        const answers =
          signedIn &&
          (details.prompt.reasons.every((r) => SESSION_ANSWERS.has(r)) ||
            signedIn.since.getTime() >= details.iat * 1000);
        if (answers) {
          return provider.interactionFinished(
            req,
            res,
            { login: { accountId: signedIn.userId, ts: Math.floor(signedIn.since.getTime() / 1000) } },
            { mergeWithLastSubmission: false },
          );
        }
        return page(
          res,
          clientId,
          'Sign in',
          loginForm(details.uid, clientName, undefined, '', await sso.list()),
        );
      }
      const requested = String(details.params.scope ?? 'openid')
        .split(' ')
        // own members only: a scope named `constructor` or `__proto__` must not list Object's
        .filter((s) => Object.hasOwn(SCOPE_TEXT, s));
      const accountId = details.session?.accountId;
      const user = accountId ? await c.collections.users.findOne({ _id: accountId }) : null;
      return page(
        res,
        clientId,
        'Allow access',
        consentForm(details.uid, clientName, requested, user?.email ?? null),
      );
    }),
  );

  router.post(
    '/oidc/interaction/:uid/login',
    form,
    interaction(async (req, res) => {
      const provider = await host.provider();
      const details = await provider.interactionDetails(req, res);
      const clientId = String(details.params.client_id);
      const clientName = await clientNameOf(clientId);
      const email = formText(req.body?.email, 254);
      if (!tokens.valid(details.uid, 'interaction-login', req.body?.csrf)) {
        return page(
          res,
          clientId,
          'Sign in',
          loginForm(details.uid, clientName, 'The form expired; try again.', email, await sso.list()),
          403,
        );
      }
      let checked: PasswordCheck;
      try {
        checked = await accounts.authenticate(email, formText(req.body?.password), clientAddress(req));
      } catch (err) {
        if (!(err instanceof AppError)) throw err;
        const status = err.kind === 'rate_limited' ? 429 : 401;
        const message = err.kind === 'invalid_input' ? 'Enter your email and password.' : err.message;
        return page(
          res,
          clientId,
          'Sign in',
          loginForm(details.uid, clientName, message, email, await sso.list()),
          status,
        );
      }
      // The platform session (and the second factor, when enrolled) first; the interaction then resumes
      // and sees the signed-in person.
      await finishPassword(req, res, checked.user, `/oidc/interaction/${details.uid}`, checked.passwordHash);
    }),
  );

  router.post(
    '/oidc/interaction/:uid/confirm',
    form,
    interaction(async (req, res) => {
      const provider = await host.provider();
      const details = await provider.interactionDetails(req, res);
      if (
        !tokens.valid(details.uid, 'interaction-confirm', req.body?.csrf) ||
        details.prompt.name !== 'consent'
      ) {
        return res.redirect(303, `/oidc/interaction/${details.uid}`);
      }
      const accountId = details.session!.accountId;
      const missing = details.prompt.details as {
        missingOIDCScope?: string[];
        missingOIDCClaims?: string[];
        missingResourceScopes?: Record<string, string[]>;
      };
      const grant =
        (details.grantId && (await provider.Grant.find(details.grantId))) ||
        new provider.Grant({ accountId, clientId: String(details.params.client_id) });
      if (missing.missingOIDCScope) grant.addOIDCScope(missing.missingOIDCScope.join(' '));
      if (missing.missingOIDCClaims) grant.addOIDCClaims(missing.missingOIDCClaims);
      for (const [indicator, scopes] of Object.entries(missing.missingResourceScopes ?? {})) {
        grant.addResourceScope(indicator, scopes.join(' '));
      }
      const grantId = await grant.save();
      return provider.interactionFinished(
        req,
        res,
        { consent: { grantId } },
        { mergeWithLastSubmission: true },
      );
    }),
  );

  router.post(
    '/oidc/interaction/:uid/abort',
    form,
    interaction(async (req, res) => {
      const provider = await host.provider();
      const details = await provider.interactionDetails(req, res);
      if (!tokens.valid(details.uid, 'interaction-abort', req.body?.csrf)) {
        return res.redirect(303, `/oidc/interaction/${details.uid}`);
      }
      return provider.interactionFinished(
        req,
        res,
        { error: 'access_denied', error_description: 'The person declined the request' },
        { mergeWithLastSubmission: false },
      );
    }),
  );
}
