import type { ApiKeyRule } from '@platform/contracts';
import type { Collection, Doc, IndexSpec, Revised, Store } from '@platform/store';
import type { RateCounterDoc } from '../accounts/store-rate-limiter';

/** Documents of auth's own database. Ids are made in the domain (UUIDs); secrets are stored as hashes only. */

export interface UserDoc extends Doc {
  anonymous: boolean;
  /**
   * the normalised address; absent on anonymous users (null on those made by earlier versions until the retention
   * pass removes it), so that they stay out of its sparse index
   */
  email?: string | null;
  createdAt: Date;
  /** set when the user proved the email (a verification link or a verified identity provider claim) */
  emailVerifiedAt?: Date | null;
  firstName?: string | null;
  lastName?: string | null;
  /** platform-level role granted by an operator (`pnpm platform admin grant`) */
  platformAdmin?: boolean;
  /**
   * set when the person asked for their account to be deleted (decision 0099): from then on no credential of
   * theirs is accepted, and the document goes once everything that named it is gone
   */
  deletedAt?: Date;
}

/** A password account. `_id` is the normalised email (trimmed, lower case): one account per address. */
export interface AccountDoc extends Doc {
  userId: string;
  /** `scrypt$N$r$p$salt$hash` */
  passwordHash: string;
  createdAt: Date;
  passwordChangedAt: Date;
}

/** A mailed one-time link (email verification, password reset). `_id` is the sha256 of the token. */
export interface AccountTokenDoc extends Doc {
  kind: 'verify_email' | 'reset_password';
  userId: string;
  email: string;
  createdAt: Date;
  expiresAt: Date;
  usedAt: Date | null;
  /** when the store removes it: expiresAt + RETENTION_GRACE_SECONDS (absent on older records until dated, 0094) */
  removeAt?: Date;
}

/** A v2 session's refresh token. `_id` is its sha256; every token of a session is one family. */
export interface RefreshTokenDoc extends Doc {
  sessionId: string;
  userId: string;
  createdAt: Date;
  expiresAt: Date;
  /** set when it was exchanged; presenting it again revokes the session (reuse detection) */
  usedAt: Date | null;
  /** when the store removes it: expiresAt + RETENTION_GRACE_SECONDS (absent on older records until dated, 0094) */
  removeAt?: Date;
}

/** A login session; the JWT's `platformSessionId`. */
export interface SessionDoc extends Doc {
  userId: string;
  clientId: string;
  /** spec 5.2 rule 7 (b): the organization chosen with PUT /v2/user/active-org */
  activeOrgSlug: string | null;
  createdAt: Date;
  expiresAt: Date;
  revokedAt: Date | null;
  /** signed in with a second factor (an organization may require it of its members) */
  mfa?: boolean;
  /**
   * when the store removes it: a grace after it can no longer be used, i.e. after its revocation, else after the
   * later of its expiry and its refresh window (decision 0094); absent on older records until dated
   */
  removeAt?: Date;
}

export interface SigningKeyDoc extends Doc {
  /** `_id` is the kid */
  kty: 'RSA' | 'EC';
  alg: string;
  size: number;
  /** public JWK with kid, alg and use (what GET /oidc/jwks serves) */
  publicJwk: Record<string, string>;
  /** PKCS#8 PEM, or `enc:v1:...` when SIGNING_KEYS_ENCRYPTION_KEY is set; never leaves auth */
  privateKey: string;
  createdAt: Date;
  /** when it starts (or started) signing */
  activatesAt: Date;
  /** when its successor took over; null while it is current or pending */
  retiredAt: Date | null;
  /** when it leaves the JWKS: retiredAt + ACCESS_TOKENS_MAX_AGE + skew */
  removeAfter: Date | null;
}

/**
 * The tombstone of a revoked signing key (decision 0102): its `signing_keys` document (private part included) is
 * deleted, this stays so that the kid is never served, loaded or signed with again, and `keys list` shows it.
 */
export interface RevokedSigningKeyDoc extends Doc {
  /** `_id` is the kid */
  alg: string;
  /** what the key was doing when it was revoked */
  state: 'active' | 'pending' | 'retired';
  createdAt: Date;
  activatesAt: Date;
  retiredAt: Date | null;
  revokedAt: Date;
  /** set on a pending key withdrawn with the revoked signing key it was to replace */
  revokedWith?: string;
}

