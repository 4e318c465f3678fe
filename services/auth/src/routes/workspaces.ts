import { createMongoAbility } from '@casl/ability';
import {
  Conflict,
  Forbidden,
  InvalidInput,
  jsonBody,
  NotFound,
  noOrgContext,
  parseInput,
  Unauthenticated,
} from '@platform/kernel';
import { DuplicateKeyError } from '@platform/store';
import type { RequestHandler, Router } from 'express';
import { z } from 'zod';
import type { AuthContext } from '../context';
import type { WorkspaceDoc, WorkspaceMemberDoc } from '../data/collections';
import { activeOrgOfUser } from '../domain/active-org';
import { type Caller, loadCaller } from '../domain/caller';
import { orgExists, userIsLive, workspaceExists } from '../domain/liveness';
import { meetsMfaPolicy, mfaRequired, orgAccess } from '../domain/org-access';
import { orgNotFound } from '../domain/org-deletion';
import { findRole } from '../domain/roles';
import { newId } from '../domain/secrets';
import {
  rulesOfWorkspaceRole,
  WORKSPACE_ROLES,
  type WorkspaceAccess,
  type WorkspaceRole,
  workspaceAccess,
  workspaceRules,
  workspaceSubject,
} from '../domain/workspace-access';
import { deleteWorkspaceRecords } from '../domain/workspace-deletion';
import { displayName, iso } from './common';

export const WorkspaceName = displayName(200);

export const CreateWorkspaceBody = z.strictObject({ name: WorkspaceName }).meta({
  description: 'POST /v2/workspaces: the workspace belongs to the caller’s active organization',
});
export const UpdateWorkspaceBody = z
  .strictObject({ name: WorkspaceName })
  .meta({ description: 'PATCH /v2/workspaces/:id' });
export const PutWorkspaceMemberBody = z.strictObject({ role: z.enum(WORKSPACE_ROLES) }).meta({
  description: 'PUT /v2/workspaces/:id/members/:userId: adds a member or changes their workspace role',
});

export const WorkspaceSchema = z
  .looseObject({
    id: z.string(),
    name: z.string(),
    orgSlug: z.string(),
    createdBy: z.string().meta({ description: 'a user id, or `apikey:<id>` for an organization API key' }),
    createdAt: z.iso.datetime(),
    role: z
      .enum(WORKSPACE_ROLES)
      .nullable()
      .meta({ description: "the caller's workspace role; null when access comes from the organization" }),
  })
  .meta({ id: 'Workspace' });

export const WorkspaceMemberSchema = z
  .looseObject({ userId: z.string(), role: z.enum(WORKSPACE_ROLES), joinedAt: z.iso.datetime() })
  .meta({ id: 'WorkspaceMember' });

const workspaceView = (w: WorkspaceDoc, role: string | null) => ({
  id: w._id,
  name: w.name,
  orgSlug: w.orgSlug,
  createdBy: w.createdBy,
  createdAt: iso(w.createdAt),
  role,
});

const memberView = (m: WorkspaceMemberDoc) => ({
  userId: m.userId,
  role: m.role,
  joinedAt: iso(m.createdAt),
});

/** The organization a new workspace goes to: the user's active one, or an organization key's own. */
async function activeOrgSlugOf(c: AuthContext, caller: Caller): Promise<string | null> {
  if (caller.kind === 'user') {
    return (
      (await activeOrgOfUser(c.collections, caller.user._id, caller.holder.activeOrgSlug)).active?.membership
        .orgSlug ?? null
    );
  }
  if (caller.kind === 'org_api_key') return caller.key.orgSlug;
  return null;
}

/** Workspaces (spec 4.2) with their own role-based access control, authorized with CASL. */
export function mountWorkspaceRoutes(router: Router, c: AuthContext): void {
  router.post('/v2/workspaces', createWorkspace(c));
  router.get('/v2/workspaces', listWorkspaces(c));
  router.get('/v2/workspaces/:id', getWorkspace(c));
  router.patch('/v2/workspaces/:id', renameWorkspace(c));
  router.delete('/v2/workspaces/:id', deleteWorkspace(c));
  router.get('/v2/workspaces/:id/members', listWorkspaceMembers(c));
  router.put('/v2/workspaces/:id/members/:userId', putWorkspaceMember(c));
  router.delete('/v2/workspaces/:id/members/:userId', removeWorkspaceMember(c));
}

const callerOf = (c: AuthContext, req: Parameters<typeof loadCaller>[2]) =>
  loadCaller(c.collections, c.clock, req);

