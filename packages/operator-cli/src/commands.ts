import { api, CliError, type CliSettings, failure, internal, platformBody } from './client';

/** A command's outcome: what it did, and the data to print. */
export interface Outcome {
  /** `created`, `exists`, `updated`, `started`, `pending`, `listed`, `revoked`, `already_revoked` */
  result: string;
  data: unknown;
  /** lines for a person, printed under the data (with --json, the data says the same) */
  notes?: string[];
}

export async function createOrg(s: CliSettings, slug: string, name: string): Promise<Outcome> {
  const created = await api(s, 'POST', '/v2/orgs', { slug, name });
  if (created.status === 201) return { result: 'created', data: created.body };
  if (created.status === 409) {
    // Idempotent: the organization is already there, and the operator is one of its members.
    const existing = await api(s, 'GET', `/v2/orgs/${encodeURIComponent(slug)}`);
    if (existing.status === 200) return { result: 'exists', data: existing.body };
    throw new CliError(`The slug ${slug} is taken by an organization you are not a member of`);
  }
  throw failure('Creating the organization', created);
}

interface MemberView {
  userId: string;
  role: string;
}

/**
 * Adds a member (role `member` unless `role` names one), or changes its role to `role`. Run again without `role`, it
 * reports the membership as it is: a member made owner since is not reset to `member`.
 */
export async function addMember(
  s: CliSettings,
  org: string,
  userId: string,
  role: string | undefined,
): Promise<Outcome> {
  const path = `/v2/orgs/${encodeURIComponent(org)}/members`;
  const listed = await api(s, 'GET', path);
  // a caller who may add members but not see them (members:manage without members:read) adds with --role unseen
  const unseen = listed.status === 403 && role !== undefined;
  if (listed.status !== 200 && !unseen) throw failure('Listing the members', listed);
  const existing = unseen
    ? undefined
    : platformBody<MemberView[]>(listed, Array.isArray).find((m) => m.userId === userId);
  if (existing && (role === undefined || role === existing.role)) return { result: 'exists', data: existing };
  const added = await api(s, 'POST', path, { userId, role: role ?? 'member' });
  if (added.status === 201) return { result: 'created', data: added.body };
  if (added.status === 200) return { result: 'updated', data: added.body };
  const refused = failure('Adding the member', added);
  const issues = (added.body as { details?: { issues?: Array<{ field?: string }> } } | null)?.details?.issues;
  if (added.status === 400 && issues?.some((issue) => issue.field === 'role')) {
    // the roles it takes, built-in and custom, when the caller may list them
    const roles = await api(s, 'GET', `/v2/orgs/${encodeURIComponent(org)}/roles`);
    if (roles.status === 200 && Array.isArray(roles.body))
      refused.message += `\nThe roles of ${org}: ${(roles.body as Array<{ slug: string }>).map((r) => r.slug).join(', ')}`;
  }
  throw refused;
}

/**
 * llm-quota gives a plan to any slug (it learns organizations from their traffic, decision 0017): auth, which
 * owns organizations, is asked first, so a typo is refused instead of reported `updated`.
 */
export async function assignPlan(s: CliSettings, org: string, plan: string): Promise<Outcome> {
  const known = await internal(s, 'auth', 'GET', `/internal/orgs/${encodeURIComponent(org)}`);
  // (a 404 of another kind is an auth without this route, or a URL that is not auth's)
  if (known.status === 404 && (known.body as { error?: string } | null)?.error === 'OrgNotFound')
    throw new CliError(`There is no organization ${org}`);
  if (known.status !== 200) throw failure('Looking up the organization', known);
  const assigned = await internal(s, 'llm-quota', 'PUT', `/internal/orgs/${encodeURIComponent(org)}/plan`, {
    plan,
  });
  if (assigned.status === 200) return { result: 'updated', data: assigned.body };
  throw failure('Assigning the plan', assigned);
}

interface KeyView {
  id?: string;
  _id?: string;
  name: string;
}

export async function issueOrgApiKey(
  s: CliSettings,
  org: string,
  options: { name: string; permissions: string[]; scopes: string[]; projectId?: string },
): Promise<Outcome> {
  const path = `/v2/orgs/${encodeURIComponent(org)}/apikeys`;
  const listed = await api(s, 'GET', path);
  if (listed.status !== 200) throw failure('Listing the API keys', listed);
  // Idempotent by name: a live key of that name is reported, never minted twice (its secret was shown once).
  const existing = platformBody<KeyView[]>(listed, Array.isArray).find((k) => k.name === options.name);
  if (existing) return { result: 'exists', data: existing };
  const created = await api(s, 'POST', path, {
    name: options.name,
    permissions: options.permissions,
    scopes: options.scopes,
    ...(options.projectId ? { projectId: options.projectId } : {}),
  });
  if (created.status === 201) return { result: 'created', data: created.body };
  throw failure('Issuing the API key', created);
}

export async function rotateKeys(s: CliSettings): Promise<Outcome> {
  const rotated = await internal(s, 'auth', 'POST', '/internal/signing-keys/rotate');
  if (rotated.status !== 200) throw failure('Rotating the signing keys', rotated);
  const body = platformBody<{ started: boolean }>(rotated, (b) => typeof b.started === 'boolean');
  return { result: body.started ? 'started' : 'pending', data: body };
}