/** The one document every instance compares-and-sets to agree on rotation. `_id` = 'rotation'. */
export interface RotationDoc extends Doc {
  version: number;
  activeKid: string | null;
  pendingKid: string | null;
  /** when the pending key takes over signing */
  pendingActivatesAt: Date | null;
  nextRotationAt: Date | null;
  /** an instance generating a key holds this until it commits (or the lease runs out) */
  lease: { owner: string; until: Date } | null;
  /** how many keys were committed so far */
  rotations: number;
}

export interface AccessTokenDoc extends Doc {
  userId: string;
  name: string;
  /** sha256 hex of the full token (`at:...`) */
  tokenHash: string;
  /** the access token's own active organization (it has no session) */
  activeOrgSlug: string | null;
  /** whether the session that made it was signed in with a second factor (absent on older tokens: no) */
  mfa?: boolean;
  createdAt: Date;
  expiresAt: Date;
  revokedAt: Date | null;
  /** when the store removes it: a grace after its expiry or revocation (decision 0094); absent on older records until dated */
  removeAt?: Date;
}

/**
 * The places a user's live access tokens take against ACCESS_TOKENS_PER_USER_LIMIT; `_id` = the user id.
 * Changed only through `updateWithRevision` (decision 0090): a creation takes a place, a revocation gives it
 * back, and places past their `expiresAt` are dropped by the next change, since tokens expire without a write.
 */
export interface AccessTokenPlacesDoc extends Revised {
  places: Array<{ tokenId: string; expiresAt: Date }>;
}

export interface OrgDoc extends Doc {
  slug: string;
  name: string;
  createdAt: Date;
  createdBy: string;
  settings: Record<string, unknown>;
  subscription: Record<string, unknown> | null;
}

/**
 * A deleted organization's slug, kept so that no one registers it again and inherits what others keep under it
 * (llm-quota's settings and usage, `iak_{slug}_...` keys in old scripts). `_id` is the slug (decision 0099). Only
 * what the reservation and the sweep need: never the organization's name (earlier versions kept it, and its
 * creation time; the retention pass removes them, `forgetDeletedOrgNames`).
 */
export interface OrgTombstoneDoc extends Doc {
  orgId: string;
  deletedAt: Date;
  /** who deleted it: a user id (its owner, or its last member deleting their account) */
  deletedBy: string;
  /** when everything that named the organization was removed or revoked (absent while that is under way) */
  sweptAt?: Date;
}

/** A custom role of an organization (built-in roles live in code). */
export interface RoleDoc extends Doc {
  orgId: string;
  slug: string;
  description: string;
  permissions: string[];
  scopes: string[];
  createdAt: Date;
  updatedAt: Date;
}

export interface MembershipDoc extends Doc {
  orgId: string;
  /** denormalised (slugs never change) so principal resolution needs no join */
  orgSlug: string;
  userId: string;
  role: string;
  createdAt: Date;
}

export interface OrgApiKeyDoc extends Doc {
  orgId: string;
  orgSlug: string;
  name: string;
  /** sha256 hex of the full key */
  keyHash: string;
  permissions: string[];
  scopes: string[];
  projectId: string | null;
  createdBy: string;
  createdAt: Date;
  expiresAt: Date | null;
  revokedAt: Date | null;
  /** a grace after its expiry or revocation; none while it may be used for ever (decision 0094) */
  removeAt?: Date;
}

export interface WorkspaceDoc extends Doc {
  name: string;
  orgId: string;
  orgSlug: string;
  createdBy: string;
  createdAt: Date;
}

export interface WorkspaceMemberDoc extends Doc {
  workspaceId: string;
  orgId: string;
  userId: string;
  role: string;
  createdAt: Date;
}

export interface WorkspaceApiKeyDoc extends Doc {
  workspaceId: string;
  orgId: string;
  name: string;
  keyHash: string;
  rules: ApiKeyRule[];
  createdBy: string;
  createdAt: Date;
  expiresAt: Date | null;
  revokedAt: Date | null;
  /** a grace after its expiry or revocation; none while it may be used for ever (decision 0094) */
  removeAt?: Date;
}

