import { ORG_SLUG_PATTERN } from '@platform/contracts';
import {
  Conflict,
  Forbidden,
  InvalidInput,
  jsonBody,
  NotFound,
  parseInput,
  Unauthenticated,
} from '@platform/kernel';
import { DuplicateKeyError } from '@platform/store';
import type { Router } from 'express';
import { z } from 'zod';
import type { AuthContext } from '../context';
import type { MembershipDoc, OrgDoc, WorkspaceMemberDoc } from '../data/collections';
import { loadCaller, requireUser } from '../domain/caller';
import { orgExists, putBackUnlessGone, userIsLive, workspaceExists } from '../domain/liveness';
import { type OrgAccess, orgAccess, requireOwner } from '../domain/org-access';
import { deleteOrganization, orgNotFound } from '../domain/org-deletion';
import { findRole } from '../domain/roles';
import { newId } from '../domain/secrets';
import { displayName, iso } from './common';

const OrgName = displayName(200);

export const CreateOrgBody = z
  .strictObject({
    slug: z
      .string()
      .regex(ORG_SLUG_PATTERN, 'lowercase letters, digits and dashes, 2-63 characters, no dash at either end')
      // the gateway reads `orgSlug=all` as every organization (GET /v1/models)
      .refine((slug) => slug !== 'all', 'reserved: "all" names every organization'),
    name: OrgName,
  })
  .meta({ description: 'POST /v2/orgs' });

export const RenameOrgBody = z
  .strictObject({ name: OrgName })
  .meta({ description: 'PATCH /v2/orgs/:orgSlug: a new name (the slug never changes)' });

export const AddMemberBody = z
  .strictObject({
    userId: z.string().min(1).max(200),
    role: z.string().min(1).max(40),
  })
  .meta({ description: 'POST /v2/orgs/:orgSlug/members: adds a member or changes their role' });

export const OrgSchema = z
  .looseObject({
    id: z.string(),
    slug: z.string(),
    name: z.string(),
    createdAt: z.iso.datetime(),
    role: z.string().nullable().meta({ description: "the caller's role; null for an organization API key" }),
  })
  .meta({ id: 'Organization' });

/** GET /v2/orgs/:orgSlug: the organization with the caller's grant in it. */
export const OrgDetailSchema = OrgSchema.extend({
  permissions: z.array(z.string()).meta({ description: "the caller's permissions in the organization" }),
  settings: z.record(z.string(), z.unknown()),
  subscription: z.record(z.string(), z.unknown()).nullable(),
}).meta({ id: 'OrganizationDetail' });

export const OrgMemberSchema = z
  .looseObject({ userId: z.string(), role: z.string(), joinedAt: z.iso.datetime() })
  .meta({ id: 'OrganizationMember' });

const orgView = (org: OrgDoc, role: string | null) => ({
  id: org._id,
  slug: org.slug,
  name: org.name,
  createdAt: iso(org.createdAt),
  role,
});

const memberView = (m: MembershipDoc) => ({ userId: m.userId, role: m.role, joinedAt: iso(m.createdAt) });

/** A deleted organization's slug is never given again (decision 0099). */
const slugRetired = (slug: string) =>
  new Conflict(`Organization slug ${slug} belonged to a deleted organization and cannot be used again`, {
    error: 'OrgSlugTaken',
    details: { slug, reason: 'deleted' },
  });

const orgDetail = (access: OrgAccess) => ({
  ...orgView(access.org, access.membership?.role ?? null),
  permissions: access.role.permissions,
  settings: access.org.settings,
  subscription: access.org.subscription,
});

