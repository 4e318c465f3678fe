/**
 * The identity the edge hands to services. Bounded in size whatever the user's memberships: only the
 * active organization is in it. Its shape follows the automation context of spec 5.2
 * rule 8 (`session.*`, `user.*`, `run.*`) so every service reads one well-known object.
 */
export type CredentialKind = 'session' | 'access_token' | 'workspace_api_key' | 'org_api_key';

/** product -> resource -> action -> true (spec 5.2 rule 8, `run.permissions`). */
export type PermissionTree = Record<string, Record<string, Record<string, true>>>;

export interface OrgRoleContext {
  slug: string;
  permissions: string[];
  scopes: string[];
}

export interface OrgContext {
  slug: string;
  name: string;
  role: OrgRoleContext;
  groups: string[];
  settings: Record<string, unknown>;
  subscription: Record<string, unknown> | null;
}

/** A workspace API key's rule as stored and enforced (spec 2.7). */
export interface ApiKeyRule {
  action: string[];
  subject: string;
  conditions: Record<string, unknown>;
}

export interface Principal {
  credential: {
    kind: CredentialKind;
    /** session id, access-token id or API-key id */
    id: string;
    /** workspace API keys: their rules; org API keys: their optional project restriction */
    rules?: ApiKeyRule[];
    workspaceId?: string;
    projectId?: string | null;
  };
  session: { id: string | null; org: OrgContext | null };
  user: {
    id: string | null;
    email: string | null;
    anonymous: boolean;
    /** workspace role, not the organization role */
    role: string | null;
    // No list of the user's organizations: the seal's size must not grow with memberships (a user
    // added to many organizations would otherwise be locked out by 431s). Services that need the list
    // ask auth (GET /v2/orgs); the active organization is `session.org`.
    /** a platform administrator (`pnpm platform admin grant <userId>`): manages the LLM model catalogue */
    platformAdmin?: true;
  };
  run: {
    permissions: PermissionTree;
    scopes: string[];
    correlationId: string;
    sourceWorkspaceId: string | null;
  };
}
