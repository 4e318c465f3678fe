import type { IncomingHttpHeaders } from 'node:http';

/** Client-sent `x-platform-*` headers that survive hygiene (exact, dash-spelled names only). */
const KEPT_PLATFORM_HEADERS = new Set(['x-platform-api-key', 'x-platform-api-version']);

/**
 * Headers the edge never forwards: hop-by-hop ones (RFC 9110 7.6.1; `connection` is handled by the proxy), and a
 * client's own claims of where it is (`Forwarded`, `X-Real-IP`): the edge says that in the `X-Forwarded-*` it sets
 * (decision 0031), and a service must never read an address the client made up.
 */
const HOP_BY_HOP = [
  'keep-alive',
  'proxy-connection',
  'proxy-authorization',
  'te',
  'trailer',
  'upgrade',
  'forwarded',
  'x-real-ip',
];

export interface ScrubbedHeaders {
  /** how many `Authorization` fields the client sent (any letter case) */
  authorizationCount: number;
  /** how many `x-platform-api-key` fields the client sent */
  apiKeyCount: number;
}

/**
 * One pass over the raw header list (Node folds duplicates of some fields, so `req.headers` cannot
 * count them): counts credential fields and deletes every client-sent `x-platform-*` field except the
 * API key and API version — in any letter case, with `_` in place of `-` too — and hop-by-hop fields.
 * A kept name spelled with underscores is removed as well: only the canonical spelling is honoured.
 */
export function scrubRequestHeaders(rawHeaders: string[], headers: IncomingHttpHeaders): ScrubbedHeaders {
  let authorizationCount = 0;
  let apiKeyCount = 0;
  for (let i = 0; i < rawHeaders.length; i += 2) {
    const name = rawHeaders[i]!;
    const first = name.charCodeAt(0) | 0x20;
    if (first === 0x78 /* x */) {
      if (name.length < 11) continue;
      const lower = name.toLowerCase();
      const c = lower.charCodeAt(1);
      if ((c !== 45 && c !== 95) || !lower.startsWith('platform', 2)) continue;
      const sep = lower.charCodeAt(10);
      if (sep !== 45 && sep !== 95) continue;
      if (KEPT_PLATFORM_HEADERS.has(lower)) {
        if (lower === 'x-platform-api-key') apiKeyCount++;
        continue;
      }
      delete headers[lower];
    } else if (first === 0x61 /* a */ && name.length === 13 && name.toLowerCase() === 'authorization') {
      authorizationCount++;
    }
  }
  for (const h of HOP_BY_HOP) if (headers[h] !== undefined) delete headers[h];
  return { authorizationCount, apiKeyCount };
}

/**
 * Fields a `Connection` list never removes: the message's framing, which the edge itself re-makes for the service,
 * and the API version the edge has already resolved (and answered in X-Platform-API-Version-Used).
 */
const NEVER_CONNECTION_LISTED = new Set([
  'host',
  'content-length',
  'transfer-encoding',
  'x-platform-api-version',
]);

/**
 * Removes the fields the client named in `Connection` (RFC 9110 7.6.1: they are meant for the edge, the first hop,
 * and are never forwarded). Run before the edge adds its own fields, so a client cannot name those away.
 */
export function dropConnectionListed(headers: IncomingHttpHeaders): void {
  const connection = headers.connection;
  if (typeof connection !== 'string') return;
  for (const token of connection.split(',')) {
    const name = token.trim().toLowerCase();
    if (name && !NEVER_CONNECTION_LISTED.has(name) && headers[name] !== undefined) delete headers[name];
  }
}

const ACCESS_TOKEN_COOKIE = 'access-token';

/** The value of one cookie (first occurrence), unquoted; undefined when absent or empty. */
export function readCookie(cookie: string | undefined, name: string): string | undefined {
  if (!cookie?.includes(name)) return undefined;
  for (const part of cookie.split(';')) {
    const eq = part.indexOf('=');
    if (eq === -1 || part.slice(0, eq).trim() !== name) continue;
    let value = part.slice(eq + 1).trim();
    if (value.length >= 2 && value.startsWith('"') && value.endsWith('"')) value = value.slice(1, -1);
    return value || undefined;
  }
  return undefined;
}

/** The value of the `access-token` cookie (the browser session's JWT), if any. */
export const readAccessTokenCookie = (cookie: string | undefined) => readCookie(cookie, ACCESS_TOKEN_COOKIE);

/** The Cookie header without the `access-token` cookie (other cookies still reach the service). */
export function withoutAccessTokenCookie(cookie: string): string | undefined {
  const kept = cookie
    .split(';')
    .filter((part) => {
      const eq = part.indexOf('=');
      return (eq === -1 ? part : part.slice(0, eq)).trim() !== ACCESS_TOKEN_COOKIE;
    })
    .map((p) => p.trim())
    .filter(Boolean);
  return kept.length > 0 ? kept.join('; ') : undefined;
}
