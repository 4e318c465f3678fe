import { AppError } from '@platform/kernel';
import express, { type Request, type Response, type Router } from 'express';
import { type AccountDeletion, RECENT_SIGN_IN_SECONDS } from '../accounts/account-deletion';
import type { Accounts } from '../accounts/accounts';
import { clientAddress } from '../accounts/client-address';
import { clearSessionCookies } from '../accounts/cookies';
import { publicBaseUrl } from '../accounts/public-url';
import { revokeSession } from '../accounts/sessions';
import type { AuthContext } from '../context';
import { createAccessToken, revokeAccessToken } from '../domain/access-tokens';
import { hasBlockers } from '../domain/account-deletion';
import type { FormTokens } from './csrf';
import { formName, formText } from './form-fields';
import { alert, errorField, html, type Raw, raw, sendPage } from './html';
import { type PageSession, pageSession } from './page-session';

/** The cards of the account page, each with the forms whose answers it shows. */
type Section = 'profile' | 'mfa' | 'sessions' | 'tokens';
interface Notice {
  at: Section;
  html: Raw;
  /** the error's text, when the notice is one (its form's field is tied to it) */
  error?: string;
  /** the field whose value the error is about, when its form has several (it takes the focus, marked invalid) */
  field?: string;
}
const say = (at: Section, kind: 'ok' | 'error', message: string, field?: string): Notice => ({
  at,
  html: alert(kind, message),
  ...(kind === 'error' ? { error: message } : {}),
  ...(field ? { field } : {}),
});
const day = (d: Date) => d.toISOString().slice(0, 16).replace('T', ' ');

/** `Acme (acme), Beta (beta) and Gamma (gamma)` */
const orgNames = (orgs: Array<{ slug: string; name: string }>) =>
  orgs.map(
    (o, i) =>
      html`${i === 0 ? '' : i === orgs.length - 1 ? ' and ' : ', '}<strong>${o.name}</strong> (${o.slug})`,
  );
