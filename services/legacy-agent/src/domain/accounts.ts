import { Conflict, Forbidden, InvalidInput, NotFound, RateLimited, Unauthenticated } from '@platform/kernel';
import { DuplicateKeyError } from '@platform/store';
import type { AccountDoc, LoginFailureDoc, SessionDoc } from '../persistence/collections';
import type { LegacyContext } from './context';
import { newId } from './ids';
import { hashPassword, type PasswordHash, verifyPassword } from './passwords';
import { hashToken, newToken, tokenHint, tokenKind } from './tokens';

/** An authenticated legacy account and the session or access token it used. */
export interface AccountAuth {
  account: AccountDoc;
  session: SessionDoc;
}

export interface SessionGrant {
  userId: string;
  sessionToken: string;
}

const usernameKey = (username: string) => username.normalize('NFKC').toLowerCase();

export class Accounts {
  /** compared against when the username is unknown, so a login costs the same either way */
  private dummyHash: Promise<PasswordHash> | undefined;

  constructor(private readonly ctx: LegacyContext) {}

  async signup(username: string, password: string): Promise<SessionGrant> {
    const { cols, clock, config } = this.ctx;
    const account: AccountDoc = {
      _id: newId(),
      username,
      usernameKey: usernameKey(username),
      password: await hashPassword(password, config.LEGACY_PASSWORD_SCRYPT_COST),
      createdAt: clock.now(),
    };
    try {
      await cols.accounts.insertOne(account);
    } catch (err) {
      if (err instanceof DuplicateKeyError)
        throw new Conflict('This username is taken', { error: 'UsernameTaken' });
      throw err;
    }
    return this.openSession(account, 'signup');
  }

  async login(username: string, password: string): Promise<SessionGrant> {
    const { cols } = this.ctx;
    const key = usernameKey(username);
    await this.takeAttempt(key);
    const account = await cols.accounts.findOne({ usernameKey: key });
    this.dummyHash ??= hashPassword('not a real password', this.ctx.config.LEGACY_PASSWORD_SCRYPT_COST);
    const ok = await verifyPassword(password, account?.password ?? (await this.dummyHash));
    if (!account || !ok)
      throw new Unauthenticated('Wrong username or password', { error: 'InvalidCredentials' });
    await cols.loginFailures.deleteOne({ _id: key });
    return this.openSession(account, 'login');
  }

  /** Ends the session (or access token) the request was made with. */
  async logout(auth: AccountAuth): Promise<void> {
    await this.ctx.cols.sessions.deleteOne({ _id: auth.session._id });
  }

  /**
   * The account behind a session token or access token; an unknown, expired or revoked one is refused
   * on the spot (every request reads the store: revocation needs no propagation).
   */
  async authenticate(token: string | undefined): Promise<AccountAuth> {
    const kind = token ? tokenKind(token) : null;
    if (!token || (kind !== 'session' && kind !== 'accessToken'))
      throw new Unauthenticated('A legacy session token or access token is required');
    const session = await this.ctx.cols.sessions.findOne({ tokenHash: hashToken(token) });
    if (!session || session.expiresAt.getTime() <= this.ctx.clock.now().getTime())
      throw new Unauthenticated('The session token or access token is unknown, expired or revoked');
    const account = await this.ctx.cols.accounts.findOne({ _id: session.userId });
    if (!account) throw new Unauthenticated('The account no longer exists');
    return { account, session };
  }

  /** Spec 4.5: an access token with the account's permissions. Restricted tokens cannot mint more. */
  async createAccessToken(auth: AccountAuth, expiresAt: Date, restricted: boolean) {
    const { clock, config, cols } = this.ctx;
    refuseRestricted(auth);
    const now = clock.now();
    if (expiresAt.getTime() <= now.getTime()) throw invalidExpiry('must be in the future');
    if (expiresAt.getTime() > now.getTime() + config.LEGACY_ACCESS_TOKEN_MAX_TTL_SECONDS * 1000)
      throw invalidExpiry(`must be at most ${config.LEGACY_ACCESS_TOKEN_MAX_TTL_SECONDS} seconds away`);
    // a token outlives nothing that made it: a leaked short-lived token must not buy a two-year one
    if (auth.session.kind === 'access_token' && expiresAt.getTime() > auth.session.expiresAt.getTime())
      throw invalidExpiry(
        `must not be later than the access token this request was made with (${auth.session.expiresAt.toISOString()})`,
      );
    const token = newToken('accessToken');
    const doc: SessionDoc = {
      _id: newId(),
      kind: 'access_token',
      tokenHash: hashToken(token),
      hint: tokenHint(token),
      userId: auth.account._id,
      createdWith: { action: 'create', authProvider: auth.session.kind },
      restricted,
      expiresAt,
      createdAt: now,
      updatedAt: now,
    };
    await cols.sessions.insertOne(doc);
    return accessTokenRecord(doc, token);
  }