export interface AuthCollections {
  users: Collection<UserDoc>;
  sessions: Collection<SessionDoc>;
  signingKeys: Collection<SigningKeyDoc>;
  rotation: Collection<RotationDoc>;
  signingKeyRevocations: Collection<RevokedSigningKeyDoc>;
  accessTokens: Collection<AccessTokenDoc>;
  accessTokenPlaces: Collection<AccessTokenPlacesDoc>;
  orgs: Collection<OrgDoc>;
  orgTombstones: Collection<OrgTombstoneDoc>;
  roles: Collection<RoleDoc>;
  memberships: Collection<MembershipDoc>;
  orgApiKeys: Collection<OrgApiKeyDoc>;
  workspaces: Collection<WorkspaceDoc>;
  workspaceMembers: Collection<WorkspaceMemberDoc>;
  workspaceApiKeys: Collection<WorkspaceApiKeyDoc>;
  accounts: Collection<AccountDoc>;
  accountTokens: Collection<AccountTokenDoc>;
  refreshTokens: Collection<RefreshTokenDoc>;
  /** counters of the login and account-mail limiters, shared by every instance */
  rateCounters: Collection<RateCounterDoc>;
}

/** The TTL index of every collection that grows with traffic: each record carries its own removal time (0088, 0094). */
const ttlOnRemoveAt: IndexSpec = { fields: { removeAt: 1 }, expireAfterSeconds: 0 };

/**
 * Collection handles with the indexes the hot paths need (credential hashes, memberships), the TTL indexes of
 * records that stop being usable, and the `createdBy` indexes the removal of abandoned anonymous users asks.
 */
export function openCollections(store: Store): AuthCollections {
  return {
    users: store.collection<UserDoc>('users', [
      { fields: { anonymous: 1, createdAt: 1 } },
      // one person per address (decision 0121) is looked up at every sign-up and first SSO sign-in. Sparse: the
      // anonymous users, who have no address, stay out of it (on the embedded engine, all of them under one key
      // would make every update of them slower)
      { fields: { email: 1 }, sparse: true },
      // account deletions a crash left unfinished are found by it (decision 0099)
      { fields: { deletedAt: 1 } },
    ]),
    sessions: store.collection<SessionDoc>('sessions', [{ fields: { userId: 1 } }, ttlOnRemoveAt]),
    signingKeys: store.collection<SigningKeyDoc>('signing_keys', [{ fields: { removeAfter: 1 } }]),
    rotation: store.collection<RotationDoc>('signing_rotation'),
    signingKeyRevocations: store.collection<RevokedSigningKeyDoc>('signing_key_revocations'),
    accessTokens: store.collection<AccessTokenDoc>('access_tokens', [
      { fields: { tokenHash: 1 }, unique: true },
      { fields: { userId: 1 } },
      ttlOnRemoveAt,
    ]),
    accessTokenPlaces: store.collection<AccessTokenPlacesDoc>('access_token_places'),
    orgs: store.collection<OrgDoc>('orgs', [
      { fields: { slug: 1 }, unique: true },
      { fields: { createdBy: 1 } },
    ]),
    orgTombstones: store.collection<OrgTombstoneDoc>('org_tombstones'),
    roles: store.collection<RoleDoc>('roles', [{ fields: { orgId: 1, slug: 1 }, unique: true }]),
    memberships: store.collection<MembershipDoc>('memberships', [
      { fields: { orgId: 1, userId: 1 }, unique: true },
      { fields: { userId: 1 } },
    ]),
    orgApiKeys: store.collection<OrgApiKeyDoc>('org_api_keys', [
      { fields: { keyHash: 1 }, unique: true },
      { fields: { orgId: 1 } },
      { fields: { createdBy: 1 } },
      ttlOnRemoveAt,
    ]),
    workspaces: store.collection<WorkspaceDoc>('workspaces', [
      { fields: { orgId: 1 } },
      { fields: { createdBy: 1 } },
    ]),
    workspaceMembers: store.collection<WorkspaceMemberDoc>('workspace_members', [
      { fields: { workspaceId: 1, userId: 1 }, unique: true },
      { fields: { userId: 1 } },
    ]),
    workspaceApiKeys: store.collection<WorkspaceApiKeyDoc>('workspace_api_keys', [
      { fields: { keyHash: 1 }, unique: true },
      { fields: { workspaceId: 1 } },
      { fields: { createdBy: 1 } },
      ttlOnRemoveAt,
    ]),
    accounts: store.collection<AccountDoc>('accounts', [{ fields: { userId: 1 } }]),
    accountTokens: store.collection<AccountTokenDoc>('account_tokens', [
      { fields: { userId: 1 } },
      ttlOnRemoveAt,
    ]),
    refreshTokens: store.collection<RefreshTokenDoc>('refresh_tokens', [
      { fields: { sessionId: 1 } },
      ttlOnRemoveAt,
    ]),
    rateCounters: store.collection<RateCounterDoc>('rate_counters', [ttlOnRemoveAt]),
  };
}