/** Organizations and their members. */
export function mountOrgRoutes(router: Router, c: AuthContext): void {
  const caller = (req: Parameters<typeof loadCaller>[2]) => loadCaller(c.collections, c.clock, req);
  const retired = async (slug: string) => (await c.collections.orgTombstones.findOne({ _id: slug })) !== null;

  const orgLimit = c.config.ORGANIZATIONS_PER_USER_LIMIT;
  const orgsCreatedBy = (userId: string) => c.collections.orgs.count({ createdBy: userId });
  const tooManyOrgs = () =>
    new Conflict(`At most ${orgLimit} organizations per user`, {
      error: 'TooManyOrganizations',
      details: { limit: orgLimit },
    });

  router.post('/v2/orgs', async (req, res) => {
    const user = requireUser(await caller(req));
    const body = parseInput(CreateOrgBody, jsonBody(req));
    if (await retired(body.slug)) throw slugRetired(body.slug);
    // ORGANIZATIONS_PER_USER_LIMIT counts the organizations a user made that still exist
    if ((await orgsCreatedBy(user.user._id)) >= orgLimit) throw tooManyOrgs();
    const now = c.clock.now();
    const org: OrgDoc = {
      _id: newId(),
      slug: body.slug,
      name: body.name,
      createdAt: now,
      createdBy: user.user._id,
      settings: {},
      subscription: null,
    };
    try {
      await c.collections.orgs.insertOne(org);
    } catch (err) {
      if (err instanceof DuplicateKeyError) {
        throw new Conflict(`Organization slug ${body.slug} is taken`, {
          error: 'OrgSlugTaken',
          details: { slug: body.slug },
        });
      }
      throw err;
    }
    // Deleting an organization reserves its slug before its document goes: a slug taken here after that finds the
    // reservation now, and gives the slug back.
    if (await retired(body.slug)) {
      await c.collections.orgs.deleteOne({ _id: org._id });
      throw slugRetired(body.slug);
    }
    // counted again with this one stored: of creations racing past the first count, those over the limit go back
    if ((await orgsCreatedBy(user.user._id)) > orgLimit) {
      await c.collections.orgs.deleteOne({ _id: org._id });
      throw tooManyOrgs();
    }
    const ownerId = newId();
    try {
      await c.collections.memberships.insertOne({
        _id: ownerId,
        orgId: org._id,
        orgSlug: org.slug,
        userId: user.user._id,
        role: 'owner',
        createdAt: now,
      });
    } catch (err) {
      await c.collections.orgs.deleteOne({ _id: org._id });
      throw err;
    }
    // its owner's account was deleted meanwhile: an organization nobody can reach is not left behind
    if (!(await userIsLive(c, user.user._id))) {
      await c.collections.memberships.deleteOne({ _id: ownerId });
      await c.collections.orgs.deleteOne({ _id: org._id });
      throw new Unauthenticated();
    }
    await c.events.membershipChanged(org.slug, user.user._id);
    res.status(201).json(orgView(org, 'owner'));
  });

  router.get('/v2/orgs', async (req, res) => {
    const user = requireUser(await caller(req));
    const memberships = await c.collections.memberships.find({ userId: user.user._id });
    const orgs = memberships.length
      ? await c.collections.orgs.find(
          { _id: { $in: memberships.map((m) => m.orgId) } },
          { sort: { slug: 1 } },
        )
      : [];
    const roleOf = new Map(memberships.map((m) => [m.orgId, m.role]));
    res.json(orgs.map((o) => orgView(o, roleOf.get(o._id) ?? null)));
  });

  router.get('/v2/orgs/:orgSlug', async (req, res) => {
    const access = await orgAccess(c.collections, await caller(req), String(req.params.orgSlug));
    res.json(orgDetail(access));
  });

  router.patch('/v2/orgs/:orgSlug', async (req, res) => {
    const access = await orgAccess(c.collections, await caller(req), String(req.params.orgSlug));
    requireOwner(access, 'rename it');
    const { name } = parseInput(RenameOrgBody, jsonBody(req));
    const renamed = await c.collections.orgs.findOneAndUpdate({ _id: access.org._id }, { $set: { name } });
    if (!renamed) throw orgNotFound(access.org.slug, true);
    // principals carry the organization's name (`session.org.name`): every member's cached one is stale
    await c.events.membershipChanged(renamed.slug);
    res.json(orgDetail({ ...access, org: renamed }));
  });

  router.delete('/v2/orgs/:orgSlug', async (req, res) => {
    const access = await orgAccess(c.collections, await caller(req), String(req.params.orgSlug));
    requireOwner(access, 'delete it');
    if (!(await deleteOrganization(c, access.org, access.membership!.userId))) {
      throw orgNotFound(access.org.slug, true);
    }
    res.status(204).end();
  });

  router.get('/v2/orgs/:orgSlug/members', async (req, res) => {
    const access = await orgAccess(c.collections, await caller(req), String(req.params.orgSlug));
    access.require('members:read');
    const members = await c.collections.memberships.find(
      { orgId: access.org._id },
      { sort: { createdAt: 1 } },
    );
    res.json(members.map(memberView));
  });

  router.post('/v2/orgs/:orgSlug/members', async (req, res) => {
    const access = await orgAccess(c.collections, await caller(req), String(req.params.orgSlug));
    access.require('members:manage');
    const body = parseInput(AddMemberBody, jsonBody(req));
    const role = await findRole(c.collections, access.org, body.role);
    if (!role)
      throw new InvalidInput(`Unknown role ${body.role}`, {
        details: { issues: [{ field: 'role', message: 'unknown role' }] },
      });
    const target = await c.collections.users.findOne({ _id: body.userId });
    if (!target || target.deletedAt) throw new NotFound(`No user ${body.userId}`, { error: 'UserNotFound' });
    const existing = await c.collections.memberships.findOne({ orgId: access.org._id, userId: body.userId });
    // Ownership is granted and taken only by owners.
    if ((body.role === 'owner' || existing?.role === 'owner') && access.membership?.role !== 'owner') {
      throw new Forbidden('Only an owner may grant or change the owner role', { error: 'OwnerOnly' });
    }
    // Nobody hands out a role holding more than they hold (not even to themselves).
    access.requireHeld(role.permissions, `Role ${role.slug} holds permissions the caller does not hold`);
    if (existing) {
      if (existing.role !== body.role) {
        await mayChangeMember(c, access, existing);
        // Only the role checked above is changed: one given or taken meanwhile (an owner made) is not overwritten.
        const { matched } = await c.collections.memberships.updateOne(
          { _id: existing._id, role: existing.role },
          { $set: { role: body.role } },
        );
        if (matched === 0) throw memberChangedConcurrently();
        // the role was another for a moment: announced, so that no edge keeps a principal resolved meanwhile
        const undo = async () => {
          await c.collections.memberships.updateOne({ _id: existing._id }, { $set: { role: existing.role } });
          await c.events.membershipChanged(access.org.slug, body.userId);
        };
        await keepAnOwner(c, access.org, existing, undo);
        await keepARole(c, access.org, body.role, undo);
        await c.events.membershipChanged(access.org.slug, body.userId);
      }
      res.status(200).json(memberView({ ...existing, role: body.role }));
      return;
    }
    const membership: MembershipDoc = {
      _id: newId(),
      orgId: access.org._id,
      orgSlug: access.org.slug,
      userId: body.userId,
      role: body.role,
      createdAt: c.clock.now(),
    };
    try {
      await c.collections.memberships.insertOne(membership);
    } catch (err) {
      if (err instanceof DuplicateKeyError)
        throw new Conflict('This user was added concurrently', { error: 'AlreadyAMember' });
      throw err;
    }
    // the membership existed for a moment: its removal is announced, so that no edge keeps a principal holding it
    const undo = async () => {
      await c.collections.memberships.deleteOne({ _id: membership._id });
      await c.events.membershipChanged(access.org.slug, body.userId);
    };
    await keepARole(c, access.org, body.role, undo);
    // the organization, or the user's account, was deleted while this ran: the membership goes too
    const [orgThere, userThere] = await Promise.all([
      orgExists(c, access.org._id),
      userIsLive(c, body.userId),
    ]);
    if (!orgThere || !userThere) {
      await undo();
      throw orgThere
        ? new NotFound(`No user ${body.userId}`, { error: 'UserNotFound' })
        : orgNotFound(access.org.slug, true);
    }
    await c.events.membershipChanged(access.org.slug, body.userId);
    res.status(201).json(memberView(membership));
  });

  router.delete('/v2/orgs/:orgSlug/members/:userId', async (req, res) => {
    const who = await caller(req);
    const userId = String(req.params.userId);
    const access = await orgAccess(c.collections, who, String(req.params.orgSlug), {
      leaving: who.kind === 'user' && who.user._id === userId,
    });
    const leaving = access.membership?.userId === userId;
    // Any member may leave; removing someone else needs members:manage.
    if (!leaving) access.require('members:manage');
    const existing = await c.collections.memberships.findOne({ orgId: access.org._id, userId });
    if (!existing)
      throw new NotFound(`${userId} is not a member of ${access.org.slug}`, { error: 'MemberNotFound' });
    if (existing.role === 'owner' && !leaving && access.membership?.role !== 'owner') {
      throw new Forbidden('Only an owner may remove an owner', { error: 'OwnerOnly' });
    }
    if (!leaving) await mayChangeMember(c, access, existing);
    // Only with the role checked above: one given meanwhile (an owner made) is not taken away unchecked.
    if ((await c.collections.memberships.deleteOne({ _id: existing._id, role: existing.role })) === 0) {
      if (await c.collections.memberships.findOne({ _id: existing._id })) throw memberChangedConcurrently();
      res.status(204).end(); // removed meanwhile
      return;
    }
    // a membership given again meanwhile stands for the one put back; none is put back in an organization or for
    // an account deleted meanwhile (its sweep may be done already: decision 0099). Announced like any change: an
    // edge may have resolved the member's principal while the membership was gone.
    const putBack = async () => {
      await putBackUnlessGone(
        c.collections.memberships,
        existing,
        async () => (await orgExists(c, existing.orgId)) && (await userIsLive(c, userId)),
      );
      await c.events.membershipChanged(access.org.slug, userId);
    };
    await keepAnOwner(c, access.org, existing, putBack);
    await leaveWorkspaces(c, access.org, userId, putBack);
    await c.events.membershipChanged(access.org.slug, userId);
    res.status(204).end();
  });
}

