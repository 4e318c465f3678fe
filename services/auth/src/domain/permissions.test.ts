import {
  ALL_PERMISSIONS,
  hasPermission,
  PERMISSIONS,
  type Principal,
  permissionTree,
} from '@platform/contracts';
import { BUILT_IN_ROLES } from './roles';

const principalWith = (
  permissions: string[],
  projectId: string | null = null,
): Pick<Principal, 'run' | 'credential'> => ({
  credential: { kind: 'org_api_key', id: 'k', projectId },
  run: { permissions: permissionTree(permissions), scopes: [], correlationId: '', sourceWorkspaceId: null },
});

describe('permission catalogue', () => {
  it('nests permissions product -> resource -> action -> true (spec 5.2 rule 8)', () => {
    expect(permissionTree(['models:read', 'members:read', 'members:manage'])).toEqual({
      llm: { models: { read: true } },
      platform: { members: { read: true, manage: true } },
    });
  });

  it('ignores names outside the catalogue', () => {
    expect(permissionTree(['nope:read', 'models:read'])).toEqual({ llm: { models: { read: true } } });
  });

  it('checks a permission through run.permissions', () => {
    expect(hasPermission(principalWith(['models:read']), 'models:read')).toBe(true);
    expect(hasPermission(principalWith(['members:read']), 'models:read')).toBe(false);
    expect(hasPermission(principalWith(['models:read']), 'unknown:thing')).toBe(false);
  });

  it('a project-restricted credential holds its permissions only in that project', () => {
    const restricted = principalWith(['models:read'], 'proj-1');
    expect(hasPermission(restricted, 'models:read')).toBe(false);
    expect(hasPermission(restricted, 'models:read', { projectId: 'proj-2' })).toBe(false);
    expect(hasPermission(restricted, 'models:read', { projectId: 'proj-1' })).toBe(true);
  });

  it('built-in roles: owner holds every permission, member includes models:read, guest none', () => {
    expect(BUILT_IN_ROLES.owner!.permissions).toEqual(ALL_PERMISSIONS);
    expect(ALL_PERMISSIONS).toEqual(Object.keys(PERMISSIONS));
    expect(BUILT_IN_ROLES.member!.permissions).toContain('models:read');
    expect(BUILT_IN_ROLES.guest!.permissions).toEqual([]);
  });
});
