import { ALL_PERMISSIONS, type PermissionName } from '@platform/contracts';
import type { AuthCollections, OrgDoc, RoleDoc } from '../data/collections';

export interface RoleDefinition {
  slug: string;
  description: string;
  permissions: string[];
  scopes: string[];
  builtIn: boolean;
}

const builtIn = (slug: string, description: string, permissions: PermissionName[]): RoleDefinition => ({
  slug,
  description,
  permissions,
  scopes: [],
  builtIn: true,
});

/** Built-in organization roles: the same in every organization, not editable. */
export const BUILT_IN_ROLES: Readonly<Record<string, RoleDefinition>> = Object.freeze({
  owner: builtIn('owner', 'Every permission, including ownership changes', [...ALL_PERMISSIONS]),
  member: builtIn('member', 'Uses models, creates workspaces, sees members and roles', [
    'members:read',
    'roles:read',
    'workspaces:create',
    'models:read',
  ]),
  guest: builtIn('guest', 'Belongs to the organization, holds no permission', []),
});

export const isBuiltInRole = (slug: string): boolean => Object.hasOwn(BUILT_IN_ROLES, slug);

/** Custom role slugs: lowercase, 2-40 characters, starting with a letter. */
export const ROLE_SLUG_PATTERN = /^[a-z][a-z0-9-]{1,39}$/;

/** Scopes are labels carried to services in `run.scopes`. */
export const SCOPE_PATTERN = /^[A-Za-z0-9][A-Za-z0-9:._/-]{0,99}$/;

export const toRoleDefinition = (doc: RoleDoc): RoleDefinition => ({
  slug: doc.slug,
  description: doc.description,
  permissions: doc.permissions,
  scopes: doc.scopes,
  builtIn: false,
});

/** A role of an organization by slug: built-in from code, custom from the store; null when unknown. */
export async function findRole(
  collections: Pick<AuthCollections, 'roles'>,
  org: Pick<OrgDoc, '_id'>,
  slug: string,
): Promise<RoleDefinition | null> {
  // an own member only: a slug such as `constructor` must not find Object's
  const known = isBuiltInRole(slug) ? BUILT_IN_ROLES[slug] : undefined;
  if (known) return known;
  const doc = await collections.roles.findOne({ orgId: org._id, slug });
  return doc ? toRoleDefinition(doc) : null;
}

/** A member whose role no longer resolves holds nothing (roles in use cannot be deleted, but be safe). */
export const NO_ROLE: RoleDefinition = {
  slug: 'none',
  description: '',
  permissions: [],
  scopes: [],
  builtIn: false,
};