/** POST /v2/workspaces: a workspace in the caller's active organization; a user creator is its owner. */
const createWorkspace =
  (c: AuthContext): RequestHandler =>
  async (req, res) => {
    const who = await callerOf(c, req);
    const body = parseInput(CreateWorkspaceBody, jsonBody(req));
    const orgSlug = await activeOrgSlugOf(c, who);
    if (!orgSlug) {
      throw noOrgContext();
    }
    const access = await orgAccess(c.collections, who, orgSlug);
    access.require('workspaces:create');
    const now = c.clock.now();
    const createdBy =
      who.kind === 'user' ? who.user._id : `apikey:${who.kind === 'org_api_key' ? who.key._id : ''}`;
    const workspace: WorkspaceDoc = {
      _id: newId(),
      name: body.name,
      orgId: access.org._id,
      orgSlug: access.org.slug,
      createdBy,
      createdAt: now,
    };
    await c.collections.workspaces.insertOne(workspace);
    if (who.kind === 'user') {
      await c.collections.workspaceMembers.insertOne({
        _id: newId(),
        workspaceId: workspace._id,
        orgId: workspace.orgId,
        userId: who.user._id,
        role: 'owner',
        createdAt: now,
      });
    }
    // the organization, or the creator's account, was deleted while this ran (decision 0099), or the creator was
    // removed from the organization (whose removal takes the roles it finds after its own write): the workspace goes
    const [orgThere, creatorThere, creatorMember] = await Promise.all([
      orgExists(c, workspace.orgId),
      who.kind === 'user' ? userIsLive(c, who.user._id) : true,
      who.kind === 'user'
        ? c.collections.memberships.findOne({ orgId: workspace.orgId, userId: who.user._id })
        : true,
    ]);
    if (!orgThere || !creatorThere || !creatorMember) {
      await deleteWorkspaceRecords(c, workspace);
      if (!orgThere) throw orgNotFound(workspace.orgSlug, true);
      if (!creatorThere) throw new Unauthenticated();
      throw new Forbidden(`Not a member of ${workspace.orgSlug}`, { error: 'NotAMember' });
    }
    res.status(201).json(workspaceView(workspace, who.kind === 'user' ? 'owner' : null));
  };

/** GET /v2/workspaces: what the caller may see in its active organization (a workspace key: its own). */
const listWorkspaces =
  (c: AuthContext): RequestHandler =>
  async (req, res) => {
    const who = await callerOf(c, req);
    if (who.kind === 'workspace_api_key') {
      const own = await c.collections.workspaces.findOne({ _id: who.key.workspaceId });
      const { rules } = own ? await workspaceRules(c.collections, who, own) : { rules: [] };
      const readable = own && createMongoAbility(rules).can('read', workspaceSubject('workspace', own._id));
      res.json(readable ? [workspaceView(own, null)] : []);
      return;
    }
    const orgSlug = await activeOrgSlugOf(c, who);
    if (!orgSlug) {
      res.json([]);
      return;
    }
    const org = await c.collections.orgs.findOne({ slug: orgSlug });
    if (!org) {
      res.json([]);
      return;
    }
    let orgAdmin = false;
    if (who.kind === 'user') {
      if (!meetsMfaPolicy(org, who.holder)) throw mfaRequired(org.slug);
      const membership = await c.collections.memberships.findOne({ orgId: org._id, userId: who.user._id });
      const role = membership ? await findRole(c.collections, org, membership.role) : null;
      orgAdmin = role?.permissions.includes('workspaces:manage') ?? false;
    } else {
      orgAdmin = !who.key.projectId && who.key.permissions.includes('workspaces:manage');
    }
    const inOrg = await c.collections.workspaces.find({ orgId: org._id }, { sort: { createdAt: 1 } });
    if (who.kind !== 'user') {
      res.json(orgAdmin ? inOrg.map((w) => workspaceView(w, null)) : []);
      return;
    }
    const mine = await c.collections.workspaceMembers.find({ userId: who.user._id, orgId: org._id });
    const roleOf = new Map(mine.map((m) => [m.workspaceId, m.role]));
    res.json(
      inOrg
        .filter((w) => orgAdmin || roleOf.has(w._id))
        .map((w) => workspaceView(w, roleOf.get(w._id) ?? null)),
    );
  };

