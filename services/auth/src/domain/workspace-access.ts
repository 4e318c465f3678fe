import { createMongoAbility, type MongoAbility, type RawRuleOf, subject } from '@casl/ability';
import type { ApiKeyRule, WorkspaceRuleSubject } from '@platform/contracts';
import { Forbidden, NotFound } from '@platform/kernel';
import type { AuthCollections, WorkspaceDoc } from '../data/collections';
import type { Caller } from './caller';
import { meetsMfaPolicy, mfaRequired } from './org-access';
import { findRole } from './roles';

export const WORKSPACE_ROLES = ['owner', 'admin', 'editor', 'viewer'] as const;
export type WorkspaceRole = (typeof WORKSPACE_ROLES)[number];

type Ability = MongoAbility;
type Rule = RawRuleOf<Ability>;

const CONTENT: WorkspaceRuleSubject[] = ['page', 'file', 'automation'];

/**
 * The conditions that scope a rule to one workspace (spec 2.7): the workspace itself by `id`,
 * everything inside it by `workspaceId`.
 */
export const scopeConditions = (subjectName: string, workspaceId: string): Record<string, unknown> =>
  subjectName === 'workspace' ? { id: workspaceId } : { workspaceId };

/** Workspace roles as CASL rules, each scoped to the one workspace. */
export function rulesOfWorkspaceRole(role: string, workspaceId: string): Rule[] {
  const inside = { workspaceId };
  const itself = { id: workspaceId };
  const viewer: Rule[] = [
    { action: 'read', subject: 'workspace', conditions: itself },
    { action: 'read', subject: ['member', ...CONTENT], conditions: inside },
  ];
  const editor: Rule[] = [
    ...viewer,
    { action: 'update', subject: 'workspace', conditions: itself },
    { action: 'manage', subject: CONTENT, conditions: inside },
  ];
  const admin: Rule[] = [...editor, { action: 'manage', subject: ['member', 'apikey'], conditions: inside }];
  switch (role) {
    case 'owner':
      return [{ action: 'manage', subject: 'all', conditions: inside }];
    case 'admin':
      return admin;
    case 'editor':
      return editor;
    case 'viewer':
      return viewer;
    default:
      return [];
  }
}

/** The CASL subject for a thing of a workspace; the workspace itself matches both `id` and `workspaceId`. */
export const workspaceSubject = (
  subjectName: string,
  workspaceId: string,
  fields: Record<string, unknown> = {},
) =>
  subject(subjectName, {
    ...fields,
    workspaceId,
    ...(subjectName === 'workspace' ? { id: workspaceId } : {}),
  });

export interface WorkspaceAccess {
  workspace: WorkspaceDoc;
  ability: Ability;
  /** the caller's workspace role (users with a workspace membership) */
  role: WorkspaceRole | null;
  /** whether the caller administers every workspace of the organization (`workspaces:manage`) */
  orgAdmin: boolean;
  can(action: string, subjectName: string, fields?: Record<string, unknown>): boolean;
  require(action: string, subjectName: string, fields?: Record<string, unknown>): void;
}

/**
 * Rules of the caller on one workspace: workspace role, organization-wide admin, or a key's own rules. `leaving`: the
 * caller is a user removing their own membership, which the organization's two-step rule does not refuse (0032).
 */
export async function workspaceRules(
  collections: AuthCollections,
  caller: Caller,
  workspace: WorkspaceDoc,
  options: { leaving?: boolean } = {},
): Promise<{ rules: Rule[]; role: WorkspaceRole | null; orgAdmin: boolean }> {
  switch (caller.kind) {
    case 'user': {
      const [org, orgMembership, wsMembership] = await Promise.all([
        collections.orgs.findOne({ _id: workspace.orgId }),
        collections.memberships.findOne({ orgId: workspace.orgId, userId: caller.user._id }),
        collections.workspaceMembers.findOne({ workspaceId: workspace._id, userId: caller.user._id }),
      ]);
      // a workspace of a deleted organization gives nobody anything, whatever its sweep has reached (0099)
      if (!orgMembership || !org) return { rules: [], role: null, orgAdmin: false };
      // the organization's two-step rule holds in its workspaces too
      if (!options.leaving && !meetsMfaPolicy(org, caller.holder)) throw mfaRequired(org.slug);
      const role = (wsMembership?.role as WorkspaceRole | undefined) ?? null;
      const orgRole = await findRole(collections, { _id: workspace.orgId }, orgMembership.role);
      if (orgRole?.permissions.includes('workspaces:manage')) {
        return { rules: rulesOfWorkspaceRole('owner', workspace._id), role, orgAdmin: true };
      }
      return { rules: role ? rulesOfWorkspaceRole(role, workspace._id) : [], role, orgAdmin: false };
    }
    case 'org_api_key': {
      const { key } = caller;
      const admin =
        key.orgId === workspace.orgId && !key.projectId && key.permissions.includes('workspaces:manage');
      return {
        rules: admin ? rulesOfWorkspaceRole('owner', workspace._id) : [],
        role: null,
        orgAdmin: admin,
      };
    }
    case 'workspace_api_key': {
      const { key } = caller;
      return {
        rules: key.workspaceId === workspace._id ? (key.rules as Rule[]) : [],
        role: null,
        orgAdmin: false,
      };
    }
  }
}

export async function workspaceAccess(
  collections: AuthCollections,
  caller: Caller,
  workspaceId: string,
  options: { leaving?: boolean } = {},
): Promise<WorkspaceAccess> {
  const workspace = await collections.workspaces.findOne({ _id: workspaceId });
  if (!workspace)
    throw new NotFound(`Workspace ${workspaceId} does not exist`, { error: 'WorkspaceNotFound' });
  const { rules, role, orgAdmin } = await workspaceRules(collections, caller, workspace, options);
  const ability = createMongoAbility(rules);
  const can = (action: string, subjectName: string, fields?: Record<string, unknown>) =>
    ability.can(action, workspaceSubject(subjectName, workspace._id, fields));
  return {
    workspace,
    ability,
    role,
    orgAdmin,
    can,
    require(action, subjectName, fields) {
      if (!can(action, subjectName, fields)) {
        throw new Forbidden(`Not allowed to ${action} ${subjectName} in workspace ${workspace._id}`, {
          error: 'MissingWorkspacePermission',
          details: { action, subject: subjectName, workspaceId: workspace._id },
        });
      }
    },
  };
}

/** A key's rule as stored: actions as an array, conditions set by the service (spec 2.7). */
export const storedRule = (
  action: string | string[],
  subjectName: string,
  workspaceId: string,
): ApiKeyRule => ({
  action: Array.isArray(action) ? [...new Set(action)] : [action],
  subject: subjectName,
  conditions: scopeConditions(subjectName, workspaceId),
});
