import { AppError } from '@platform/kernel';
import express, { type Response, type Router } from 'express';
import type { Accounts } from '../accounts/accounts';
import type { AuthContext } from '../context';
import { sha256Hex } from '../domain/secrets';
import { alert, errorField, html, raw, sendPage } from './html';

const MAX_TOKEN = 200;
const tokenOf = (value: unknown): string =>
  typeof value === 'string' && value.length > 0 && value.length <= MAX_TOKEN ? value : '';

/**
 * The pages mailed links open: email verification (the link itself proves the mailbox) and the
 * password-reset form. The mailed token is the secret that authorises each, so they need no session.
 */
export function mountMailLinkPages(router: Router, c: AuthContext, accounts: Accounts): void {
  const platformName = c.config.PLATFORM_NAME;
  const form = express.urlencoded({ extended: false, limit: '16kb' });

  router.get('/account/verify-email', async (req, res) => {
    try {
      const user = await accounts.verifyEmail(tokenOf(req.query.token));
      sendPage(res, {
        platformName,
        title: 'Email confirmed',
        body: html`<div class="card"><h1>Email confirmed</h1><p class="lead">${user.email} is confirmed. Thank you.</p><a href="/account/login">Continue to sign in</a></div>`,
      });
    } catch (err) {
      if (!(err instanceof AppError)) throw err;
      sendPage(res, {
        platformName,
        status: 400,
        title: 'Link not valid',
        body: html`<div class="card"><h1>This link cannot be used again</h1><p class="lead">It was used already, or it is too old or incomplete. If it was used to confirm your email, that is done: you can sign in. Otherwise your account page sends a new one.</p><a href="/account/login">Sign in</a></div>`,
      });
    }
  });

  const resetForm = (token: string, error?: string) => html`<div class="card">
<h1>Choose a new password</h1><p class="lead">After the change, you are signed out everywhere.</p>
${alert('error', error)}
<form method="post" action="/account/reset-password">
<input type="hidden" name="token" value="${token}">
<label for="password">New password</label>
<input id="password" name="password" type="password" autocomplete="new-password" required minlength="${c.config.PASSWORD_MIN_LENGTH}" maxlength="256"${error ? errorField(error, { describedBy: 'password-hint', invalid: false }) : raw(' aria-describedby="password-hint" autofocus')}>
<div class="hint" id="password-hint">At least ${c.config.PASSWORD_MIN_LENGTH} characters.</div>
<button type="submit">Set new password</button>
</form>
<div class="links"><a href="/account/forgot-password">Ask for a new link</a></div></div>`;

  /**
   * A used, expired or cut link: what to do instead of a form that cannot work (a password typed there would be
   * refused for the link, after the person chose it).
   */
  const deadLink = () => html`<div class="card"><h1>This link has expired</h1>
<p class="lead">It was used already, or it is older than ${Math.round(c.config.PASSWORD_RESET_TTL_SECONDS / 60)} minutes, or it was not copied whole. Ask for a new one: it comes by email and works for ${Math.round(c.config.PASSWORD_RESET_TTL_SECONDS / 60)} minutes.</p>
<a class="button" href="/account/forgot-password">Ask for a new link</a>
<div class="links"><a href="/account/login">Back to sign in</a></div></div>`;
  const sendDeadLink = (res: Response) =>
    sendPage(res, { platformName, status: 400, title: 'Link expired', body: deadLink() });

  /** Whether the link can still set a password (as `resetPassword` will spend it: unused and not expired). */
  const live = async (token: string) =>
    Boolean(
      token &&
        (await c.collections.accountTokens.findOne({
          _id: sha256Hex(token),
          kind: 'reset_password',
          usedAt: null,
          expiresAt: { $gt: c.clock.now() },
        })),
    );

  router.get('/account/reset-password', async (req, res) => {
    const token = tokenOf(req.query.token);
    if (!(await live(token))) return sendDeadLink(res);
    sendPage(res, { platformName, title: 'New password', body: resetForm(token) });
  });

  router.post('/account/reset-password', form, async (req, res) => {
    const token = tokenOf(req.body?.token);
    const password = typeof req.body?.password === 'string' ? req.body.password.slice(0, 256) : '';
    try {
      await accounts.resetPassword(token, password);
    } catch (err) {
      if (!(err instanceof AppError)) throw err;
      if (err.error === 'InvalidToken') return sendDeadLink(res);
      return sendPage(res, {
        platformName,
        status: 400,
        title: 'New password',
        body: resetForm(token, err.message.replace(/^Invalid body: password: /, 'Password: ')),
      });
    }
    sendPage(res, {
      platformName,
      title: 'Password changed',
      body: html`<div class="card"><h1>Password changed</h1><p class="lead">Sign in with your new password.</p><a href="/account/login">Sign in</a></div>`,
    });
  });
}
