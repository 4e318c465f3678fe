import { randomBytes } from 'node:crypto';
import { Conflict, InvalidInput, RateLimited, Unauthenticated } from '@platform/kernel';
import { DuplicateKeyError } from '@platform/store';
import type { AuthContext } from '../context';
import type { AccountDoc, AccountTokenDoc, UserDoc } from '../data/collections';
import { revokeUserAccessTokens } from '../domain/access-tokens';
import type { UserCaller } from '../domain/caller';
import { removalTime } from '../domain/removal-times';
import { newId, sha256Hex } from '../domain/secrets';
import type { AuthMetrics } from '../metrics';
import { deleteOidcStateOf } from '../oidc/store-adapter';
import type { LoginThrottle } from './login-throttle';
import type { Mailer } from './mailer';
import type { Mfa } from './mfa';
import { hashPassword, verifyPassword } from './passwords';
import { type IssuedLogin, openUserSession, revokeSession } from './sessions';

export const normalizeEmail = (email: string): string => email.trim().toLowerCase();

/**
 * One person per address (decision 0121): whether a user other than `userId` has `email` (normalised), with or
 * without a password (an SSO sign-in makes users without one). Anonymous users have no address. One being deleted
 * keeps it until its document is gone, as a password account keeps it until its password is: a deletion may still be
 * put back (409 `LastOwner`), and its address must not have gone to a second account meanwhile.
 */
export async function emailTaken(c: AuthContext, email: string, userId: string): Promise<boolean> {
  const holder = await c.collections.users.findOne({ email, anonymous: false, _id: { $ne: userId } });
  return holder !== null;
}

/** Longer than any sign-up takes between storing its password and its user. */
const SIGNUP_CUT_SHORT_AFTER_MS = 15 * 60_000;

/**
 * The password record of `email`. A sign-up stores it before its user, so a crash between the two leaves a record
 * whose user never took the address (missing, or still anonymous): older than SIGNUP_CUT_SHORT_AFTER_MS, such a
 * record is removed and answered as none, so that it locks nobody out of the address.
 */
export async function passwordAccountOf(c: AuthContext, email: string): Promise<AccountDoc | null> {
  const account = await c.collections.accounts.findOne({ _id: email });
  if (!account || c.clock.now().getTime() - account.createdAt.getTime() < SIGNUP_CUT_SHORT_AFTER_MS) {
    return account;
  }
  const user = await c.collections.users.findOne({ _id: account.userId });
  if (user?.email === email) return account;
  // the record as read (a sign-up of the same anonymous user may have replaced it meanwhile: that one holds it)
  const { _id, userId, createdAt } = account;
  if ((await c.collections.accounts.deleteOne({ _id, userId, createdAt })) === 0)
    return c.collections.accounts.findOne({ _id: email });
  c.logger.info({ userId }, 'the password record of a sign-up cut short was removed');
  return null;
}

/** The answer to an address that has an account already (409; it does not say how the account signs in). */
export const signupRefused = () =>
  new Conflict('An account cannot be created with this email. Sign in, or reset your password.', {
    error: 'SignupRefused',
  });

export interface SignupInput {
  email: string;
  password: string;
  firstName?: string;
  lastName?: string;
}

/** A right password: its user, and the hash it was checked against (`Accounts.signedIn`). */
export interface PasswordCheck {
  user: UserDoc;
  passwordHash: string;
}

/** The one answer to a wrong email or a wrong password: it never says which. */
const invalidCredentials = () =>
  new Unauthenticated('Email or password is incorrect', { error: 'InvalidCredentials' });

/**
 * Password accounts: signup (an anonymous caller keeps its user id, organizations and keys), login,
 * email verification and password reset by mail.
 */
export class Accounts {
  private dummyHash: Promise<string> | null = null;

  constructor(
    private readonly c: AuthContext,
    private readonly mailer: Mailer,
    private readonly throttle: LoginThrottle,
    readonly mfa: Mfa,
    private readonly metrics: Pick<AuthMetrics, 'passwordLogin'>,
  ) {}

  /** The login throttle's point for this attempt; a lock counts as a throttled sign-in. */
  private async attempt(email: string, address: string): Promise<void> {
    try {
      await this.throttle.attempt(email, address);
    } catch (err) {
      if (err instanceof RateLimited) this.metrics.passwordLogin('throttled');
      throw err;
    }
  }

