import type { SsoProvider } from '../sso/providers';
import { alert, errorField, html, type Raw, raw } from './html';

/** The email-and-password form of the account pages and of the OIDC sign-in step: one markup for both. */
export function signInForm(options: {
  /** the line under the heading */
  lead: Raw;
  /** where the form posts */
  action: string;
  /** hidden fields (the per-form CSRF token, where to go next) */
  hidden: Record<string, string>;
  /** where single sign-on comes back to */
  ssoNext: string;
  error?: string | Raw;
  email?: string;
  providers?: SsoProvider[];
  /** leave the checks of the fields to the server (the OIDC step shows its own errors) */
  novalidate?: boolean;
}): Raw {
  const { lead, action, hidden, ssoNext, error, email = '', providers = [] } = options;
  // after an error the email is kept: the person corrects the password, so that field takes the focus
  const onPassword = Boolean(error && email);
  // (the error may be about either field, or neither: a rate limit, an expired form)
  const emailField = onPassword ? raw('') : error ? errorField(error, { invalid: false }) : raw(' autofocus');
  const passwordField = onPassword ? errorField(error, { invalid: false }) : raw('');
  const formOpen = options.novalidate
    ? html`<form method="post" action="${action}" novalidate>`
    : html`<form method="post" action="${action}">`;
  return html`<div class="card">
<h1>Sign in</h1><p class="lead">${lead}</p>
${alert('error', error)}
${formOpen}
${Object.entries(hidden).map(([name, value]) => html`<input type="hidden" name="${name}" value="${value}">`)}
<label for="email">Email</label>
<input id="email" name="email" type="email" autocomplete="username" required value="${email}"${emailField}>
<label for="password">Password</label>
<input id="password" name="password" type="password" autocomplete="current-password" required${passwordField}>
<button type="submit">Sign in</button>
</form>
${providers.map((p) => html`<a class="button secondary" href="/account/sso/${p._id}?next=${encodeURIComponent(ssoNext)}">Sign in with ${p.name}</a>`)}
<div class="links"><a href="/account/signup">Create an account</a><a href="/account/forgot-password">Forgot your password?</a></div>
</div>`;
}
