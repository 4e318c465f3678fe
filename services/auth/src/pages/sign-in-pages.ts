import { AppError } from '@platform/kernel';
import express, { type Request, type Response, type Router } from 'express';
import type { Accounts, PasswordCheck } from '../accounts/accounts';
import { clientAddress } from '../accounts/client-address';
import { setSessionCookies } from '../accounts/cookies';
import { consumeOrThrow } from '../accounts/login-throttle';
import { publicBaseUrl } from '../accounts/public-url';
import type { IssuedLogin } from '../accounts/sessions';
import type { RateLimiterStorePort } from '../accounts/store-rate-limiter';
import type { AuthContext } from '../context';
import type { UserDoc } from '../data/collections';
import { Email } from '../routes/accounts';
import type { SsoClients, SsoProvider } from '../sso/providers';
import type { FormTokens } from './csrf';
import { formName, formText } from './form-fields';
import { alert, errorField, html, type Raw, raw, sendPage } from './html';
import { browserBinding, type MfaChallenge, pageSession, safeNext } from './page-session';
import { signInForm } from './sign-in-form';

/**
 * Ends a sign-in whose password was right: the second factor's page when enrolled, else the session cookies and
 * `next`; `passwordHash` is the hash the password was checked against (a reset since then opens no session).
 */
export type FinishPassword = (
  req: Request,
  res: Response,
  user: UserDoc,
  next: string,
  passwordHash?: string,
) => Promise<void>;

/**
 * Sign-in pages without JavaScript: sign in (then the second factor when enrolled), sign up, forgot
 * password. Forms carry a CSRF token bound to the browser's `csrf-token` cookie (or, for the second
 * factor, to the pending-challenge cookie). Success sets the session cookies and goes to `next`.
 */
