import { randomBytes } from 'node:crypto';
import type { Response } from 'express';

export const ACCESS_TOKEN_COOKIE = 'access-token';
export const CSRF_COOKIE = 'csrf-token';

const LOOPBACK = /^(localhost|127(?:\.\d{1,3}){3}|\[::1\])$/i;

/** `Secure` everywhere but on a loopback base URL (a developer's `pnpm start` over plain http). */
export function secureCookies(baseUrl: string): boolean {
  const { hostname, protocol } = new URL(baseUrl);
  return protocol === 'https:' || !LOOPBACK.test(hostname);
}

/**
 * The browser session: `access-token` (HttpOnly, the edge reads it as a session JWT) and `csrf-token`
 * (readable by the page's script, which echoes it in `x-csrf-token` on state-changing API calls; the
 * edge compares the two). Same lifetime, SameSite=Lax, path `/`.
 */
export function setSessionCookies(res: Response, token: string, expiresAt: Date, baseUrl: string): void {
  const common = { sameSite: 'lax' as const, secure: secureCookies(baseUrl), path: '/', expires: expiresAt };
  res.cookie(ACCESS_TOKEN_COOKIE, token, { ...common, httpOnly: true });
  res.cookie(CSRF_COOKIE, randomBytes(32).toString('base64url'), { ...common, httpOnly: false });
}

export function clearSessionCookies(res: Response, baseUrl: string): void {
  const common = { sameSite: 'lax' as const, secure: secureCookies(baseUrl), path: '/' };
  res.clearCookie(ACCESS_TOKEN_COOKIE, { ...common, httpOnly: true });
  res.clearCookie(CSRF_COOKIE, common);
}
