import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import type { OidcClientDoc } from './clients';

/** The client credentials of a request to the token or revocation endpoint, as RFC 6749 2.3.1 lets a client send them. */
interface PresentedCredentials {
  clientId: string;
  secret?: string;
}

/**
 * A form value the provider would read as given: absent, or one non-empty string (it refuses a repeated parameter,
 * and reads an empty one as absent). `false` for anything else.
 */
const single = (value: unknown): string | undefined | false =>
  value === undefined || value === '' ? undefined : typeof value === 'string' ? value : false;

/** A part of a Basic header's user:password, form-encoded first (RFC 6749 2.3.1), as the provider decodes it. */
const formDecoded = (part: string): string | null => {
  let decoded: string;
  try {
    decoded = decodeURIComponent(part.replace(/\+/g, '%20'));
  } catch {
    return null;
  }
  // client ids and secrets are VSCHARs (RFC 6749 A.1, A.2)
  return /[^\x20-\x7E]/.test(decoded) ? null : decoded;
};

/** Base64 the provider decodes: padded to whole quanta, or unpadded, never a lone sextet at the end. */
function isBase64(value: string): boolean {
  const match = /^([A-Za-z0-9+/]*)(={0,2})$/.exec(value);
  const [, data, padding] = match ?? [];
  if (!data || padding === undefined) return false;
  const remainder = data.length % 4;
  return padding ? padding.length === 4 - remainder : remainder !== 1;
}

/** The client id and secret of `Authorization: Basic ...` (client_secret_basic), or null when it is not one. */
function basicCredentials(header: string): { clientId: string; secret: string } | null {
  const [scheme, encoded, ...rest] = header.split(' ');
  if (rest.length > 0 || scheme?.toLowerCase() !== 'basic' || !encoded || !isBase64(encoded)) return null;
  const basic = Buffer.from(encoded, 'base64').toString('utf8');
  const colon = basic.indexOf(':');
  if (colon < 0) return null;
  const clientId = formDecoded(basic.slice(0, colon));
  const secret = formDecoded(basic.slice(colon + 1));
  return clientId && secret ? { clientId, secret } : null;
}

/**
 * What the request presents, or null when it presents it in a way node-oidc-provider would not take: more than one
 * mechanism (a secret in the body and a header, a client assertion), two client ids that differ, a repeated parameter.
 */
function presentedCredentials(
  body: Record<string, unknown>,
  headers: IncomingHttpHeaders,
): PresentedCredentials | null {
  const clientId = single(body.client_id);
  const secret = single(body.client_secret);
  const authorization = headers.authorization;
  if (clientId === false || secret === false || body.client_assertion !== undefined) return null;
  if (
    headers['oauth-client-attestation'] !== undefined ||
    headers['oauth-client-attestation-pop'] !== undefined
  ) {
    return null;
  }
  if (authorization === undefined) return clientId === undefined ? null : { clientId, secret };
  if (secret !== undefined) return null;
  const basic = basicCredentials(authorization);
  if (!basic || (clientId !== undefined && clientId !== basic.clientId)) return null;
  return basic;
}

/** Compares two secrets in a time that depends on neither (their digests have one length). */
const sameSecret = (a: string, b: string) =>
  timingSafeEqual(createHash('sha256').update(a).digest(), createHash('sha256').update(b).digest());

type TokenEndpointRequest = { body?: unknown; headers: IncomingHttpHeaders };

const presentedBy = (req: TokenEndpointRequest) =>
  presentedCredentials(
    typeof req.body === 'object' && req.body !== null ? (req.body as Record<string, unknown>) : {},
    req.headers,
  );

/** The client a request to the token or revocation endpoint names, when it presents itself as the provider takes. */
export const presentedClientId = (req: TokenEndpointRequest): string | null =>
  presentedBy(req)?.clientId ?? null;

/**
 * Whether a request to the revocation endpoint authenticates as `client` the way node-oidc-provider authenticates
 * the client of an opaque token there (RFC 7009 2.1): a public client by its client_id alone, a confidential one by
 * its secret too, in the form (client_secret_post) or a Basic header (client_secret_basic), the provider taking
 * either. Never true where the provider would refuse: that request is left to the provider, which answers it.
 */
export function authenticatesAs(req: TokenEndpointRequest, client: OidcClientDoc['metadata']): boolean {
  const presented = presentedBy(req);
  if (!presented || presented.clientId !== client.client_id) return false;
  if (client.token_endpoint_auth_method === 'none') return presented.secret === undefined;
  return (
    presented.secret !== undefined &&
    client.client_secret !== undefined &&
    sameSecret(presented.secret, client.client_secret)
  );
}