const plural = (n: number, one: string, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;

/**
 * The account page and its forms: profile, email verification, two-step verification (TOTP with
 * recovery codes), active sessions with sign-out, access tokens (create, see once, revoke), sign out,
 * and deleting the account (decision 0099). Every form's CSRF token is bound to the page's session id.
 */
export function mountAccountPages(
  router: Router,
  c: AuthContext,
  accounts: Accounts,
  tokens: FormTokens,
  deletion: AccountDeletion,
): void {
  const platformName = c.config.PLATFORM_NAME;
  const form = express.urlencoded({ extended: false, limit: '16kb' });

  const nav = (s: PageSession, csrf: string) =>
    html`<form method="post" action="/account/logout" class="nav"><input type="hidden" name="csrf" value="${csrf}"><span>${s.user.email}</span> <button type="submit" class="small secondary">Sign out</button></form>`;

  const show = (res: Response, s: PageSession, title: string, body: Raw, status = 200) =>
    sendPage(res, {
      platformName,
      title,
      body,
      status,
      wide: true,
      nav: nav(s, tokens.issue(s.session._id, 'logout')),
    });

  /** The page's session, or a redirect to sign-in (answers null then). */
  const requireSession = async (req: Request, res: Response): Promise<PageSession | null> => {
    const s = await pageSession(c, req);
    if (!s)
      res.redirect(
        303,
        `/account/login?next=${encodeURIComponent(req.method === 'GET' ? req.originalUrl : '/account')}`,
      );
    return s;
  };

  /** A POST of this page: signed in, and the form's CSRF token bound to the session. */
  const posted = async (req: Request, res: Response, purpose: string): Promise<PageSession | null> => {
    const s = await requireSession(req, res);
    if (!s) return null;
    if (!tokens.valid(s.session._id, purpose, req.body?.csrf)) {
      show(
        res,
        s,
        'Form expired',
        html`<div class="card"><h1>The form expired</h1><p class="lead">Nothing was changed.</p><a href="/account">Back to your account</a></div>`,
        403,
      );
      return null;
    }
    return s;
  };

  const csrfField = (s: PageSession, purpose: string) =>
    html`<input type="hidden" name="csrf" value="${tokens.issue(s.session._id, purpose)}">`;

  /**
   * The account page. A notice (what a form did, or why it did not) shows in the card of that form, and the
   * answer opens scrolled to it: the buttons far down the page post to their card's fragment, and a form's
   * answer focuses its field (a page opened at a fragment would not focus it).
   */
  async function home(s: PageSession, notice?: Notice, tokenForm = { name: '', days: '30' }) {
    const { user, session } = s;
    const now = c.clock.now();
    const [sessions, accessTokens, mfaOn, recoveryLeft] = await Promise.all([
      c.collections.sessions.find(
        { userId: user._id, revokedAt: null, expiresAt: { $gt: now } },
        { sort: { createdAt: -1 } },
      ),
      c.collections.accessTokens.find(
        { userId: user._id, revokedAt: null, expiresAt: { $gt: now } },
        { sort: { createdAt: -1 } },
      ),
      accounts.mfa.enabled(user._id),
      accounts.mfa.remainingRecoveryCodes(user._id),
    ]);
    const verified = Boolean(user.emailVerifiedAt);
    const noticeIn = (at: Section) => (notice?.at === at ? notice.html : raw(''));
    const errorIn = (at: Section) => (notice?.at === at ? notice.error : undefined);
    /** the error of `at` when it is about `field`'s value */
    const errorOn = (at: Section, field: string) => (notice?.field === field ? errorIn(at) : undefined);
    const maxDays = c.config.ACCESS_TOKEN_MAX_LIFETIME_DAYS;
    return html`<div class="card" id="profile"><h1>Your account</h1>
<p class="lead">${user.email} · ${verified ? 'email confirmed' : 'email not confirmed yet'}</p>
${noticeIn('profile')}
${
  verified
    ? raw('')
    : html`<form method="post" action="/account/verification">${csrfField(s, 'verification')}<button type="submit" class="small secondary">Send the confirmation link again</button></form>`
}
<h2>Profile</h2>
<form method="post" action="/account/profile">${csrfField(s, 'profile')}
<div class="row"><div><label for="firstName">First name</label><input id="firstName" name="firstName" type="text" maxlength="100" autocomplete="given-name" value="${user.firstName ?? ''}"></div>
<div><label for="lastName">Last name</label><input id="lastName" name="lastName" type="text" maxlength="100" autocomplete="family-name" value="${user.lastName ?? ''}"></div></div>
<button type="submit" class="small">Save profile</button></form>
</div>
<div class="card" id="mfa"><h2>Two-step verification</h2>
${noticeIn('mfa')}
${
  mfaOn
    ? html`<p>On: sign-in asks for a code from your authenticator app. ${recoveryLeft} recovery codes left.</p>
<form method="post" action="/account/mfa/disable">${csrfField(s, 'mfa-disable')}
<label for="disable-code">Code from your app, to turn it off</label>
<div class="row"><input id="disable-code" name="code" type="text" inputmode="numeric" autocomplete="one-time-code" required maxlength="20"${errorField(errorIn('mfa'))}><button type="submit" class="small secondary">Turn off</button></div></form>`
    : html`<p>Off. Protect your account with an authenticator app (TOTP).</p><a href="/account/mfa">Set up two-step verification</a>`
}
</div>
<div class="card" id="sessions"><h2>Active sessions</h2>
${noticeIn('sessions')}
<table class="stack"><thead><tr><th scope="col">Signed in</th><th scope="col">Through</th><th scope="col">Expires</th><th scope="col"><span class="hint">Action</span></th></tr></thead><tbody>
${sessions.map(
  (
    x,
  ) => html`<tr><td data-label="Signed in">${day(x.createdAt)}${x._id === session._id ? ' (this browser)' : ''}</td><td data-label="Through">${x.clientId}</td><td data-label="Expires">${day(x.expiresAt)}</td>
<td class="action"><form method="post" action="/account/sessions/${x._id}/revoke#sessions">${csrfField(s, `session:${x._id}`)}<button type="submit" class="small secondary" aria-label="Sign out the session of ${day(x.createdAt)}">Sign out</button></form></td></tr>`,
)}
</tbody></table></div>
<div class="card" id="tokens"><h2>Access tokens</h2>
${noticeIn('tokens')}
<p class="hint">Long-lived tokens for scripts and tools: <code>Authorization: Bearer at:…</code></p>
<table class="stack"><thead><tr><th scope="col">Name</th><th scope="col">Created</th><th scope="col">Expires</th><th scope="col"><span class="hint">Action</span></th></tr></thead><tbody>
${accessTokens.map(
  (
    t,
  ) => html`<tr><td data-label="Name">${t.name}</td><td data-label="Created">${day(t.createdAt)}</td><td data-label="Expires">${day(t.expiresAt)}</td>
<td class="action"><form method="post" action="/account/tokens/${t._id}/revoke#tokens">${csrfField(s, `token:${t._id}`)}<button type="submit" class="small secondary" aria-label="Revoke ${t.name}">Revoke</button></form></td></tr>`,
)}
${accessTokens.length ? raw('') : html`<tr><td colspan="4" class="empty">No access tokens yet.</td></tr>`}
</tbody></table>
<form method="post" action="/account/tokens">${csrfField(s, 'token-create')}
<div class="row"><div><label for="token-name">Token name</label><input id="token-name" name="name" type="text" required maxlength="100" value="${tokenForm.name}"${
      notice?.field === 'token-days'
        ? raw('')
        : errorField(errorIn('tokens'), { invalid: notice?.field === 'token-name' })
    }></div>
<div><label for="token-days">Valid for (days)</label><input id="token-days" name="days" type="text" inputmode="numeric" required value="${tokenForm.days}" maxlength="3"${errorField(errorOn('tokens', 'token-days'), { describedBy: 'token-days-hint' })}><div class="hint" id="token-days-hint">1 to ${maxDays} days.</div></div></div>
<button type="submit" class="small">Create token</button></form>
</div>
<div class="card" id="delete-account"><h2>Delete your account</h2>
<p>Deletes your account for good: your sign-in, sessions and access tokens, and the organizations you are the only member of. You can read exactly what goes before you confirm.</p>
<a class="danger" href="/account/delete">Delete my account…</a>
</div>`;
  }

  /**
   * The page deleting the account: what goes with it (organizations of which the person is the only member), what
   * they leave, and the proof asked; or, while they are the last owner of something other people use, what to hand
   * over first and how.
   */
  async function deletePage(s: PageSession, error?: { message: string; field: 'password' | 'code' | null }) {
    const deleter = { user: s.user, session: s.session };
    const [plan, proof, liveTokens] = await Promise.all([
      deletion.plan(s.user._id),
      deletion.proofNeeded(deleter),
      c.collections.accessTokens.count({
        userId: s.user._id,
        revokedAt: null,
        expiresAt: { $gt: c.clock.now() },
      }),
    ]);
    const { blockers } = plan;
    if (hasBlockers(blockers)) {
      return html`<div class="card" id="delete"><h1>Delete your account</h1>
<p class="lead">Not yet: you are the last owner of what other people still use. Make another member an owner, or delete it, then come back.</p>
${alert('error', error?.message)}
${
  blockers.organizations.length
    ? html`<h2>Organizations</h2><ul>${blockers.organizations.map((o) => html`<li><strong>${o.name}</strong> (${o.slug}): ${plural(o.members, 'member')}</li>`)}</ul>`
    : raw('')
}
${
  blockers.workspaces.length
    ? html`<h2>Workspaces</h2><ul>${blockers.workspaces.map((w) => html`<li><strong>${w.name}</strong> in ${w.orgSlug}: ${plural(w.members, 'member')}</li>`)}</ul>`
    : raw('')
}
<p class="hint">Through the API: ${
        blockers.organizations.length
          ? html`<code>POST /v2/orgs/{slug}/members</code> with <code>{"userId": "…", "role": "owner"}</code> makes a member an owner, <code>DELETE /v2/orgs/{slug}</code> deletes the organization${blockers.workspaces.length ? '; ' : '.'}`
          : raw('')
      }${
        blockers.workspaces.length
          ? html`<code>PUT /v2/workspaces/{id}/members/{userId}</code> with <code>{"role": "owner"}</code> makes a workspace member its owner.`
          : raw('')
      }</p>
<div class="links"><a href="/account">Back to your account</a></div></div>`;
    }
    const email = s.user.email ?? '';
    const fieldError = (field: 'password' | 'code', describedBy?: string) =>
      errorField(error?.field === field ? error.message : undefined, describedBy ? { describedBy } : {});
    const confirm = (fields: Raw) =>
      html`<form method="post" action="/account/delete">${csrfField(s, 'delete-account')}${fields}<button type="submit" class="danger">Delete my account</button></form>`;
    let proofPart: Raw;
    if (proof.kind === 'password') {
      proofPart = confirm(html`<h2>Confirm it is you</h2>
<label for="password">Your password</label>
<input id="password" name="password" type="password" autocomplete="current-password" required maxlength="256"${fieldError('password')}>
${
  proof.mfa
    ? html`<label for="code">Code from your authenticator app</label>
<input id="code" name="code" type="text" inputmode="numeric" autocomplete="one-time-code" autocapitalize="none" spellcheck="false" required maxlength="20"${fieldError('code', 'code-hint')}>
<div class="hint" id="code-hint">Or one of your recovery codes.</div>`
    : raw('')
}`);
    } else if (proof.kind === 'recent_sign_in' && !proof.recent) {
      proofPart = html`<h2>Confirm it is you</h2>
<p>Your account signs in with ${proof.providers.length ? proof.providers.map((p) => p.name).join(' or ') : 'another provider'}. Sign in again, then delete it here within ${RECENT_SIGN_IN_SECONDS / 60} minutes.</p>
${proof.providers.map((p) => html`<a class="button" href="/account/sso/${p.slug}?next=%2Faccount%2Fdelete">Sign in again with ${p.name}</a>`)}`;
    } else {
      const via = proof.kind === 'recent_sign_in' ? proof.providers.map((p) => p.name).join(' or ') : '';
      proofPart = confirm(
        html`<h2>Confirm it is you</h2><p>You signed in${via ? ` with ${via}` : ''} less than ${RECENT_SIGN_IN_SECONDS / 60} minutes ago: that is confirmation enough.</p>`,
      );
    }
    return html`<div class="card" id="delete"><h1>Delete your account</h1>
<p class="lead">This deletes ${email ? html`the account <strong>${email}</strong>` : 'your account'} for good. It cannot be undone.</p>
${alert('error', error?.message)}
<h2>What happens</h2>
<ul>
<li>You are signed out everywhere at once${liveTokens ? `, your ${plural(liveTokens, 'access token')} stop working,` : ''} and applications you allowed lose their access.</li>
<li>${proof.kind === 'password' ? 'Your password, two-step verification and links to other sign-in providers are erased.' : 'Your two-step verification and the link to your sign-in provider are erased.'}</li>
${plan.orgsDeleted.length ? html`<li>Deleted with it, with their workspaces and API keys, because you are their only member: ${orgNames(plan.orgsDeleted)}.</li>` : raw('')}
${plan.orgsLeft.length ? html`<li>You leave ${orgNames(plan.orgsLeft)}, which ${plan.orgsLeft.length === 1 ? 'goes' : 'go'} on without you.</li>` : raw('')}
${email ? html`<li>${email} can be used for a new account right away.</li>` : raw('')}
</ul>
${proofPart}
<div class="links"><a href="/account">Keep my account</a></div></div>`;
  }

  router.get('/account', async (req, res) => {
    const s = await requireSession(req, res);
    if (!s) return;
    const welcome = req.query.welcome
      ? say('profile', 'ok', 'Welcome! Your account is ready. We sent you a link to confirm your email.')
      : undefined;
    show(res, s, 'Your account', await home(s, welcome));
  });

  router.post('/account/logout', form, async (req, res) => {
    const s = await posted(req, res, 'logout');
    if (!s) return;
    await revokeSession(c, s.session._id);
    clearSessionCookies(res, publicBaseUrl(c.config));
    res.redirect(303, '/account/login');
  });

  router.post('/account/profile', form, async (req, res) => {
    const s = await posted(req, res, 'profile');
    if (!s) return;
    const firstName = formName(req.body?.firstName, 100) || null;
    const lastName = formName(req.body?.lastName, 100) || null;
    await c.collections.users.updateOne({ _id: s.user._id }, { $set: { firstName, lastName } });
    Object.assign(s.user, { firstName, lastName });
    show(res, s, 'Your account', await home(s, say('profile', 'ok', 'Profile saved.')));
  });

  router.post('/account/verification', form, async (req, res) => {
    const s = await posted(req, res, 'verification');
    if (!s) return;
    if (!s.user.emailVerifiedAt)
      await accounts.sendVerification(s.user._id, s.user.email!, publicBaseUrl(c.config));
    show(res, s, 'Your account', await home(s, say('profile', 'ok', 'We sent a new confirmation link.')));
  });

  router.post('/account/sessions/:id/revoke', form, async (req, res) => {
    const id = String(req.params.id);
    const s = await posted(req, res, `session:${id}`);
    if (!s) return;
    const target = await c.collections.sessions.findOne({ _id: id, userId: s.user._id });
    if (target) await revokeSession(c, id);
    if (id === s.session._id) {
      clearSessionCookies(res, publicBaseUrl(c.config));
      return res.redirect(303, '/account/login');
    }
    show(res, s, 'Your account', await home(s, say('sessions', 'ok', 'That session is signed out.')));
  });

  router.post('/account/tokens', form, async (req, res) => {
    const s = await posted(req, res, 'token-create');
    if (!s) return;
    const name = formName(req.body?.name, 100);
    const entered = { name, days: formText(req.body?.days, 3) };
    const days = Number(formText(req.body?.days, 4));
    const maxDays = c.config.ACCESS_TOKEN_MAX_LIFETIME_DAYS;
    // the focus goes to the field to correct: the name first, else the validity
    if (!name) {
      const msg = 'Give the token a name, to recognise it in this list.';
      return show(
        res,
        s,
        'Your account',
        await home(s, say('tokens', 'error', msg, 'token-name'), entered),
        400,
      );
    }
    if (!Number.isInteger(days) || days < 1 || days > maxDays) {
      const msg = `Enter a validity of 1 to ${maxDays} days, as a whole number.`;
      return show(
        res,
        s,
        'Your account',
        await home(s, say('tokens', 'error', msg, 'token-days'), entered),
        400,
      );
    }
    try {
      const expiresAt = new Date(c.clock.now().getTime() + days * 86_400_000).toISOString();
      const { token } = await createAccessToken(c, s.session, name, expiresAt);
      // in a focused read-only field: the page opens scrolled to it, and it is read, selected and copied whole
      const once = html`<div class="alert ok" role="status"><p id="new-token-note"><strong>Token "${name}" created.</strong> Copy it now: it is shown only once.</p>
<label for="new-token">Your new token</label><textarea id="new-token" class="secret" readonly rows="2" spellcheck="false" aria-describedby="new-token-note" autofocus>${token}</textarea></div>`;
      show(res, s, 'Your account', await home(s, { at: 'tokens', html: once }), 201);
    } catch (err) {
      if (!(err instanceof AppError)) throw err;
      // the API's answer (409 TooManyAccessTokens), with what to do about it
      const message =
        err.error === 'TooManyAccessTokens'
          ? `You have ${plural(c.config.ACCESS_TOKENS_PER_USER_LIMIT, 'access token')}, the most an account can hold. Revoke one you no longer use, then create this one.`
          : err.message;
      const status = err.kind === 'conflict' ? 409 : 400;
      show(res, s, 'Your account', await home(s, say('tokens', 'error', message), entered), status);
    }
  });

  router.post('/account/tokens/:id/revoke', form, async (req, res) => {
    const id = String(req.params.id);
    const s = await posted(req, res, `token:${id}`);
    if (!s) return;
    await revokeAccessToken(c, s.user._id, id).catch(() => undefined);
    show(res, s, 'Your account', await home(s, say('tokens', 'ok', 'The token is revoked.')));
  });

  router.get('/account/delete', async (req, res) => {
    const s = await requireSession(req, res);
    if (!s) return;
    show(res, s, 'Delete your account', await deletePage(s));
  });

  router.post('/account/delete', form, async (req, res) => {
    const s = await posted(req, res, 'delete-account');
    if (!s) return;
    const answer = {
      password: formText(req.body?.password) || undefined,
      mfaCode: formText(req.body?.code, 20).trim() || undefined,
    };
    try {
      await deletion.delete({ user: s.user, session: s.session }, answer, clientAddress(req));
    } catch (err) {
      if (!(err instanceof AppError)) throw err;
      const status =
        err.kind === 'rate_limited'
          ? 429
          : err.kind === 'conflict'
            ? 409
            : err.kind === 'forbidden'
              ? 403
              : 400;
      const needs = (err.details?.needs as string[] | undefined) ?? [];
      const field =
        err.error === 'InvalidMfaCode' || (answer.password && needs.includes('mfaCode'))
          ? 'code'
          : err.kind === 'conflict' ||
              err.error === 'PlatformSessionRequired' ||
              needs.includes('recentSignIn')
            ? null
            : 'password';
      const message = err.error === 'InvalidCredentials' ? 'That password is not right.' : err.message;
      return show(res, s, 'Delete your account', await deletePage(s, { message, field }), status);
    }
    clearSessionCookies(res, publicBaseUrl(c.config));
    res.redirect(303, '/account/deleted');
  });

  router.get('/account/deleted', (_req, res) => {
    sendPage(res, {
      platformName,
      title: 'Account deleted',
      body: html`<div class="card"><h1>Your account is deleted</h1>
<p class="lead">You are signed out everywhere, and everything that belonged only to you is gone. If you had confirmed your email address, a last mail to it says so.</p>
<p>Your email address is free: you can create a new account with it whenever you like.</p>
<a class="button" href="/account/signup">Create an account</a></div>`,
    });
  });

  const enrolPage = async (s: PageSession, error?: string) => {
    const { secret, qrSvg } = await accounts.mfa.begin(s.user._id, s.user.email!);
    return html`<div class="card"><h1>Set up two-step verification</h1>
<p class="lead">Scan the code with an authenticator app (for example Google Authenticator, 1Password or Aegis), then enter the 6-digit code it shows.</p>
${alert('error', error)}
<div class="qr" role="img" aria-label="QR code of your two-step verification secret">${raw(qrSvg)}</div>
<p class="hint">Cannot scan? Enter this key in the app: <code id="totp-secret">${secret}</code></p>
<form method="post" action="/account/mfa">${csrfField(s, 'mfa-enrol')}
<label for="code">Code from the app</label>
<input id="code" name="code" type="text" inputmode="numeric" autocomplete="one-time-code" required maxlength="6"${error ? errorField(error) : raw(' autofocus')}>
<button type="submit">Turn on</button></form>
<div class="links"><a href="/account">Cancel</a></div></div>`;
  };

  router.get('/account/mfa', async (req, res) => {
    const s = await requireSession(req, res);
    if (!s) return;
    if (await accounts.mfa.enabled(s.user._id)) return res.redirect(303, '/account');
    show(res, s, 'Two-step verification', await enrolPage(s));
  });

  router.post('/account/mfa', form, async (req, res) => {
    const s = await posted(req, res, 'mfa-enrol');
    if (!s) return;
    const codes = await accounts.mfa.confirm(s.user._id, formText(req.body?.code, 20));
    if (!codes)
      return show(
        res,
        s,
        'Two-step verification',
        await enrolPage(s, 'That code is not right. Try the newest one.'),
        400,
      );
    show(
      res,
      s,
      'Recovery codes',
      html`<div class="card"><h1>Two-step verification is on</h1>
<p class="lead">Keep these recovery codes somewhere safe. Each one signs you in once if you lose your phone. They are shown only now.</p>
<ul class="codes" id="recovery-codes">${codes.map((k) => html`<li><code>${k}</code></li>`)}</ul>
<a href="/account">Done</a></div>`,
    );
  });

  router.post('/account/mfa/disable', form, async (req, res) => {
    const s = await posted(req, res, 'mfa-disable');
    if (!s) return;
    let right: boolean;
    try {
      right = await accounts.secondFactor(s.user, formText(req.body?.code, 20), clientAddress(req));
    } catch (err) {
      if (!(err instanceof AppError && err.kind === 'rate_limited')) throw err;
      return show(res, s, 'Your account', await home(s, say('mfa', 'error', err.message)), 429);
    }
    if (!right) {
      return show(
        res,
        s,
        'Your account',
        await home(s, say('mfa', 'error', 'That code is not right; two-step verification stays on.')),
        400,
      );
    }
    await accounts.mfa.disable(s.user._id);
    show(res, s, 'Your account', await home(s, say('mfa', 'ok', 'Two-step verification is off.')));
  });
}
