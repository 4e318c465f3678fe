import { timingSafeEqual } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import { Forbidden } from '@platform/kernel';
import { readCookie } from '../http/header-hygiene';

/** methods that change nothing (RFC 9110 9.2.1) */
export const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);
export const CSRF_COOKIE = 'csrf-token';
export const CSRF_HEADER = 'x-csrf-token';

/**
 * Double-submit check for requests authenticated by the `access-token` cookie (docs/internal-api.md
 * "CSRF"): a state-changing method needs `x-csrf-token` equal to the `csrf-token` cookie, both
 * non-empty. A cross-site page can make the browser send the cookies but can neither read the cookie
 * nor set the header. Header credentials are not sent by browsers on their own and need no check.
 */
export function csrfError(method: string, headers: IncomingHttpHeaders): Forbidden | null {
  if (SAFE_METHODS.has(method)) return null;
  const header = headers[CSRF_HEADER];
  const cookie = readCookie(headers.cookie, CSRF_COOKIE);
  if (typeof header === 'string' && header.length > 0 && cookie) {
    const a = Buffer.from(header);
    const b = Buffer.from(cookie);
    if (a.length === b.length && timingSafeEqual(a, b)) return null;
  }
  return new Forbidden(
    'A cookie-authenticated change needs the x-csrf-token header (the csrf-token cookie)',
    {
      error: 'CsrfTokenInvalid',
      code: 'CSRF_TOKEN_INVALID',
    },
  );
}
