import { hasPermission, isPermissionName, type OrgContext, type Principal } from '@platform/contracts';
import { Forbidden, noOrgContext, Unauthenticated } from '@platform/kernel';

/** The permission of the quota reads (spec 4.1 rule 1). */
export const READ_PERMISSION = 'models:read';
/**
 * The permission of the organization's quota settings. Until the permission catalogue
 * (@platform/contracts) lists it, it is read from the role's permission names directly.
 */
export const MANAGE_PERMISSION = 'quotas:manage';

/** Whether the principal holds a permission in its active organization, organization-wide. */
export function holds(principal: Principal, permission: string): boolean {
  if (isPermissionName(permission)) return hasPermission(principal, permission);
  // Not (yet) in the catalogue: the role's own list, with the catalogue's rule that a credential
  // restricted to one project holds nothing organization-wide.
  if (principal.credential.projectId) return false;
  return principal.session.org?.role.permissions.includes(permission) ?? false;
}

/**
 * Authorizes an organization-scoped request in the order the edge applies (spec 4.1): credentials
 * (401), an active organization (400 NO_ORG_CONTEXT), then the permission (403).
 */
export function authorizeOrgRequest(
  principal: Principal | null | undefined,
  permission: string,
): { principal: Principal; org: OrgContext } {
  if (!principal) throw new Unauthenticated();
  const org = principal.session.org;
  if (!org) {
    throw noOrgContext();
  }
  if (!holds(principal, permission)) {
    throw new Forbidden(`The ${permission} permission is required in organization ${org.slug}`, {
      details: { permission, orgSlug: org.slug },
    });
  }
  return { principal, org };
}
