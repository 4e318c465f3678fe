import { InvalidInput, NotFound } from '@platform/kernel';

/**
 * Characters of a path as RFC 3986 allows them (unreserved, sub-delims, `:`, `@`, `/`, and `%` for
 * escapes). Anything else (a raw space, `#`, `\`, a non-ASCII byte) is refused, so the path the edge
 * routes, authorizes and rate-limits on is the path the service parses: no fragment or backslash for
 * a service's URL parser to cut or turn into something else.
 */
const PATH_CHARS = /^\/[A-Za-z0-9\-._~!$&'()*+,;=:@/%]*$/;
/** `%` not followed by two hex digits. */
const BAD_ESCAPE = /%(?![0-9A-Fa-f]{2})/;
/** `.`/`..` segments, raw or percent-encoded: refused so no upstream normalizes a path past the edge's checks. */
const DOT_SEGMENT = /(?:^|\/)(?:\.|%2e){1,2}(?:\/|$)/i;

const invalidPath = (message: string) =>
  new InvalidInput(message, { error: 'InvalidPath', code: 'INVALID_PATH' });

/** Checks a request target (`req.url`): an origin-form path, no fragment; null when acceptable. */
export function requestTargetError(url: string): InvalidInput | null {
  if (url.charCodeAt(0) !== 47 /* / */) return invalidPath('Request target must be a path');
  const q = url.indexOf('?');
  const path = q === -1 ? url : url.slice(0, q);
  if (url.includes('#')) return invalidPath('A request target never carries a fragment (#)');
  if (!PATH_CHARS.test(path)) return invalidPath('The path holds characters that must be percent-encoded');
  if (path.includes('%') && BAD_ESCAPE.test(path))
    return invalidPath('Malformed percent-encoding in the path');
  if ((path.includes('.') || path.includes('%')) && DOT_SEGMENT.test(path))
    return invalidPath('Dot segments are not allowed in the path');
  return null;
}

/** A service's own operational and internal routes: never reachable through the edge. */
const PRIVATE_EXACT = new Set(['/healthz', '/readyz', '/metrics', '/internal']);

/**
 * Whether a path (inside a root) names a service's `/healthz`, `/readyz`, `/metrics` or `/internal/*`,
 * in any letter case, with trailing or repeated slashes, or percent-encoded: services route
 * case-insensitively and decode, so the edge compares on the same normal form.
 */
export function isPrivateServicePath(path: string): boolean {
  let p = path;
  if (p.includes('%')) {
    try {
      p = decodeURIComponent(p);
    } catch {
      return false; // malformed escapes were refused before
    }
  }
  p = p.toLowerCase().replace(/\/{2,}/g, '/');
  if (p.length > 1 && p.endsWith('/')) p = p.replace(/\/+$/, '');
  return PRIVATE_EXACT.has(p) || p.startsWith('/internal/');
}

export const privatePathError = (path: string) =>
  new NotFound(`No route for ${path}`, { error: 'RouteNotFound' });

/** `DELETE {legacy_url}/v2/auth/accessToken/<access_token>` names a credential in its path (spec 4.5). */
const TOKEN_IN_PATH = /(\/v2\/auth\/accesstoken\/)[^/]+/i;

/** A request target's path as the log shows it: without the query, and without a credential it names. */
export function loggedPath(url: string): string {
  const q = url.indexOf('?');
  const path = q === -1 ? url : url.slice(0, q);
  return TOKEN_IN_PATH.test(path) ? path.replace(TOKEN_IN_PATH, '$1[redacted]') : path;
}