/** GET /v2/workspaces/:id */
const getWorkspace =
  (c: AuthContext): RequestHandler =>
  async (req, res) => {
    const access = await workspaceAccess(c.collections, await callerOf(c, req), String(req.params.id));
    access.require('read', 'workspace');
    res.json(workspaceView(access.workspace, access.role));
  };

/** PATCH /v2/workspaces/:id */
const renameWorkspace =
  (c: AuthContext): RequestHandler =>
  async (req, res) => {
    const access = await workspaceAccess(c.collections, await callerOf(c, req), String(req.params.id));
    access.require('update', 'workspace');
    const body = parseInput(UpdateWorkspaceBody, jsonBody(req));
    await c.collections.workspaces.updateOne({ _id: access.workspace._id }, { $set: { name: body.name } });
    res.json(workspaceView({ ...access.workspace, name: body.name }, access.role));
  };

/** DELETE /v2/workspaces/:id: the workspace, its members, and its keys (revoked, edges told). */
const deleteWorkspace =
  (c: AuthContext): RequestHandler =>
  async (req, res) => {
    const access = await workspaceAccess(c.collections, await callerOf(c, req), String(req.params.id));
    access.require('delete', 'workspace');
    await deleteWorkspaceRecords(c, access.workspace);
    res.status(204).end();
  };

/** GET /v2/workspaces/:id/members */
const listWorkspaceMembers =
  (c: AuthContext): RequestHandler =>
  async (req, res) => {
    const access = await workspaceAccess(c.collections, await callerOf(c, req), String(req.params.id));
    access.require('read', 'member');
    const members = await c.collections.workspaceMembers.find(
      { workspaceId: access.workspace._id },
      { sort: { createdAt: 1 } },
    );
    res.json(members.map(memberView));
  };

/** PUT /v2/workspaces/:id/members/:userId: adds or re-roles a member of the organization; owners only by owners. */
const putWorkspaceMember =
  (c: AuthContext): RequestHandler =>
  async (req, res) => {
    const access = await workspaceAccess(c.collections, await callerOf(c, req), String(req.params.id));
    const userId = String(req.params.userId);
    const { role } = parseInput(PutWorkspaceMemberBody, jsonBody(req));
    // A concurrent PUT may add the member between the read and the insert: then it is a change of role.
    for (let attempt = 0; ; attempt++) {
      try {
        const { created, member } = await setWorkspaceMember(c, access, userId, role);
        res.status(created ? 201 : 200).json(memberView(member));
        return;
      } catch (err) {
        if (!(err instanceof DuplicateKeyError)) throw err;
        if (attempt > 0) throw changedConcurrently();
      }
    }
  };

/** 409 to a member change whose role was changed (or who was added) after the request read it: it may try again. */
const changedConcurrently = () =>
  new Conflict('This member was changed concurrently; try again', { error: 'ConcurrentUpdate' });

/**
 * Nobody gives, changes or takes a workspace role holding rights they do not hold, as for organization roles: a key
 * allowed to manage members makes no admin (403 `PermissionEscalation`). People who manage members hold what they give.
 */
function requireRoleWithin(access: WorkspaceAccess, role: string): void {
  const beyond = rulesOfWorkspaceRole(role, access.workspace._id).flatMap((rule) =>
    [rule.action].flat().flatMap((action) =>
      [rule.subject ?? []]
        .flat()
        .filter((subject) => !access.can(action, String(subject)))
        .map((subject) => ({ action, subject: String(subject) })),
    ),
  );
  if (beyond.length) {
    throw new Forbidden(`The ${role} role holds rights the caller does not hold`, {
      error: 'PermissionEscalation',
      details: { rules: beyond },
    });
  }
}

const notAnOrgMember = (userId: string, orgSlug: string) =>
  new InvalidInput(`${userId} is not a member of ${orgSlug}`, {
    error: 'NotAnOrgMember',
    details: { issues: [{ field: 'userId', message: 'must be a member of the workspace’s organization' }] },
  });