/** The signing keys: kid, state and dates (auth never answers key material). */
export async function listKeys(s: CliSettings): Promise<Outcome> {
  const listed = await internal(s, 'auth', 'GET', '/internal/signing-keys');
  if (listed.status !== 200) throw failure('Listing the signing keys', listed);
  return {
    result: 'listed',
    data: platformBody<{ keys: unknown[] }>(listed, (b) => Array.isArray(b.keys)).keys,
  };
}

/** auth's answer of an idempotent write names what it did */
const hasResult = (body: Record<string, unknown>) => typeof body.result === 'string';

/** A leaked key stops verifying and signing now; revoking it again reports it (decision 0102). */
export async function revokeKey(s: CliSettings, kid: string): Promise<Outcome> {
  const revoked = await internal(
    s,
    'auth',
    'POST',
    `/internal/signing-keys/${encodeURIComponent(kid)}/revoke`,
  );
  // (a 404 of another kind is an auth without this route, or a URL that is not auth's)
  if (revoked.status === 404 && (revoked.body as { error?: string } | null)?.error === 'SigningKeyNotFound')
    throw new CliError(`There is no signing key ${kid} (pnpm platform keys list shows them)`);
  if (revoked.status !== 200) throw failure('Revoking the signing key', revoked);
  const { result, ...data } = platformBody<{ result: string }>(revoked, hasResult);
  return { result, data };
}

/**
 * Registers an OpenID Connect client, or changes it. `redirectUris`, `confidential`, `name` and
 * `postLogoutRedirectUris` left out are kept as stored (a new client needs a redirect URI, and is public, without a
 * name or logout redirect URIs): registered again to change its redirect URIs, a confidential client keeps the secret
 * its application holds, and any client its logout redirects. `rotateSecret` replaces a leaked secret (the old one is
 * refused at once), the redirect URIs kept unless given. auth answers a secret once, when it makes one; the note says
 * which it was.
 */
export async function addOidcClient(
  s: CliSettings,
  clientId: string,
  options: {
    name?: string;
    redirectUris?: string[];
    postLogoutRedirectUris?: string[];
    confidential?: boolean;
    rotateSecret?: boolean;
  },
): Promise<Outcome> {
  const saved = await internal(s, 'auth', 'PUT', `/internal/oidc-clients/${encodeURIComponent(clientId)}`, {
    ...(options.name === undefined ? {} : { name: options.name }),
    ...(options.redirectUris === undefined ? {} : { redirectUris: options.redirectUris }),
    ...(options.postLogoutRedirectUris === undefined
      ? {}
      : { postLogoutRedirectUris: options.postLogoutRedirectUris }),
    ...(options.confidential === undefined ? {} : { confidential: options.confidential }),
    ...(options.rotateSecret ? { rotateSecret: true } : {}),
  });
  if (saved.status !== 200 && saved.status !== 201)
    throw failure('Registering the OpenID Connect client', saved);
  const { result, ...data } = platformBody<{
    result: string;
    tokenEndpointAuthMethod?: string;
    clientSecret?: string;
  }>(saved, hasResult);
  let note = 'public';
  if (data.clientSecret !== undefined)
    note =
      'confidential: a new client secret (clientSecret above), shown this once: give it to the application';
  else if (data.tokenEndpointAuthMethod === 'client_secret_post') note = 'confidential, secret kept';
  return { result, data, notes: [note] };
}

const SECRET_NOTES = {
  set: 'stored',
  kept: 'stored (kept the stored one)',
  removed: 'none (public client; any stored one removed)',
  none: 'none (public client)',
};

/** What became of a provider's secret, given (null: removed) or left out, of which auth says whether one is stored. */
function secretOutcome(
  given: string | null | undefined,
  result: string,
  stored: boolean,
): keyof typeof SECRET_NOTES {
  if (typeof given === 'string') return 'set';
  // (auth does not say whether one was stored before: `updated` may have changed another setting alone)
  if (given === null) return result === 'updated' ? 'removed' : 'none';
  return stored ? 'kept' : 'none';
}

/**
 * Names an identity provider, or changes it. A secret or an organization left out is kept, null removes it. auth never
 * answers the secret: the outcome's `client_secret` says what became of it (`set`, `kept`, `removed`, `none`).
 */
export async function addSsoProvider(
  s: CliSettings,
  slug: string,
  options: {
    name: string;
    issuer: string;
    clientId: string;
    clientSecret?: string | null;
    orgSlug?: string | null;
  },
): Promise<Outcome> {
  const saved = await internal(
    s,
    'auth',
    'PUT',
    `/internal/sso-providers/${encodeURIComponent(slug)}`,
    options,
  );
  if (saved.status !== 200 && saved.status !== 201) throw failure('Naming the identity provider', saved);
  const { result, ...data } = platformBody<{
    result: string;
    hasClientSecret?: boolean;
    orgSlug?: string | null;
  }>(saved, hasResult);
  const clientSecret = secretOutcome(options.clientSecret, result, data.hasClientSecret === true);
  const orgKept = options.orgSlug === undefined && result !== 'created';
  const org = data.orgSlug
    ? `${data.orgSlug}${orgKept ? ' (kept the stored one)' : ''}`
    : `none (the platform's provider${orgKept ? ', kept' : ''})`;
  return {
    result,
    data: { ...data, client_secret: clientSecret },
    notes: [`client secret: ${SECRET_NOTES[clientSecret]}`, `organization: ${org}`],
  };
}