export function mountSignInPages(
  router: Router,
  c: AuthContext,
  accounts: Accounts,
  tokens: FormTokens,
  challenge: MfaChallenge,
  sso: SsoClients,
  mailLimiter: RateLimiterStorePort,
): { finishPassword: FinishPassword } {
  const platformName = c.config.PLATFORM_NAME;
  const form = express.urlencoded({ extended: false, limit: '16kb' });
  const show = (res: Response, title: string, body: Raw, status = 200) =>
    sendPage(res, { platformName, title, body, status });

  const loginForm = (
    csrf: string,
    next: string,
    error?: string | Raw,
    email = '',
    providers: SsoProvider[] = [],
  ) =>
    signInForm({
      lead: html`Welcome back to ${platformName}.`,
      action: '/account/login',
      hidden: { csrf, next },
      ssoNext: next,
      error,
      email,
      providers,
    });

  /** a wrong email or password (it never says which): what to do, with the link to it */
  const wrongPassword = html`Email or password is incorrect. Check both, or <a href="/account/forgot-password">reset your password</a>.`;

  const mfaForm = (csrf: string, next: string, error?: string) => html`<div class="card">
<h1>Two-step verification</h1><p class="lead">Enter the 6-digit code from your authenticator app, or one of your recovery codes.</p>
${alert('error', error)}
<form method="post" action="/account/login/mfa">
<input type="hidden" name="csrf" value="${csrf}"><input type="hidden" name="next" value="${next}">
<label for="code">Code</label>
<input id="code" name="code" type="text" autocomplete="one-time-code" autocapitalize="none" spellcheck="false" required maxlength="20"${error ? errorField(error) : raw(' autofocus')}>
<button type="submit">Verify</button>
</form>
<div class="links"><a href="/account/login">Start over</a></div>
</div>`;

  /** `field`: the one the error is about, which takes the focus */
  const signupForm = (
    csrf: string,
    error?: string | Raw,
    v: Record<string, string> = {},
    field?: 'email' | 'password',
  ) => html`<div class="card">
<h1>Create your account</h1><p class="lead">It takes a minute. We will send you a link to confirm your email.</p>
${alert('error', error)}
<form method="post" action="/account/signup">
<input type="hidden" name="csrf" value="${csrf}">
<div class="row"><div><label for="firstName">First name <span class="optional">(optional)</span></label><input id="firstName" name="firstName" type="text" autocomplete="given-name" maxlength="100" value="${v.firstName ?? ''}"></div>
<div><label for="lastName">Last name <span class="optional">(optional)</span></label><input id="lastName" name="lastName" type="text" autocomplete="family-name" maxlength="100" value="${v.lastName ?? ''}"></div></div>
<label for="email">Email</label>
<input id="email" name="email" type="email" autocomplete="email" required value="${v.email ?? ''}"${field === 'email' ? errorField(error) : raw('')}>
<label for="password">Password</label>
<input id="password" name="password" type="password" autocomplete="new-password" required minlength="${c.config.PASSWORD_MIN_LENGTH}" maxlength="256"${errorField(field === 'password' ? error : undefined, { describedBy: 'password-hint' })}>
<div class="hint" id="password-hint">At least ${c.config.PASSWORD_MIN_LENGTH} characters. A few unrelated words make a strong one.</div>
<button type="submit">Create account</button>
</form>
<div class="links"><span>Have an account? <a href="/account/login">Sign in</a></span></div>
</div>`;

  const forgotForm = (csrf: string, error?: string) => html`<div class="card">
<h1>Reset your password</h1><p class="lead">We will email you a link to choose a new one.</p>
${alert('error', error)}
<form method="post" action="/account/forgot-password">
<input type="hidden" name="csrf" value="${csrf}">
<label for="email">Email</label>
<input id="email" name="email" type="email" autocomplete="email" required${error ? errorField(error, { invalid: false }) : raw(' autofocus')}>
<button type="submit">Send the link</button>
</form>
<div class="links"><a href="/account/login">Back to sign in</a></div>
</div>`;

  /**
   * After a right password (`passwordHash` the one it was checked against) or an identity provider's sign-in: the
   * second factor when enrolled, else the session.
   */
  async function finishPassword(
    req: Request,
    res: Response,
    user: UserDoc,
    next: string,
    passwordHash?: string,
  ): Promise<void> {
    const base = publicBaseUrl(c.config);
    if (await accounts.mfa.enabled(user._id)) {
      challenge.start(res, user._id, base, passwordHash);
      res.redirect(303, `/account/login/mfa?next=${encodeURIComponent(next)}`);
      return;
    }
    const checked = passwordHash === undefined ? undefined : (current: string) => current === passwordHash;
    await openSession(req, res, user, next, false, checked);
  }

  /**
   * The session, and on to `next`. A sign-in a new password overtook (`Accounts.signedIn`) gets the sign-in page
   * again, as after a wrong password.
   */
  async function openSession(
    req: Request,
    res: Response,
    user: UserDoc,
    next: string,
    mfa: boolean,
    checked: ((passwordHash: string) => boolean) | undefined,
  ): Promise<void> {
    const base = publicBaseUrl(c.config);
    let issued: IssuedLogin;
    try {
      issued = await accounts.signedIn(user, clientAddress(req), mfa, checked);
    } catch (err) {
      if (!(err instanceof AppError && err.error === 'InvalidCredentials')) throw err;
      return signInAgain(req, res, user, next);
    }
    setSessionCookies(res, issued.token, issued.expiresAt, base);
    res.redirect(303, next);
  }

  /** The sign-in page after a password a new one replaced meanwhile: 401, as after a wrong password. */
  async function signInAgain(req: Request, res: Response, user: UserDoc, next: string): Promise<void> {
    const csrf = tokens.issue(browserBinding(req, res, publicBaseUrl(c.config)), 'login');
    show(res, 'Sign in', loginForm(csrf, next, wrongPassword, user.email ?? '', await sso.list()), 401);
  }

  router.get('/account/login', async (req, res) => {
    const next = safeNext(req.query.next);
    if (await pageSession(c, req)) return res.redirect(303, next);
    const binding = browserBinding(req, res, publicBaseUrl(c.config));
    show(res, 'Sign in', loginForm(tokens.issue(binding, 'login'), next, undefined, '', await sso.list()));
  });

  router.post('/account/login', form, async (req, res) => {
    const base = publicBaseUrl(c.config);
    const binding = browserBinding(req, res, base);
    const next = safeNext(req.body?.next);
    const email = formText(req.body?.email, 254);
    const csrf = tokens.issue(binding, 'login');
    if (!tokens.valid(binding, 'login', req.body?.csrf)) {
      return show(
        res,
        'Sign in',
        loginForm(csrf, next, 'The form expired. Please try again.', email, await sso.list()),
        403,
      );
    }
    let checked: PasswordCheck;
    try {
      checked = await accounts.authenticate(email, formText(req.body?.password), clientAddress(req));
    } catch (err) {
      if (!(err instanceof AppError)) throw err;
      const status = err.kind === 'rate_limited' ? 429 : 401;
      const message = err.error === 'InvalidCredentials' ? wrongPassword : err.message;
      return show(res, 'Sign in', loginForm(csrf, next, message, email, await sso.list()), status);
    }
    await finishPassword(req, res, checked.user, next, checked.passwordHash);
  });

  router.get('/account/login/mfa', (req, res) => {
    const pending = challenge.read(req);
    if (!pending) return res.redirect(303, '/account/login');
    show(res, 'Two-step verification', mfaForm(tokens.issue(pending.value, 'mfa'), safeNext(req.query.next)));
  });

  router.post('/account/login/mfa', form, async (req, res) => {
    const base = publicBaseUrl(c.config);
    const pending = challenge.read(req);
    if (!pending) return res.redirect(303, '/account/login');
    const next = safeNext(req.body?.next);
    const csrf = tokens.issue(pending.value, 'mfa');
    if (!tokens.valid(pending.value, 'mfa', req.body?.csrf)) {
      return show(
        res,
        'Two-step verification',
        mfaForm(csrf, next, 'The form expired. Please try again.'),
        403,
      );
    }
    const user = await c.collections.users.findOne({ _id: pending.userId });
    if (!user || user.deletedAt) return res.redirect(303, '/account/login');
    // a new password since this one was checked: no code is spent (nor a point of the login budget) on this step
    if (!(await accounts.passwordKept(user, pending.checked))) {
      challenge.end(res, base);
      return signInAgain(req, res, user, next);
    }
    let right: boolean;
    try {
      right = await accounts.secondFactor(user, formText(req.body?.code, 20), clientAddress(req));
    } catch (err) {
      if (!(err instanceof AppError && err.kind === 'rate_limited')) throw err;
      return show(res, 'Two-step verification', mfaForm(csrf, next, err.message), 429);
    }
    if (!right) {
      return show(
        res,
        'Two-step verification',
        mfaForm(csrf, next, 'That code is not right, or was used already.'),
        401,
      );
    }
    challenge.end(res, base);
    await openSession(req, res, user, next, true, pending.checked);
  });

  router.get('/account/signup', async (req, res) => {
    if (await pageSession(c, req)) return res.redirect(303, '/account');
    const binding = browserBinding(req, res, publicBaseUrl(c.config));
    show(res, 'Create account', signupForm(tokens.issue(binding, 'signup')));
  });

  router.post('/account/signup', form, async (req, res) => {
    const base = publicBaseUrl(c.config);
    const binding = browserBinding(req, res, base);
    const values = {
      email: formText(req.body?.email, 254).trim(),
      firstName: formName(req.body?.firstName, 100),
      lastName: formName(req.body?.lastName, 100),
    };
    const csrf = tokens.issue(binding, 'signup');
    if (!tokens.valid(binding, 'signup', req.body?.csrf)) {
      return show(
        res,
        'Create account',
        signupForm(csrf, 'The form expired. Please try again.', values),
        403,
      );
    }
    // the API's own rule (POST /v2/signup, /v2/login): an address the page took, the API would refuse to sign in
    if (!Email.safeParse(values.email).success) {
      return show(
        res,
        'Create account',
        signupForm(csrf, 'Enter a valid email address.', values, 'email'),
        400,
      );
    }
    try {
      await consumeOrThrow(
        mailLimiter,
        clientAddress(req),
        'Too many sign-ups from this address; try again later.',
      );
      const issued = await accounts.signup(
        {
          email: values.email,
          password: formText(req.body?.password),
          ...(values.firstName ? { firstName: values.firstName } : {}),
          ...(values.lastName ? { lastName: values.lastName } : {}),
        },
        null,
        base,
      );
      setSessionCookies(res, issued.token, issued.expiresAt, base);
    } catch (err) {
      if (!(err instanceof AppError)) throw err;
      const text =
        err.kind === 'invalid_input'
          ? err.message.replace(/^Invalid body: password: /, 'Password: ')
          : err.message;
      const field = err.kind === 'conflict' ? 'email' : text.startsWith('Password') ? 'password' : undefined;
      // the address has an account (with a password, or made by a single sign-on): the two ways on, as links
      const message =
        err.error === 'SignupRefused'
          ? html`An account cannot be created with this email. <a href="/account/login">Sign in</a>, or <a href="/account/forgot-password">reset your password</a>.`
          : text;
      return show(
        res,
        'Create account',
        signupForm(csrf, message, values, field),
        err.kind === 'conflict' ? 409 : 400,
      );
    }
    res.redirect(303, '/account?welcome=1');
  });

  router.get('/account/forgot-password', (req, res) => {
    const binding = browserBinding(req, res, publicBaseUrl(c.config));
    show(res, 'Reset password', forgotForm(tokens.issue(binding, 'forgot')));
  });

  router.post('/account/forgot-password', form, async (req, res) => {
    const base = publicBaseUrl(c.config);
    const binding = browserBinding(req, res, base);
    if (!tokens.valid(binding, 'forgot', req.body?.csrf)) {
      return show(
        res,
        'Reset password',
        forgotForm(tokens.issue(binding, 'forgot'), 'The form expired. Please try again.'),
        403,
      );
    }
    const email = formText(req.body?.email, 254).trim();
    try {
      await consumeOrThrow(
        mailLimiter,
        clientAddress(req),
        'Too many requests from this address; try again later.',
      );
    } catch (err) {
      if (!(err instanceof AppError)) throw err;
      return show(res, 'Reset password', forgotForm(tokens.issue(binding, 'forgot'), err.message), 429);
    }
    if (/^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(email)) await accounts.requestPasswordReset(email, base);
    show(
      res,
      'Check your email',
      html`<div class="card"><h1>Check your email</h1><p class="lead">If an account uses this address, a link to choose a new password is on its way. It works for ${Math.round(c.config.PASSWORD_RESET_TTL_SECONDS / 60)} minutes.</p><a href="/account/login">Back to sign in</a></div>`,
    );
  });

  return { finishPassword };
}
