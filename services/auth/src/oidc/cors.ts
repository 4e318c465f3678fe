import type { Response } from 'express';

/**
 * Which pages may call the OpenID Connect endpoints from another origin (CORS): a client's own, the origins of its
 * registered redirect URIs, as node-oidc-provider suggests. Never `*` where tokens travel: an origin is named. The
 * opaque origin `null` (a sandboxed frame, a file, a native app's own scheme stored before redirect URIs were checked)
 * is no page's: every such page sends the same one.
 */
export function redirectsTo(redirectUris: readonly string[], origin: string): boolean {
  return redirectUris.some((uri) => pageOrigin(uri) === origin);
}

/** The origin of the pages redirect URI `uri` leads to: none for an opaque one, or one that does not parse. */
export function pageOrigin(uri: string): string | undefined {
  const origin = URL.parse(uri)?.origin;
  return origin === 'null' ? undefined : origin;
}

/**
 * The provider's `clientBasedCORS`, asked once the client of a request to its token or revocation endpoint that came
 * with an Origin is known: a public client's own pages read the answer, any other page is refused. A confidential
 * client is a server (its secret has no place in a browser), which a stray Origin does not make a page: its secret is
 * what is checked, and no page reads the answer.
 */
export function clientCors(
  client: { clientAuthMethod?: string; redirectUris?: readonly string[] },
  origin: string,
): 'readable' | 'unreadable' | 'refused' {
  if (client.clientAuthMethod !== 'none') return 'unreadable';
  return redirectsTo(client.redirectUris ?? [], origin) ? 'readable' : 'refused';
}

/** Lets the page of `origin` read the answer; caches keep one answer per origin. */
export function allowOrigin(res: Response, origin: string): void {
  res.vary('Origin');
  res.setHeader('access-control-allow-origin', origin);
}