/** Adds `userId` to the workspace with `role`, or changes their role; DuplicateKeyError when added meanwhile. */
async function setWorkspaceMember(
  c: AuthContext,
  access: WorkspaceAccess,
  userId: string,
  role: WorkspaceRole,
): Promise<{ created: boolean; member: WorkspaceMemberDoc }> {
  const existing = await c.collections.workspaceMembers.findOne({
    workspaceId: access.workspace._id,
    userId,
  });
  access.require(existing ? 'update' : 'create', 'member', { userId, role });
  // Owners are made and unmade only by those who hold every right on the workspace.
  if ((role === 'owner' || existing?.role === 'owner') && !access.can('manage', 'all')) {
    throw new Forbidden('Only a workspace owner may grant or change the owner role', {
      error: 'OwnerOnly',
    });
  }
  requireRoleWithin(access, role);
  if (existing) requireRoleWithin(access, existing.role);
  const orgMember = await c.collections.memberships.findOne({ orgId: access.workspace.orgId, userId });
  if (!orgMember) throw notAnOrgMember(userId, access.workspace.orgSlug);
  if (existing) {
    // Only the role checked above is changed: one given or taken meanwhile (an owner made) is not overwritten.
    const { matched } = await c.collections.workspaceMembers.updateOne(
      { _id: existing._id, role: existing.role },
      { $set: { role } },
    );
    if (matched === 0) throw changedConcurrently();
    await keepAWorkspaceOwner(c, access.workspace, existing, () =>
      c.collections.workspaceMembers.updateOne({ _id: existing._id }, { $set: { role: existing.role } }),
    );
    return { created: false, member: { ...existing, role } };
  }
  const member: WorkspaceMemberDoc = {
    _id: newId(),
    workspaceId: access.workspace._id,
    orgId: access.workspace.orgId,
    userId,
    role,
    createdAt: c.clock.now(),
  };
  await c.collections.workspaceMembers.insertOne(member);
  // the workspace, or the member's account, was deleted while this ran (decision 0099), or the member left the
  // organization (whose removal takes the roles it finds after its own write): the role goes too
  const [workspaceThere, userThere, stillMember] = await Promise.all([
    workspaceExists(c, member.workspaceId),
    userIsLive(c, userId),
    c.collections.memberships.findOne({ orgId: member.orgId, userId }),
  ]);
  if (!workspaceThere || !userThere || !stillMember) {
    await c.collections.workspaceMembers.deleteOne({ _id: member._id });
    if (!workspaceThere)
      throw new NotFound(`Workspace ${member.workspaceId} does not exist`, { error: 'WorkspaceNotFound' });
    if (!userThere) throw new NotFound(`No user ${userId}`, { error: 'UserNotFound' });
    throw notAnOrgMember(userId, access.workspace.orgSlug);
  }
  return { created: true, member };
}

/** DELETE /v2/workspaces/:id/members/:userId: a member leaves or is removed; the last owner stays. */
const removeWorkspaceMember =
  (c: AuthContext): RequestHandler =>
  async (req, res) => {
    const who = await callerOf(c, req);
    const userId = String(req.params.userId);
    const access = await workspaceAccess(c.collections, who, String(req.params.id), {
      leaving: who.kind === 'user' && who.user._id === userId,
    });
    const existing = await c.collections.workspaceMembers.findOne({
      workspaceId: access.workspace._id,
      userId,
    });
    if (!existing) {
      access.require('read', 'member');
      throw new NotFound(`${userId} is not a member of workspace ${access.workspace._id}`, {
        error: 'MemberNotFound',
      });
    }
    const leaving = who.kind === 'user' && who.user._id === userId;
    if (!leaving) {
      access.require('delete', 'member', { userId, role: existing.role });
      if (existing.role === 'owner' && !access.can('manage', 'all')) {
        throw new Forbidden('Only a workspace owner may remove an owner', { error: 'OwnerOnly' });
      }
      requireRoleWithin(access, existing.role);
    }
    // Only with the role checked above: one given meanwhile (an owner made) is not taken away unchecked.
    if ((await c.collections.workspaceMembers.deleteOne({ _id: existing._id, role: existing.role })) === 0) {
      if (await c.collections.workspaceMembers.findOne({ _id: existing._id })) throw changedConcurrently();
      res.status(204).end(); // removed meanwhile
      return;
    }
    await keepAWorkspaceOwner(c, access.workspace, existing, () =>
      c.collections.workspaceMembers.insertOne(existing),
    );
    res.status(204).end();
  };

async function keepAWorkspaceOwner(
  c: AuthContext,
  workspace: WorkspaceDoc,
  before: WorkspaceMemberDoc,
  undo: () => Promise<unknown>,
) {
  if (before.role !== 'owner') return;
  const owners = await c.collections.workspaceMembers.count({ workspaceId: workspace._id, role: 'owner' });
  if (owners > 0) return;
  await undo();
  throw new Conflict(`The last owner of workspace ${workspace._id} cannot be removed or demoted`, {
    error: 'LastOwner',
  });
}
