/**
 * The identity the edge hands to services. Its shape follows the automation context of spec 5.2
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
    orgSlugs: string[];
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
