import { randomBytes } from 'node:crypto';
import { InvalidInput, parseInput, requireInternalSecret } from '@platform/kernel';
import type { Router } from 'express';
import { z } from 'zod';
import type { AuthContext } from '../context';
import { type ClientRegistration, FIRST_PARTY_CLIENT_ID, type OidcClientDoc } from './clients';
import type { OidcProviderHost } from './provider';

/** what a URI says between `scheme://` and its path, query or fragment (where WHATWG's parser ends it) */
const authority = (uri: string) => /^[a-z]+:\/\/([^/?#\\]*)/i.exec(uri)?.[1] ?? '';

// oidc-provider refuses any other (a native app's own scheme too): the client would be stored, every sign-in refused.
// It compares a sign-in's redirect_uri with these as strings: what cannot be a browser's redirect is refused here.
const RedirectUri = z
  .url({ protocol: /^https?$/, error: 'must be an http(s) URL' })
  .max(2000)
  // OAuth 2.0 (RFC 6749 3.1.2) forbids a fragment
  .refine((u) => !u.includes('#'), 'must not have a fragment')
  .refine((u) => !authority(u).includes('@'), 'must not have user information (user:password@)')
  .refine((u) => !URL.parse(u)?.hostname.includes('*'), 'must not have a * in its host: register each host')
  // an internationalized (or percent-encoded) host as browsers send it, punycode (WHATWG's form): stored as written,
  // it never matched
  .transform((u) => {
    const written = authority(u);
    // biome-ignore lint/suspicious/noControlCharactersInRegex: any character beyond ASCII
    return /[^\x00-\x7f]|%/.test(written) ? u.replace(written, new URL(u).host) : u;
  });

// http only where a native app listens on its own machine (RFC 8252 7.3): elsewhere the code, and a public client's
// tokens with it, would cross the network in clear text (RFC 9700 2.1)
const LOOPBACK_HOSTS = ['localhost', '127.0.0.1', '[::1]'];
const HTTPS_REQUIRED = 'must be https (plain http only for a loopback host: localhost, 127.0.0.1, [::1])';

/**
 * The given URIs of `field` that are plain http for another host, as issues; one the client already has is kept (it
 * was stored before the rule, and its application still signs in with it).
 */
function plainHttpIssues(field: string, given: string[] | undefined, stored: string[] | undefined) {
  return (given ?? []).flatMap((uri, i) => {
    const url = URL.parse(uri);
    const plain = url?.protocol === 'http:' && !LOOPBACK_HOSTS.includes(url.hostname);
    return plain && !stored?.includes(uri) ? [{ field: `${field}.${i}`, message: HTTPS_REQUIRED }] : [];
  });
}

// strict: a misspelt field would otherwise pass for one left out, which keeps what is stored
export const OidcClientBody = z
  .strictObject({
    /** left out: the stored one is kept; null: none */
    name: z.string().trim().min(1).max(100).nullable().optional(),
    /** left out: the stored ones are kept (a new client needs at least one) */
    redirectUris: z
      .array(RedirectUri)
      .min(1, 'at least one: a client without a redirect URI cannot sign anyone in')
      .max(20)
      .optional(),
    /** left out: the stored ones are kept (a new client has none); []: none */
    postLogoutRedirectUris: z.array(RedirectUri).max(20).optional(),
    /** left out: as stored (a new client is public); false drops a stored secret */
    confidential: z.boolean().optional(),
    /** a leaked secret: a new one replaces it (a stored confidential client's alone), the old one refused at once */
    rotateSecret: z.boolean().optional(),
  })
  .meta({ description: 'PUT /internal/oidc-clients/:clientId' });

/**
 * What registering `clientId` with `body` makes of the client as stored (`existing`; null: a new one), keeping what
 * `body` leaves out; throws InvalidInput for what cannot be.
 */
function registrationOf(
  clientId: string,
  body: z.infer<typeof OidcClientBody>,
  existing: OidcClientDoc | null,
): ClientRegistration {
  // (one whose secret no longer opens stays confidential, and gets a new secret below)
  const wasConfidential = existing?.metadata.token_endpoint_auth_method === 'client_secret_post';
  const confidential = body.confidential ?? wasConfidential;
  if (body.rotateSecret && !(wasConfidential && confidential)) {
    const message = existing
      ? 'a public client has no secret to rotate'
      : 'no such client: register it confidential, which makes its secret';
    throw new InvalidInput(`Invalid body: rotateSecret: ${message}`, {
      details: { issues: [{ field: 'rotateSecret', message }] },
    });
  }
  const plainHttp = [
    ...plainHttpIssues('redirectUris', body.redirectUris, existing?.metadata.redirect_uris),
    ...plainHttpIssues(
      'postLogoutRedirectUris',
      body.postLogoutRedirectUris,
      existing?.metadata.post_logout_redirect_uris,
    ),
  ];
  if (plainHttp.length)
    throw new InvalidInput(`Invalid body: ${plainHttp.map((i) => `${i.field}: ${i.message}`).join('; ')}`, {
      details: { issues: plainHttp },
    });
  const redirectUris = body.redirectUris ?? existing?.metadata.redirect_uris;
  if (!redirectUris) {
    const message = 'required: a new client needs at least one (none is stored to keep)';
    throw new InvalidInput(`Invalid body: redirectUris: ${message}`, {
      details: { issues: [{ field: 'redirectUris', message }] },
    });
  }
  // a rotated secret is never kept: the old one opens nothing from the next request on (no grace period)
  const kept = body.rotateSecret ? undefined : existing?.metadata.client_secret;
  return {
    clientId,
    name: body.name === undefined ? existing?.metadata.client_name : (body.name ?? undefined),
    redirectUris,
    postLogoutRedirectUris: body.postLogoutRedirectUris ?? existing?.metadata.post_logout_redirect_uris,
    clientSecret: confidential ? (kept ?? randomBytes(32).toString('base64url')) : undefined,
    firstParty: existing?.firstParty ?? false,
  };
}

/**
 * Operators register relying parties (`pnpm platform oidc-client add`). Idempotent: the same call again
 * answers `exists`; a changed one `updated`. A confidential client's secret is made once and shown once, and made anew
 * on `rotateSecret` (a leaked one). Registered again, a client left without `redirectUris`, `confidential`, `name` or
 * `postLogoutRedirectUris` keeps them: its application's redirects and secret are not thrown away (a rotation need not
 * name every redirect URI again). Two registrations at once keep each other's changes (`OidcClients.save`).
 */
export function mountInternalClientRoutes(router: Router, c: AuthContext, host: OidcProviderHost): void {
  router.put(
    '/internal/oidc-clients/:clientId',
    requireInternalSecret(c.config.PLATFORM_INTERNAL_SECRET),
    async (req, res) => {
      // The platform's own sessions carry these ids (its sign-in's, its pages' first-party client, which auth registers
      // at start): a relying party's must never pass for them.
      const reserved = [c.config.PASSWORD_CLIENT_ID, c.config.ANONYMOUS_CLIENT_ID, FIRST_PARTY_CLIENT_ID];
      const clientId = parseInput(
        z
          .string()
          .regex(/^[A-Za-z0-9._-]{3,100}$/, 'letters, digits, dot, dash, underscore (3-100)')
          .refine((id) => !reserved.includes(id), 'reserved for the platform’s own sessions'),
        req.params.clientId,
        'clientId',
      );
      const body = parseInput(OidcClientBody, req.body);
      const { before: existing, after: saved } = await host.clients.save(clientId, c.clock.now(), (stored) =>
        registrationOf(clientId, body, stored),
      );
      const secret = saved.metadata.client_secret;
      const view = {
        clientId,
        name: saved.metadata.client_name ?? null,
        redirectUris: saved.metadata.redirect_uris,
        postLogoutRedirectUris: saved.metadata.post_logout_redirect_uris ?? [],
        tokenEndpointAuthMethod: saved.metadata.token_endpoint_auth_method,
      };
      // A secret is answered once: when it is made (a new client, a public one made confidential, a rotated one, or one
      // whose secret no longer opens); a kept one never again.
      const made = secret && secret !== existing?.metadata.client_secret ? { clientSecret: secret } : {};
      if (!existing) {
        res.status(201).json({ result: 'created', ...view, ...made });
        return;
      }
      // both with the secret opened: it is sealed afresh (a new IV) at every write
      const same = JSON.stringify(existing.metadata) === JSON.stringify(saved.metadata);
      res.status(200).json({ result: same ? 'exists' : 'updated', ...view, ...made });
    },
  );
}
