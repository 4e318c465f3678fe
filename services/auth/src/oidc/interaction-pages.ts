import { AppError } from '@platform/kernel';
import express, { type Request, type Response, type Router } from 'express';
import type { Accounts } from '../accounts/accounts';
import { clientAddress } from '../accounts/client-address';
import type { AuthContext } from '../context';
import type { UserDoc } from '../data/collections';
import { loadCaller } from '../domain/caller';
import type { FormTokens } from '../pages/csrf';
import { html, type Raw, sendPage } from '../pages/html';
import { signInForm } from '../pages/sign-in-form';
import type { SsoClients, SsoProviderDoc } from '../sso/providers';
import { type OidcProviderHost } from './provider';

const SCOPE_TEXT: Record<string, string> = {
  openid: 'Know who you are (your user id)',
  email: 'See your email address',
  profile: 'See your name',
  offline_access: 'Stay signed in (keep access when you are away)',
};

const text = (v: unknown, max = 256) => (typeof v === 'string' ? v.slice(0, max) : '');

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
  finishPassword: (req: Request, res: Response, user: UserDoc, next: string) => Promise<void>,
  sso: SsoClients,
): void {
  const platformName = c.config.PLATFORM_NAME;
  const form = express.urlencoded({ extended: false, limit: '16kb' });

  const targetsOf = async (clientId: string): Promise<string[]> => {
    const doc = await host.clients.findOne({ _id: clientId });
    return [...new Set((doc?.metadata.redirect_uris ?? []).map((u) => new URL(u).origin))];
  };

  const page = async (res: Response, clientId: string, title: string, body: Raw, status = 200) =>
    sendPage(res, { platformName, title, body, status, formTargets: await targetsOf(clientId) });

  const signedInUser = async (req: Request): Promise<string | null> => {
    if (!req.principal) return null;
    try {
      const caller = await loadCaller(c.collections, c.clock, req);
      if (caller.kind !== 'user' || caller.via !== 'session' || caller.user.anonymous) return null;
      // A session from before the person turned on two-step verification does not skip it.
      if (!caller.holder.mfa && (await accounts.mfa.enabled(caller.user._id))) return null;
      return caller.user._id;
    } catch {
      return null;
    }
  };

  const loginForm = (
    uid: string,
    clientName: string,
    error?: string,
    email = '',
    providers: SsoProviderDoc[] = [],
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

  const consentForm = (uid: string, clientName: string, scopes: string[]) => html`<div class="card">
<h1>Allow access?</h1><p class="lead"><strong>${clientName}</strong> asks to:</p>
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
    const doc = await host.clients.findOne({ _id: clientId });
    return doc?.metadata.client_name ?? clientId;
  };

  router.get('/oidc/interaction/:uid', async (req, res) => {
    const provider = await host.provider();
    const details = await provider.interactionDetails(req, res);
    const clientId = String(details.params.client_id);
    const clientName = await clientNameOf(clientId);
    if (details.prompt.name === 'login') {
      const userId = await signedInUser(req);
      if (userId) {
        return provider.interactionFinished(
          req,
          res,
          { login: { accountId: userId } },
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
      .filter((s) => s in SCOPE_TEXT);
    return page(res, clientId, 'Allow access', consentForm(details.uid, clientName, requested));
  });

  router.post('/oidc/interaction/:uid/login', form, async (req, res) => {
    const provider = await host.provider();
    const details = await provider.interactionDetails(req, res);
    const clientId = String(details.params.client_id);
    const clientName = await clientNameOf(clientId);
    const email = text(req.body?.email, 254);
    if (!tokens.valid(details.uid, 'interaction-login', req.body?.csrf)) {
      return page(
        res,
        clientId,
        'Sign in',
        loginForm(details.uid, clientName, 'The form expired; try again.', email),
        403,
      );
    }
    let user: UserDoc;
    try {
      user = await accounts.authenticate(email, text(req.body?.password), clientAddress(req));
    } catch (err) {
      if (!(err instanceof AppError)) throw err;
      const status = err.kind === 'rate_limited' ? 429 : 401;
      const message = err.kind === 'invalid_input' ? 'Enter your email and password.' : err.message;
      return page(res, clientId, 'Sign in', loginForm(details.uid, clientName, message, email), status);
    }
    // The platform session (and the second factor, when enrolled) first; the interaction then resumes
    // and sees the signed-in person.
    await finishPassword(req, res, user, `/oidc/interaction/${details.uid}`);
  });

  router.post('/oidc/interaction/:uid/confirm', form, async (req, res) => {
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
    const grant = details.grantId
      ? (await provider.Grant.find(details.grantId))!
      : new provider.Grant({ accountId, clientId: String(details.params.client_id) });
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
  });

  router.post('/oidc/interaction/:uid/abort', form, async (req, res) => {
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
  });
}