  private get scrypt() {
    const { PASSWORD_SCRYPT_N: N, PASSWORD_SCRYPT_R: r, PASSWORD_SCRYPT_P: p } = this.c.config;
    return { N, r, p };
  }

  private checkPassword(password: string): void {
    if (password.length < this.c.config.PASSWORD_MIN_LENGTH) {
      throw new InvalidInput(
        `Invalid body: password: must be at least ${this.c.config.PASSWORD_MIN_LENGTH} characters`,
        {
          details: {
            issues: [
              {
                field: 'password',
                message: `must be at least ${this.c.config.PASSWORD_MIN_LENGTH} characters`,
              },
            ],
          },
        },
      );
    }
  }

  async signup(input: SignupInput, caller: UserCaller | null, baseUrl: string): Promise<IssuedLogin> {
    const { c } = this;
    if (caller && !caller.user.anonymous) {
      throw new Conflict('You are signed in to an account already; sign out first', {
        error: 'AlreadySignedUp',
      });
    }
    this.checkPassword(input.password);
    const email = normalizeEmail(input.email);
    const now = c.clock.now();
    const userId = caller?.user._id ?? newId();
    const passwordHash = await hashPassword(input.password, this.scrypt);
    const account: AccountDoc = { _id: email, userId, passwordHash, createdAt: now, passwordChangedAt: now };
    try {
      await c.collections.accounts.insertOne(account);
    } catch (err) {
      if (!(err instanceof DuplicateKeyError)) throw err;
      // a record a sign-up cut short left is removed, and this one takes its place (once: a racing sign-up wins)
      if (await passwordAccountOf(c, email)) throw signupRefused();
      await c.collections.accounts.insertOne(account).catch((again) => {
        throw again instanceof DuplicateKeyError ? signupRefused() : again;
      });
    }
    // A user an SSO sign-in made has the address without a password. Looked for with the account stored, so that an
    // SSO sign-in making such a user at this moment finds the account instead, and stops.
    if (await emailTaken(c, email, userId)) {
      await c.collections.accounts.deleteOne({ _id: email, userId });
      throw signupRefused();
    }
    const profile = {
      email,
      firstName: input.firstName ?? null,
      lastName: input.lastName ?? null,
      emailVerifiedAt: null,
    };
    let user: UserDoc;
    if (caller) {
      // Same user id: its memberships, keys and workspaces stay. Only an anonymous user may be claimed.
      const claimed = await c.collections.users.findOneAndUpdate(
        { _id: userId, anonymous: true },
        { $set: { anonymous: false, ...profile } },
      );
      if (!claimed) {
        await c.collections.accounts.deleteOne({ _id: email, userId });
        throw new Conflict('This session signed up already', { error: 'AlreadySignedUp' });
      }
      user = claimed;
      // The anonymous session ends; the account's own session replaces it.
      await revokeSession(c, caller.credentialId);
    } else {
      user = { _id: userId, anonymous: false, createdAt: now, ...profile };
      await c.collections.users.insertOne(user);
    }
    await this.sendVerification(user._id, email, baseUrl);
    return openUserSession(c, user);
  }

  /**
   * Checks an email and password under the login throttle. The throttle's point is given back only by
   * `signedIn`, so a wrong second factor spends the same budget as a wrong password.
   */
  async authenticate(emailInput: string, password: string, address: string): Promise<PasswordCheck> {
    const { c } = this;
    const email = normalizeEmail(emailInput);
    await this.attempt(email, address);
    const account = await c.collections.accounts.findOne({ _id: email });
    // An unknown email costs the same hash as a known one: timing does not tell them apart.
    this.dummyHash ??= hashPassword(randomBytes(16).toString('hex'), this.scrypt);
    const ok = await verifyPassword(password, account?.passwordHash ?? (await this.dummyHash));
    const found = account && ok ? await c.collections.users.findOne({ _id: account.userId }) : null;
    // a record whose user does not hold its address (a sign-up cut short, or not done yet) signs nobody in
    const user = found?.deletedAt || found?.email !== email ? null : found;
    if (!user || !account) {
      this.metrics.passwordLogin('invalid_credentials');
      throw invalidCredentials();
    }
    return { user, passwordHash: account.passwordHash };
  }

