import type { PermissionTree, Principal } from './principal';

/**
 * The permission catalogue: every organization-level permission a role or an organization API key
 * may hold. A name is `resource:action`; the catalogue also places it under a product, which is how
 * `run.permissions` (spec 5.2 rule 8) nests it: product -> resource -> action -> true.
 */
export interface PermissionDefinition {
  product: string;
  resource: string;
  action: string;
  description: string;
}

const definition = (product: string, resource: string, action: string, description: string) => ({
  product,
  resource,
  action,
  description,
});

export const PERMISSIONS = {
  'members:read': definition('platform', 'members', 'read', 'List the members of the organization'),
  'members:manage': definition(
    'platform',
    'members',
    'manage',
    'Add members, change their role, remove them',
  ),
  'roles:read': definition('platform', 'roles', 'read', 'List the roles of the organization'),
  'roles:manage': definition('platform', 'roles', 'manage', 'Create, change and delete custom roles'),
  'apikeys:read': definition(
    'platform',
    'apikeys',
    'read',
    'List organization API keys (never their secrets)',
  ),
  'apikeys:manage': definition('platform', 'apikeys', 'manage', 'Create and revoke organization API keys'),
  'workspaces:create': definition(
    'platform',
    'workspaces',
    'create',
    'Create workspaces in the organization',
  ),
  'workspaces:manage': definition(
    'platform',
    'workspaces',
    'manage',
    'Administer every workspace of the organization, whatever the workspace role',
  ),
  'models:read': definition(
    'llm',
    'models',
    'read',
    'Use and read models, quotas and usage of the LLM gateway',
  ),
  'models:manage': definition('llm', 'models', 'manage', 'Configure models of the LLM gateway'),
  'quotas:manage': definition(
    'llm',
    'quotas',
    'manage',
    "Set the organization's LLM quota policy and per-user quotas (overrides and by role)",
  ),
} as const satisfies Record<string, PermissionDefinition>;

export type PermissionName = keyof typeof PERMISSIONS;

/** Every permission name, in catalogue order (what the built-in `owner` role holds). */
export const ALL_PERMISSIONS = Object.keys(PERMISSIONS) as PermissionName[];

export function isPermissionName(name: string): name is PermissionName {
  return Object.hasOwn(PERMISSIONS, name);
}

/**
 * `run.permissions` of a principal: the nested product -> resource -> action -> true form of a list
 * of permission names. Names outside the catalogue are ignored (they grant nothing).
 */
export function permissionTree(permissions: readonly string[]): PermissionTree {
  const tree: PermissionTree = {};
  for (const name of permissions) {
    if (!isPermissionName(name)) continue;
    const { product, resource, action } = PERMISSIONS[name];
    tree[product] ??= {};
    tree[product][resource] ??= {};
    tree[product][resource][action] = true;
  }
  return tree;
}

export interface PermissionCheckOptions {
  /**
   * The project the request is about, when it names one (`/v2/orgs/:orgSlug/projects/:projectId/...`).
   * A credential restricted to one project holds its permissions only for that project.
   */
  projectId?: string | null;
}

/**
 * Whether a principal holds a permission (from `run.permissions`). A project-restricted organization
 * API key holds nothing outside its project, so organization-wide checks refuse it by default.
 */
export function hasPermission(
  principal: Pick<Principal, 'run' | 'credential'>,
  name: PermissionName | string,
  options: PermissionCheckOptions = {},
): boolean {
  if (!isPermissionName(name)) return false;
  const restriction = principal.credential.projectId;
  if (restriction && restriction !== options.projectId) return false;
  const { product, resource, action } = PERMISSIONS[name];
  return principal.run.permissions[product]?.[resource]?.[action] === true;
}

/**
 * Workspace API key rules (spec 2.7): the actions and subjects a rule may name. `manage` means every
 * action. Services that own workspace resources check `principal.credential.rules` against these.
 */
export const WORKSPACE_RULE_ACTIONS = ['read', 'create', 'update', 'delete', 'manage'] as const;
export const WORKSPACE_RULE_SUBJECTS = [
  'workspace',
  'member',
  'apikey',
  'page',
  'file',
  'app',
  'event',
  'automation',
] as const;
export type WorkspaceRuleAction = (typeof WORKSPACE_RULE_ACTIONS)[number];
export type WorkspaceRuleSubject = (typeof WORKSPACE_RULE_SUBJECTS)[number];

/**
 * The plural names Prisme.ai clients send for the same subjects (`workspaces`, `pages`, ...). Rules are
 * accepted under either name and stored and answered in the canonical, singular one.
 */
export const WORKSPACE_RULE_SUBJECT_PLURALS: Record<string, WorkspaceRuleSubject> = Object.fromEntries(
  WORKSPACE_RULE_SUBJECTS.map((s) => [`${s}s`, s]),
);

/** The canonical name of a rule subject given in either form; undefined when it is none. */
export function canonicalWorkspaceSubject(name: string): WorkspaceRuleSubject | undefined {
  if ((WORKSPACE_RULE_SUBJECTS as readonly string[]).includes(name)) return name as WorkspaceRuleSubject;
  return WORKSPACE_RULE_SUBJECT_PLURALS[name];
}
