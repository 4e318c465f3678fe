import { hasPermission as holds, isPermissionName, type Principal } from '@platform/contracts';

/**
 * Whether a principal holds a permission (e.g. `models:read`) organization-wide, by the platform's one
 * rule (`hasPermission` of @platform/contracts, the check services use too): from `run.permissions`,
 * which auth fills from the active organization role's permissions for users and from the key's own
 * permissions for organization API keys; a project-restricted key holds nothing organization-wide.
 * A name outside the catalogue is read from the role's permission list, as llm-quota does.
 */
export function hasPermission(principal: Principal, permission: string): boolean {
  if (isPermissionName(permission)) return holds(principal, permission);
  if (principal.credential.projectId) return false;
  return principal.session.org?.role.permissions.includes(permission) ?? false;
}

/** Who a rate limit counts against: the user, or the API key itself when it carries no user. */
export function consumerOf(principal: Principal): string {
  return principal.user.id
    ? `user:${principal.user.id}`
    : `${principal.credential.kind}:${principal.credential.id}`;
}