  /**
   * A second-factor code sent on its own (the sign-in page's second step, turning two-step verification off):
   * each try takes a point of the login throttle, as a password does, so codes cannot be guessed without
   * limit behind one right password or a stolen session; a right one gives its points back. 429 once the account or
   * the address is locked.
   */
  async secondFactor(user: UserDoc, code: string, address: string): Promise<boolean> {
    const email = user.email ?? user._id;
    await this.attempt(email, address);
    const right = await this.mfa.verify(user._id, code);
    if (right) await this.throttle.refund(email, address);
    else this.metrics.passwordLogin('invalid_second_factor');
    return right;
  }

  /**
   * Sign-in is complete (password and, when enrolled, the second factor): a new session. `checked`: whether a password
   * hash is the one the password was checked against; a new password set meanwhile (a reset, which signs out
   * everywhere, run between the check and this session) takes the session back: 401 `InvalidCredentials`.
   */
  async signedIn(
    user: UserDoc,
    address: string,
    mfa: boolean,
    checked?: (passwordHash: string) => boolean,
  ): Promise<IssuedLogin> {
    const issued = await openUserSession(this.c, user, { mfa });
    // read after the session is stored: a reset that has not changed the password yet finds this session and ends it
    if (!(await this.passwordKept(user, checked))) {
      await revokeSession(this.c, issued.sessionId);
      this.metrics.passwordLogin('invalid_credentials');
      throw invalidCredentials();
    }
    // only a sign-in that keeps its session forgets the account's failures (a refused one would reset the throttle)
    await this.throttle.succeeded(user.email!, address);
    this.metrics.passwordLogin('success');
    return issued;
  }

  /** Whether `user`'s password is still one `checked` recognizes (the one a sign-in checked); without `checked`, true. */
  async passwordKept(user: UserDoc, checked?: (passwordHash: string) => boolean): Promise<boolean> {
    if (!checked) return true;
    const account = await this.c.collections.accounts.findOne({ _id: user.email! });
    return account !== null && checked(account.passwordHash);
  }

  /** POST /v2/login: the password, then `mfaCode` (TOTP or recovery code) when the user enrolled one. */
  async login(emailInput: string, password: string, address: string, mfaCode?: string): Promise<IssuedLogin> {
    const { user, passwordHash } = await this.authenticate(emailInput, password, address);
    const needsMfa = await this.mfa.enabled(user._id);
    if (needsMfa) {
      if (!mfaCode) {
        // the password was right: asking for the code takes nothing of the budget (the code's try will)
        await this.throttle.refund(user.email!, address);
        throw new Unauthenticated('This account needs a second factor: send mfaCode', {
          error: 'MfaRequired',
        });
      }
      if (!(await this.mfa.verify(user._id, mfaCode))) {
        this.metrics.passwordLogin('invalid_second_factor');
        throw new Unauthenticated('The second-factor code is wrong or was used already', {
          error: 'InvalidMfaCode',
        });
      }
    }
    return this.signedIn(user, address, needsMfa, (current) => current === passwordHash);
  }

  private async mailToken(kind: AccountTokenDoc['kind'], userId: string, email: string, ttlSeconds: number) {
    const token = randomBytes(32).toString('base64url');
    const now = this.c.clock.now();
    const expiresAt = new Date(now.getTime() + ttlSeconds * 1000);
    await this.c.collections.accountTokens.deleteMany({ userId, expiresAt: { $lte: now } });
    await this.c.collections.accountTokens.insertOne({
      _id: sha256Hex(token),
      kind,
      userId,
      email,
      createdAt: now,
      expiresAt,
      usedAt: null,
      removeAt: removalTime(this.c.config, expiresAt),
    });
    return token;
  }

  async sendVerification(userId: string, email: string, baseUrl: string): Promise<void> {
    const token = await this.mailToken(
      'verify_email',
      userId,
      email,
      this.c.config.EMAIL_VERIFICATION_TTL_SECONDS,
    );
    await this.mailer.send({
      to: email,
      subject: 'Confirm your email address',
      text: `Confirm your email address for ${this.c.config.PLATFORM_NAME} by opening this link:\n\n${baseUrl}/account/verify-email?token=${token}\n\nIf you did not sign up, ignore this mail.\n`,
    });
  }

