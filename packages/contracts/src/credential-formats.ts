/**
 * Shapes of the opaque credentials, shared by auth (which mints them) and the edge (which refuses a
 * malformed one without any lookup).
 */

/** User access token: `at:` + 43 base64url characters (256 random bits). */
export const ACCESS_TOKEN_PATTERN = /^at:[A-Za-z0-9_-]{43}$/;

/** Workspace API key: `wak_` + 43 base64url characters (256 random bits). */
export const WORKSPACE_API_KEY_PATTERN = /^wak_[A-Za-z0-9_-]{43}$/;

/** Organization API key (spec 2.7): `iak_{orgSlug}_{uuid}`; the slug is informative only. */
export const ORG_API_KEY_PATTERN =
  /^iak_([a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)_([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$/;

/** Organization slugs: lowercase letters, digits and dashes, 2-63 characters, no leading or trailing dash. */
export const ORG_SLUG_PATTERN = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])$/;

export type OpaqueCredentialKind = 'access_token' | 'workspace_api_key' | 'org_api_key';

/** Which kind an opaque credential is by its shape, or null when it matches none. */
export function classifyOpaqueCredential(value: string): OpaqueCredentialKind | null {
  if (ACCESS_TOKEN_PATTERN.test(value)) return 'access_token';
  if (WORKSPACE_API_KEY_PATTERN.test(value)) return 'workspace_api_key';
  if (ORG_API_KEY_PATTERN.test(value)) return 'org_api_key';
  return null;
}

/**
 * The platform API's resource scope (decision 0109): auth writes it into an application's access token only when the
 * person allowed it, and the edge accepts the OpenID provider's tokens beyond userinfo only with it.
 */
export const API_SCOPE = 'api';
