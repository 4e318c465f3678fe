import type { Response } from 'express';

/**
 * Which pages may call the OpenID Connect endpoints from another origin (CORS): a client's own, the origins of its
 * registered redirect URIs, as node-oidc-provider suggests. Never `*` where tokens travel: an origin is named.
 */
export function redirectsTo(redirectUris: readonly string[], origin: string): boolean {
  return redirectUris.some((uri) => URL.parse(uri)?.origin === origin);
}

/**
 * The provider's `clientBasedCORS`, asked once the client of a request to its token or revocation endpoint is known:
 * only a public client's pages (a confidential client's secret has no place in a browser).
 */
export function publicClientAllows(
  client: { clientAuthMethod?: string; redirectUris?: readonly string[] },
  origin: string,
): boolean {
  return client.clientAuthMethod === 'none' && redirectsTo(client.redirectUris ?? [], origin);
}

/** Lets the page of `origin` read the answer; caches keep one answer per origin. */
export function allowOrigin(res: Response, origin: string): void {
  res.vary('Origin');
  res.setHeader('access-control-allow-origin', origin);
}