  /** Spends a mailed token of `kind`; null when unknown, spent, expired or for an email no longer the user's. */
  private async spend(kind: AccountTokenDoc['kind'], token: string): Promise<AccountTokenDoc | null> {
    const now = this.c.clock.now();
    return this.c.collections.accountTokens.findOneAndUpdate(
      { _id: sha256Hex(token), kind, usedAt: null, expiresAt: { $gt: now } },
      { $set: { usedAt: now } },
    );
  }

  async verifyEmail(token: string): Promise<UserDoc> {
    const spent = await this.spend('verify_email', token);
    const user = spent
      ? await this.c.collections.users.findOneAndUpdate(
          { _id: spent.userId, email: spent.email },
          { $set: { emailVerifiedAt: this.c.clock.now() } },
        )
      : null;
    if (!user) throw new InvalidInput('This link is invalid or has expired', { error: 'InvalidToken' });
    return user;
  }

  /** Tells a verified address that its account was deleted; never fails. */
  async sendAccountDeleted(email: string): Promise<void> {
    const name = this.c.config.PLATFORM_NAME;
    try {
      await this.mailer.send({
        to: email,
        subject: 'Your account was deleted',
        text: `Your ${name} account with this address was deleted, as you asked. Your sessions, access tokens and the applications you had allowed were signed out, and your password and two-step verification were erased. Organizations you were the only member of were deleted with it.\n\nThis address can be used for a new account at any time.\n\nIf you did not ask for this, someone who could sign in as you did: tell the platform's operator.\n`,
      });
    } catch (err) {
      this.c.logger.warn({ err }, 'the account-deleted mail was not sent');
    }
  }

  /** Always succeeds from the caller's point of view: whether the email has an account is not told. */
  async requestPasswordReset(emailInput: string, baseUrl: string): Promise<void> {
    const email = normalizeEmail(emailInput);
    const account = await passwordAccountOf(this.c, email);
    if (!account) return;
    const token = await this.mailToken(
      'reset_password',
      account.userId,
      email,
      this.c.config.PASSWORD_RESET_TTL_SECONDS,
    );
    await this.mailer.send({
      to: email,
      subject: 'Reset your password',
      text: `Someone asked to reset the password of your ${this.c.config.PLATFORM_NAME} account. To choose a new one, open this link within ${Math.round(this.c.config.PASSWORD_RESET_TTL_SECONDS / 60)} minutes:\n\n${baseUrl}/account/reset-password?token=${token}\n\nA new password signs you out everywhere and revokes your access tokens.\n\nIf it was not you, ignore this mail: your password stays as it is.\n`,
    });
  }

  /**
   * Sets a new password, spends the account's other reset links, signs the user out everywhere (access tokens
   * included) and ends any lock of the account.
   */
  async resetPassword(token: string, password: string): Promise<void> {
    this.checkPassword(password);
    const spent = await this.spend('reset_password', token);
    if (!spent) throw new InvalidInput('This link is invalid or has expired', { error: 'InvalidToken' });
    const now = this.c.clock.now();
    const passwordHash = await hashPassword(password, this.scrypt);
    // a link mailed before the password last changed is spent too: of two links used at once, the first one holds
    const { matched } = await this.c.collections.accounts.updateOne(
      { _id: spent.email, userId: spent.userId, passwordChangedAt: { $lte: spent.createdAt } },
      { $set: { passwordHash, passwordChangedAt: now } },
    );
    if (matched === 0)
      throw new InvalidInput('This link is invalid or has expired', { error: 'InvalidToken' });
    // the other reset links mailed before end with it: an older mail must not set the password again
    await this.c.collections.accountTokens.updateMany(
      { userId: spent.userId, kind: 'reset_password', usedAt: null },
      { $set: { usedAt: now } },
    );
    // Opening the link proves the mailbox: the address counts as verified.
    await this.c.collections.users.updateOne(
      { _id: spent.userId, email: spent.email, emailVerifiedAt: null },
      { $set: { emailVerifiedAt: now } },
    );
    const sessions = await this.c.collections.sessions.find({ userId: spent.userId, revokedAt: null });
    for (const s of sessions) await revokeSession(this.c, s._id);
    // The OpenID provider's sessions, and grants whose code is not redeemed yet, have no platform session.
    await deleteOidcStateOf(this.c.store, spent.userId);
    await revokeUserAccessTokens(this.c, spent.userId);
    await this.throttle.unlock(spent.email);
  }
}
