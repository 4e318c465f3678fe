import { isPermissionName, PERMISSIONS } from '@platform/contracts';
import { Conflict, Forbidden, jsonBody, NotFound, parseInput } from '@platform/kernel';
import { DuplicateKeyError, updateWithRevision } from '@platform/store';
import type { Router } from 'express';
import { z } from 'zod';
import type { AuthContext } from '../context';
import type { RoleDoc } from '../data/collections';
import { loadCaller } from '../domain/caller';
import { orgAccess } from '../domain/org-access';
import {
  BUILT_IN_ROLES,
  isBuiltInRole,
  ROLE_SLUG_PATTERN,
  SCOPE_PATTERN,
  toRoleDefinition,
} from '../domain/roles';
import { newId } from '../domain/secrets';
import { freeText } from './common';

export const PermissionList = z
  .array(
    z.string().refine(isPermissionName, {
      message: `unknown permission; known: ${Object.keys(PERMISSIONS).join(', ')}`,
    }),
  )
  .max(100)
  .transform((list) => [...new Set(list)]);

export const ScopeList = z
  .array(z.string().regex(SCOPE_PATTERN, 'letters, digits and :._/- only, up to 100 characters'))
  .max(50)
  .transform((list) => [...new Set(list)]);

export const PutRoleBody = z
  .strictObject({
    description: freeText(500).default(''),
    permissions: PermissionList.meta({
      description: 'permission names from the catalogue, e.g. models:read',
    }),
    scopes: ScopeList.default([]),
  })
  .meta({ description: 'PUT /v2/orgs/:orgSlug/roles/:role: creates or replaces a custom role' });

export const RoleSchema = z
  .looseObject({
    slug: z.string(),
    description: z.string(),
    permissions: z.array(z.string()),
    scopes: z.array(z.string()),
    builtIn: z.boolean(),
  })
  .meta({ id: 'Role' });

/** Organization roles: built-ins (owner, member, guest) from code, custom roles as data. */
export function mountRoleRoutes(router: Router, c: AuthContext): void {
  const caller = (req: Parameters<typeof loadCaller>[2]) => loadCaller(c.collections, c.clock, req);

  router.get('/v2/orgs/:orgSlug/roles', async (req, res) => {
    const access = await orgAccess(c.collections, await caller(req), String(req.params.orgSlug));
    access.require('roles:read');
    const custom = await c.collections.roles.find({ orgId: access.org._id }, { sort: { slug: 1 } });
    res.json([...Object.values(BUILT_IN_ROLES), ...custom.map(toRoleDefinition)]);
  });

  router.put('/v2/orgs/:orgSlug/roles/:role', async (req, res) => {
    const access = await orgAccess(c.collections, await caller(req), String(req.params.orgSlug));
    access.require('roles:manage');
    const slug = String(req.params.role);
    if (isBuiltInRole(slug))
      throw new Forbidden(`The built-in role ${slug} cannot be changed`, { error: 'BuiltInRole' });
    parseInput(
      z.string().regex(ROLE_SLUG_PATTERN, 'lowercase, 2-40 characters, starting with a letter'),
      slug,
      'role',
    );
    const body = parseInput(PutRoleBody, jsonBody(req));
    // Nobody hands out more than they hold.
    access.requireHeld(body.permissions, 'A role may not grant permissions the caller does not hold');
    const now = c.clock.now();
    const fields = {
      description: body.description,
      permissions: body.permissions,
      scopes: body.scopes,
      updatedAt: now,
    };
    const { doc, existing } = await putRole(c, access.org._id, slug, fields, (stored) =>
      // ...nor takes away from a role more than they hold: its members would lose what the caller cannot give back
      access.requireHeld(stored.permissions, `Role ${slug} holds permissions the caller does not hold`),
    );
    // Members holding this role have cached principals with the old permissions.
    if (existing) await c.events.membershipChanged(access.org.slug);
    res.status(existing ? 200 : 201).json(toRoleDefinition(doc));
  });

  router.delete('/v2/orgs/:orgSlug/roles/:role', async (req, res) => {
    const access = await orgAccess(c.collections, await caller(req), String(req.params.orgSlug));
    access.require('roles:manage');
    const slug = String(req.params.role);
    if (isBuiltInRole(slug))
      throw new Forbidden(`The built-in role ${slug} cannot be deleted`, { error: 'BuiltInRole' });
    const holders = () => c.collections.memberships.count({ orgId: access.org._id, role: slug });
    const inUse = await holders();
    if (inUse > 0) throw new Conflict(`Role ${slug} is held by ${inUse} member(s)`, { error: 'RoleInUse' });
    const role = await c.collections.roles.findOne({ orgId: access.org._id, slug });
    if (!role || !(await c.collections.roles.deleteOne({ _id: role._id })))
      throw new NotFound(`No role ${slug}`, { error: 'RoleNotFound' });
    // given to someone between the count and the delete: the role comes back (the grant looks again too)
    const late = await holders();
    if (late > 0) {
      await c.collections.roles.insertOne(role).catch((err) => {
        if (!(err instanceof DuplicateKeyError)) throw err;
      });
      throw new Conflict(`Role ${slug} is held by ${late} member(s)`, { error: 'RoleInUse' });
    }
    res.status(204).end();
  });
}

/**
 * Creates custom role `slug`, or replaces it if `check` (which may throw) allows it as stored. Written only over the role
 * as checked: one replaced meanwhile (a grant another administrator made) is checked again, never undone unseen.
 */
async function putRole(
  c: AuthContext,
  orgId: string,
  slug: string,
  fields: Pick<RoleDoc, 'description' | 'permissions' | 'scopes' | 'updatedAt'>,
  check: (stored: RoleDoc) => void,
): Promise<{ doc: RoleDoc; existing: boolean }> {
  // a miss is a role made meanwhile: the next attempt replaces it, checked
  for (let attempt = 0; attempt < 3; attempt++) {
    const replaced = await updateWithRevision(c.collections.roles, { orgId, slug }, (stored) => {
      check(stored);
      return { $set: fields };
    });
    if (replaced) return { doc: replaced.after, existing: true };
    const doc: RoleDoc = { _id: newId(), orgId, slug, ...fields, createdAt: fields.updatedAt };
    try {
      await c.collections.roles.insertOne(doc);
      return { doc, existing: false };
    } catch (err) {
      if (!(err instanceof DuplicateKeyError)) throw err;
    }
  }
  throw new Conflict(`Role ${slug} was changed by other requests meanwhile; try again`, {
    error: 'ConcurrentUpdate',
    retryable: true,
  });
}