/**
 * The last owner cannot be removed or demoted. Checked after the write and undone when it left no
 * owner, so two owners demoting each other at once cannot both succeed.
 */
async function keepAnOwner(c: AuthContext, org: OrgDoc, before: MembershipDoc, undo: () => Promise<unknown>) {
  if (before.role !== 'owner') return;
  const owners = await c.collections.memberships.count({ orgId: org._id, role: 'owner' });
  if (owners > 0) return;
  await undo();
  throw new Conflict(`The last owner of ${org.slug} cannot be removed or demoted`, { error: 'LastOwner' });
}

/**
 * Takes a removed member's workspace roles in the organization (theirs only: one read however many workspaces it
 * has). No workspace is left with members and no owner, as none is when its last owner leaves it or deletes their
 * account: checked after the writes; then the roles and the membership (`undo`) are put back, and 409 `LastOwner`
 * names the workspaces to hand over or delete first. A workspace the member was alone in stays, for the
 * organization's administrators.
 */
async function leaveWorkspaces(c: AuthContext, org: OrgDoc, userId: string, undo: () => Promise<unknown>) {
  const col = c.collections;
  const removed: WorkspaceMemberDoc[] = [];
  const blockers: Array<{ id: string; name: string; members: number }> = [];
  for (const wm of await col.workspaceMembers.find({ orgId: org._id, userId })) {
    if ((await col.workspaceMembers.deleteOne({ _id: wm._id })) === 0) continue;
    removed.push(wm);
    if (wm.role !== 'owner') continue;
    if ((await col.workspaceMembers.count({ workspaceId: wm.workspaceId, role: 'owner' })) > 0) continue;
    const members = await col.workspaceMembers.count({ workspaceId: wm.workspaceId });
    const ws = members > 0 ? await col.workspaces.findOne({ _id: wm.workspaceId }) : null;
    if (ws) blockers.push({ id: ws._id, name: ws.name, members: members + 1 });
  }
  if (blockers.length === 0) return;
  for (const wm of removed)
    await putBackUnlessGone(
      col.workspaceMembers,
      wm,
      async () => (await workspaceExists(c, wm.workspaceId)) && (await userIsLive(c, userId)),
    );
  await undo();
  const names = blockers.map((w) => `workspace "${w.name}" (${w.id})`);
  const them = names.length > 1 ? 'them' : 'it';
  throw new Conflict(
    `${userId} is the last owner of ${names.join(', ')}, which other people belong to: make another member an owner of ${them}, or delete ${them}, first`,
    { error: 'LastOwner', details: { workspaces: blockers } },
  );
}

/** 409 to a member change whose role was changed after the request read it: it may try again. */
const memberChangedConcurrently = () =>
  new Conflict('This member was changed concurrently; try again', { error: 'ConcurrentUpdate' });

/**
 * A custom role deleted while it was being given (decision 0090's check after the write): the membership is taken
 * back, or a member would hold a role that names nothing, and a namesake made later would give them its permissions.
 * `DELETE` of a role looks again after its own write, for the other order.
 */
async function keepARole(c: AuthContext, org: OrgDoc, slug: string, undo: () => Promise<unknown>) {
  if (await findRole(c.collections, org, slug)) return;
  await undo();
  throw new Conflict(`Role ${slug} was deleted meanwhile`, { error: 'RoleNotFound' });
}

/**
 * Nobody demotes or removes a member who holds more than they hold: a `members:manage` holder could otherwise
 * strip a fuller administrator of their role (owners have their own rule: only owners touch owners).
 */
async function mayChangeMember(c: AuthContext, access: OrgAccess, member: MembershipDoc): Promise<void> {
  const role = await findRole(c.collections, access.org, member.role);
  access.requireHeld(role?.permissions ?? [], `${member.userId} holds permissions the caller does not hold`);
}
