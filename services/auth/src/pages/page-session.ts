import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Principal } from '@platform/contracts';
import type { Request, Response } from 'express';
import { CSRF_COOKIE, secureCookies } from '../accounts/cookies';
import type { AuthContext } from '../context';
import type { SessionDoc, UserDoc } from '../data/collections';
import { isOwnSession, loadCaller } from '../domain/caller';

/** The signed-in person of a page: the edge resolved the `access-token` cookie into a session. */
export interface PageSession {
  user: UserDoc;
  session: SessionDoc;
}

export async function pageSession(
  c: AuthContext,
  req: { principal?: Principal | null },
): Promise<PageSession | null> {
  if (!req.principal) return null;
  try {
    const caller = await loadCaller(c.collections, c.clock, req);
    if (caller.kind !== 'user' || caller.via !== 'session' || caller.user.anonymous) return null;
    // an application's token (its `api` scope included) is nobody on the account pages, which mint `at:` tokens
    if (!isOwnSession(caller.holder, c.config)) return null;
    return { user: caller.user, session: caller.holder };
  } catch {
    return null;
  }
}

export function readCookie(req: Request, name: string): string | undefined {
  const header = req.headers.cookie;
  if (!header) return undefined;
  for (const part of header.split(';')) {
    const i = part.indexOf('=');
    if (i > 0 && part.slice(0, i).trim() === name) return decodedCookie(part.slice(i + 1).trim());
  }
  return undefined;
}

/** A value with a malformed percent-escape (`%`, `%E0%A4%A`) is no cookie: the page goes on as without it. */
function decodedCookie(value: string): string | undefined {
  try {
    return decodeURIComponent(value);
  } catch {
    return undefined;
  }
}

/**
 * Before sign-in a form is bound to the browser's random `csrf-token` cookie (set here when absent);
 * after sign-in the same cookie accompanies the session. Answers the binding for FormTokens.
 */
export function browserBinding(req: Request, res: Response, base: string): string {
  const existing = readCookie(req, CSRF_COOKIE);
  if (existing && /^[A-Za-z0-9_-]{20,100}$/.test(existing)) return existing;
  const fresh = randomBytes(32).toString('base64url');
  res.cookie(CSRF_COOKIE, fresh, {
    sameSite: 'lax',
    secure: secureCookies(base),
    path: '/',
    httpOnly: false,
  });
  return fresh;
}

/** Only a path on this site: never `//host` or an absolute URL (no open redirect). */
export function safeNext(value: unknown, fallback = '/account'): string {
  return typeof value === 'string' && /^\/(?!\/)[\x21-\x7e]*$/.test(value) && !value.includes('\\')
    ? value
    : fallback;
}

const MFA_PENDING_COOKIE = 'mfa-pending';
const MFA_PENDING_SECONDS = 300;

/**
 * Between a right password and the second factor: a short-lived signed cookie naming the user, so the
 * password is not asked again and no session exists until the code is right. It carries a keyed mark of the password
 * hash the password was checked against: a new password set meanwhile (a reset) ends it.
 */
export class MfaChallenge {
  private readonly key: Buffer;

  constructor(private readonly c: AuthContext) {
    this.key = createHmac('sha256', c.config.PLATFORM_INTERNAL_SECRET).update('mfa-pending').digest();
  }

  private sign(body: string): string {
    return createHmac('sha256', this.key).update(body).digest('base64url');
  }

  /** the password hash's mark (none after an identity provider's sign-in) */
  private mark(passwordHash: string | undefined): string {
    return passwordHash === undefined ? '' : this.sign(`password ${passwordHash}`);
  }

  start(res: Response, userId: string, base: string, passwordHash?: string): string {
    const exp = Math.floor(this.c.clock.now().getTime() / 1000) + MFA_PENDING_SECONDS;
    const body = `${userId}.${exp}.${randomBytes(8).toString('base64url')}.${this.mark(passwordHash)}`;
    const value = `${body}.${this.sign(body)}`;
    res.cookie(MFA_PENDING_COOKIE, value, {
      httpOnly: true,
      sameSite: 'lax',
      secure: secureCookies(base),
      path: '/account/login',
      maxAge: MFA_PENDING_SECONDS * 1000,
    });
    return value;
  }

  /**
   * The pending user id, the cookie's value (the binding of the code form) and, after a password, whether a password
   * hash is the one it was checked against (`Accounts.signedIn`), when valid.
   */
  read(req: Request): { userId: string; value: string; checked?: (passwordHash: string) => boolean } | null {
    const value = readCookie(req, MFA_PENDING_COOKIE);
    if (!value) return null;
    const parts = value.split('.');
    if (parts.length !== 5) return null;
    const body = parts.slice(0, 4).join('.');
    const expected = Buffer.from(this.sign(body));
    const given = Buffer.from(parts[4]!);
    if (expected.length !== given.length || !timingSafeEqual(expected, given)) return null;
    if (Number(parts[1]) < this.c.clock.now().getTime() / 1000) return null;
    const mark = parts[3]!;
    return {
      userId: parts[0]!,
      value,
      ...(mark ? { checked: (passwordHash: string) => this.mark(passwordHash) === mark } : {}),
    };
  }

  end(res: Response, base: string): void {
    res.clearCookie(MFA_PENDING_COOKIE, {
      httpOnly: true,
      sameSite: 'lax',
      secure: secureCookies(base),
      path: '/account/login',
    });
  }
}
