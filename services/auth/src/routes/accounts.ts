import { jsonBody, parseInput, Unauthenticated } from '@platform/kernel';
import type { Request, Response, Router } from 'express';
import { z } from 'zod';
import type { Accounts } from '../accounts/accounts';
import { clientAddress } from '../accounts/client-address';
import { setSessionCookies } from '../accounts/cookies';
import { consumeOrThrow } from '../accounts/login-throttle';
import { publicBaseUrl } from '../accounts/public-url';
import { type IssuedLogin, refreshSession } from '../accounts/sessions';
import type { RateLimiterStorePort } from '../accounts/store-rate-limiter';
import type { AuthContext } from '../context';
import { loadCaller, requireUser, type UserCaller } from '../domain/caller';
import { displayName } from './common';

export const Email = z
  .string()
  .trim()
  .max(254)
  .pipe(z.email())
  .meta({ description: 'email address (compared without regard to case)' });
const Password = z
  .string()
  .min(1)
  .max(256)
  .meta({ description: 'password; at least PASSWORD_MIN_LENGTH characters at signup' });
const PersonName = displayName(100);

export const SignupBody = z
  .strictObject({
    email: Email,
    password: Password,
    firstName: PersonName.optional(),
    lastName: PersonName.optional(),
  })
  .meta({ description: 'POST /v2/signup' });
export const LoginBody = z
  .strictObject({
    email: Email,
    password: Password,
    mfaCode: z.string().max(20).optional().meta({
      description: 'TOTP code or a recovery code; required when the account enrolled a second factor',
    }),
  })
  .meta({ description: 'POST /v2/login' });
export const RefreshBody = z
  .strictObject({ refreshToken: z.string().min(1).max(200) })
  .meta({ description: 'POST /v2/login/refresh' });
export const EmailBody = z.strictObject({ email: Email }).meta({ description: 'an email address' });
export const TokenBody = z
  .strictObject({ token: z.string().min(1).max(200) })
  .meta({ description: 'a mailed token' });
export const ResetPasswordBody = z
  .strictObject({ token: z.string().min(1).max(200), password: Password })
  .meta({ description: 'POST /v2/password/reset' });

/** 200 of POST /v2/login, /v2/signup (201) and /v2/login/refresh. */
export const UserSessionSchema = z
  .looseObject({
    userId: z.string(),
    sessionId: z.string(),
    token: z
      .string()
      .meta({ description: 'session JWT (spec 2.5 claims); also set as the access-token cookie' }),
    expiresAt: z.iso.datetime(),
    refreshToken: z.string().meta({ description: 'single use: POST /v2/login/refresh answers a new one' }),
    refreshTokenExpiresAt: z.iso.datetime(),
    user: z.looseObject({
      id: z.string(),
      email: z.string(),
      emailVerified: z.boolean(),
      firstName: z.string().nullable(),
      lastName: z.string().nullable(),
    }),
  })
  .meta({ id: 'UserSession', description: 'A signed-in session' });

function answer(res: Response, base: string, issued: IssuedLogin, status = 200) {
  setSessionCookies(res, issued.token, issued.expiresAt, base);
  res.status(status).json({
    userId: issued.userId,
    sessionId: issued.sessionId,
    token: issued.token,
    expiresAt: issued.expiresAt.toISOString(),
    refreshToken: issued.refreshToken,
    refreshTokenExpiresAt: issued.refreshTokenExpiresAt.toISOString(),
    user: {
      id: issued.user._id,
      email: issued.user.email ?? null,
      emailVerified: Boolean(issued.user.emailVerifiedAt),
      firstName: issued.user.firstName ?? null,
      lastName: issued.user.lastName ?? null,
    },
  });
}

/** The caller on a public route: a user when the edge resolved a credential, else null. */
async function optionalUser(c: AuthContext, req: Request): Promise<UserCaller | null> {
  if (!req.principal) return null;
  return requireUser(await loadCaller(c.collections, c.clock, req));
}

/**
 * Password accounts (public routes at the edge): signup, login, refresh, email verification and
 * password reset. Mails are limited per client address (ACCOUNT_MAIL_RATE_LIMIT per hour).
 */
export function mountAccountRoutes(
  router: Router,
  c: AuthContext,
  accounts: Accounts,
  mailLimiter: RateLimiterStorePort,
): void {
  const limitMail = (req: Request) =>
    consumeOrThrow(
      mailLimiter,
      clientAddress(req),
      'Too many account requests from this address; try again later',
    );

  router.post('/v2/signup', async (req, res) => {
    const body = parseInput(SignupBody, jsonBody(req));
    const caller = await optionalUser(c, req);
    await limitMail(req);
    const base = publicBaseUrl(c.config);
    answer(res, base, await accounts.signup(body, caller, base), 201);
  });

  router.post('/v2/login', async (req, res) => {
    const { email, password, mfaCode } = parseInput(LoginBody, jsonBody(req));
    const base = publicBaseUrl(c.config);
    answer(res, base, await accounts.login(email, password, clientAddress(req), mfaCode));
  });

  router.post('/v2/login/refresh', async (req, res) => {
    const { refreshToken } = parseInput(RefreshBody, jsonBody(req));
    const issued = await refreshSession(c, refreshToken);
    if (!issued)
      throw new Unauthenticated('The refresh token is invalid, expired or was used already', {
        error: 'InvalidRefreshToken',
      });
    answer(res, publicBaseUrl(c.config), issued);
  });

  router.post('/v2/email/verify', async (req, res) => {
    const { token } = parseInput(TokenBody, jsonBody(req));
    const user = await accounts.verifyEmail(token);
    res.json({ email: user.email, emailVerified: true });
  });

  router.post('/v2/email/verification', async (req, res) => {
    const caller = requireUser(await loadCaller(c.collections, c.clock, req));
    await limitMail(req);
    if (caller.user.email && !caller.user.emailVerifiedAt) {
      await accounts.sendVerification(caller.user._id, caller.user.email, publicBaseUrl(c.config));
    }
    res.status(202).json({ sent: Boolean(caller.user.email && !caller.user.emailVerifiedAt) });
  });

  router.post('/v2/password/forgot', async (req, res) => {
    const { email } = parseInput(EmailBody, jsonBody(req));
    await limitMail(req);
    await accounts.requestPasswordReset(email, publicBaseUrl(c.config));
    // The same answer whether or not the email has an account.
    res.status(202).json({ message: 'If an account uses this email, a reset link is on its way.' });
  });

  router.post('/v2/password/reset', async (req, res) => {
    const { token, password } = parseInput(ResetPasswordBody, jsonBody(req));
    await accounts.resetPassword(token, password);
    res.status(204).end();
  });
}