  /** The account's access tokens, newest first, expired ones included (until the store sweeps them). */
  async listAccessTokens(auth: AccountAuth) {
    const docs = await this.ctx.cols.sessions.find(
      { userId: auth.account._id, kind: 'access_token' },
      { sort: { createdAt: -1 } },
    );
    return docs.map((doc) => accessTokenRecord(doc, doc.hint));
  }

  /** Revokes one of the account's access tokens, named by its value (spec) or by its record `_id`. */
  async revokeAccessToken(auth: AccountAuth, tokenOrId: string): Promise<{ _id: string; revoked: true }> {
    refuseRestricted(auth);
    const filter =
      tokenKind(tokenOrId) === 'accessToken' ? { tokenHash: hashToken(tokenOrId) } : { _id: tokenOrId };
    const doc = await this.ctx.cols.sessions.findOne({
      ...filter,
      userId: auth.account._id,
      kind: 'access_token',
    });
    if (!doc) throw notFoundToken();
    await this.ctx.cols.sessions.deleteOne({ _id: doc._id });
    return { _id: doc._id, revoked: true };
  }

  private async openSession(account: AccountDoc, action: 'signup' | 'login'): Promise<SessionGrant> {
    const now = this.ctx.clock.now();
    const token = newToken('session');
    await this.ctx.cols.sessions.insertOne({
      _id: newId(),
      kind: 'session',
      tokenHash: hashToken(token),
      hint: tokenHint(token),
      userId: account._id,
      createdWith: { action, authProvider: 'password' },
      restricted: false,
      expiresAt: new Date(now.getTime() + this.ctx.config.LEGACY_SESSION_TTL_SECONDS * 1000),
      createdAt: now,
      updatedAt: now,
    });
    return { userId: account._id, sessionToken: token };
  }

  /**
   * Counts a login attempt BEFORE its password is checked, and refuses it past LEGACY_LOGIN_MAX_FAILURES in the
   * window: counted after the check, every attempt already in flight passed (200 concurrent guesses were all
   * checked). A right password then clears the count; the right one past the limit is refused too.
   */
  private async takeAttempt(key: string): Promise<void> {
    const { cols, clock, config } = this.ctx;
    const now = clock.now();
    const windowMs = config.LEGACY_LOGIN_FAILURE_WINDOW_SECONDS * 1000;
    const fresh = { count: 1, windowStart: now, expiresAt: new Date(now.getTime() + windowMs) };
    let counted: LoginFailureDoc | null = null;
    for (let attempt = 0; attempt < 5; attempt++) {
      counted = await cols.loginFailures.findOneAndUpdate(
        { _id: key, windowStart: { $gt: new Date(now.getTime() - windowMs) } },
        { $inc: { count: 1 } },
      );
      if (counted) break;
      // no live window: start one, by resetting an ended one or inserting; losing either race means
      // another attempt's window is live now, to count in on the next turn
      counted = await cols.loginFailures.findOneAndUpdate(
        { _id: key, windowStart: { $lte: new Date(now.getTime() - windowMs) } },
        { $set: fresh },
      );
      if (counted) break;
      try {
        await cols.loginFailures.insertOne({ _id: key, ...fresh });
        return;
      } catch (err) {
        if (!(err instanceof DuplicateKeyError)) throw err;
      }
    }
    if (!counted || counted.count <= config.LEGACY_LOGIN_MAX_FAILURES) return;
    const waitMs = counted.windowStart.getTime() + windowMs - now.getTime();
    throw new RateLimited(Math.max(1, Math.ceil(waitMs / 1000)), 'Too many failed logins; try again later');
  }
}

/** Spec 2.8's record; `_session_token` is the value at creation and only its first characters afterwards. */
function accessTokenRecord(doc: SessionDoc, shownToken: string) {
  return {
    _id: doc._id,
    _session_token: shownToken,
    _p_user: doc.userId,
    createdWith: doc.createdWith,
    restricted: doc.restricted,
    expiresAt: doc.expiresAt.toISOString(),
    _created_at: doc.createdAt.toISOString(),
    _updated_at: doc.updatedAt.toISOString(),
  };
}

function refuseRestricted(auth: AccountAuth) {
  if (auth.session.restricted)
    throw new Forbidden('A restricted access token cannot create or revoke access tokens', {
      error: 'RestrictedToken',
    });
}

const invalidExpiry = (message: string) =>
  new InvalidInput(`expiresAt ${message}`, {
    details: { issues: [{ field: 'expiresAt', message }] },
  });

const notFoundToken = () =>
  new NotFound('No such access token for this account', { error: 'AccessTokenNotFound' });
