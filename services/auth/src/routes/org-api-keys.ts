import { ORG_API_KEY_PATTERN } from '@platform/contracts';
import { jsonBody, NotFound, parseInput } from '@platform/kernel';
import type { Router } from 'express';
import { z } from 'zod';
import type { AuthContext } from '../context';
import type { OrgApiKeyDoc } from '../data/collections';
import { boundByItsOwnRights, loadCaller, requireNoApplication, requireUser } from '../domain/caller';
import { orgExists } from '../domain/liveness';
import { orgAccess } from '../domain/org-access';
import { orgNotFound } from '../domain/org-deletion';
import { apiKeyRemovalTime, revokedNow } from '../domain/removal-times';
import { newId, newOrgApiKey, sha256Hex } from '../domain/secrets';
import { checkExpiry, IsoDateTime, iso, Name } from './common';
import { PermissionList, ScopeList } from './roles';

/** How a request names a project: `/v2/orgs/:orgSlug/projects/:projectId/...` (docs/spec-decisions.md). */
export const PROJECT_ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_-]{0,99}$/;

export const CreateOrgApiKeyBody = z
  .strictObject({
    name: Name,
    permissions: PermissionList.meta({
      description: 'permission names the key holds; at most the creator’s own',
    }),
    scopes: ScopeList.default([]),
    projectId: z
      .string()
      .regex(PROJECT_ID_PATTERN, 'letters, digits, _ and -, up to 100 characters')
      .nullable()
      .default(null)
      .meta({ description: 'restricts the key to one project; it is refused everywhere else' }),
    expiresAt: IsoDateTime.nullable()
      .default(null)
      .meta({ description: 'optional expiry; null never expires' }),
  })
  .meta({ description: 'POST /v2/orgs/:orgSlug/apikeys' });

/** An organization API key as listed: never its secret. */
export const OrgApiKeySchema = z
  .looseObject({
    _id: z.string(),
    name: z.string(),
    orgSlug: z.string(),
    permissions: z.array(z.string()),
    scopes: z.array(z.string()),
    projectId: z.string().nullable(),
    createdBy: z.string(),
    createdAt: z.iso.datetime(),
    expiresAt: z.iso.datetime().nullable(),
  })
  .meta({ id: 'OrgApiKey' });

/** 201 of POST /v2/orgs/:orgSlug/apikeys: the only time the key is shown. */
export const CreatedOrgApiKeySchema = OrgApiKeySchema.extend({
  apiKey: z
    .string()
    .regex(ORG_API_KEY_PATTERN)
    .meta({ description: '`iak_{orgSlug}_{uuid}`, sent as `x-platform-api-key`' }),
}).meta({ id: 'CreatedOrgApiKey' });

const keyView = (k: OrgApiKeyDoc) => ({
  _id: k._id,
  name: k.name,
  orgSlug: k.orgSlug,
  permissions: k.permissions,
  scopes: k.scopes,
  projectId: k.projectId,
  createdBy: k.createdBy,
  createdAt: iso(k.createdAt),
  expiresAt: iso(k.expiresAt),
});

/** Organization API keys `iak_{orgSlug}_{uuid}` (spec 2.7, 5.1): no user identity, stored as sha256 only. */
export function mountOrgApiKeyRoutes(router: Router, c: AuthContext): void {
  const caller = (req: Parameters<typeof loadCaller>[2]) => loadCaller(c.collections, c.clock, req);

  router.post('/v2/orgs/:orgSlug/apikeys', async (req, res) => {
    const who = await caller(req);
    // Keys are minted by people, so every key traces back to a user.
    const user = requireNoApplication(requireUser(who), c.config);
    const access = await orgAccess(c.collections, user, String(req.params.orgSlug));
    access.require('apikeys:manage');
    const body = parseInput(CreateOrgApiKeyBody, jsonBody(req));
    const now = c.clock.now();
    const expiresAt = checkExpiry('expiresAt', body.expiresAt, now);
    access.requireHeld(body.permissions, 'A key may not hold permissions its creator does not hold');
    const apiKey = newOrgApiKey(access.org.slug);
    const removeAt = apiKeyRemovalTime(c.config, { expiresAt, revokedAt: null });
    const doc: OrgApiKeyDoc = {
      _id: newId(),
      orgId: access.org._id,
      orgSlug: access.org.slug,
      name: body.name,
      keyHash: sha256Hex(apiKey),
      permissions: body.permissions,
      scopes: body.scopes,
      projectId: body.projectId,
      createdBy: user.user._id,
      createdAt: now,
      expiresAt,
      revokedAt: null,
      ...(removeAt && { removeAt }),
    };
    await c.collections.orgApiKeys.insertOne(doc);
    // the organization was deleted (decision 0099), or its creator removed from it or given a role without these rights,
    // while this ran: no key outlives it, nor holds what its creator may no longer give
    try {
      if (!(await orgExists(c, doc.orgId))) throw orgNotFound(doc.orgSlug, true);
      const still = await orgAccess(c.collections, user, doc.orgSlug);
      still.require('apikeys:manage');
      still.requireHeld(doc.permissions, 'A key may not hold permissions its creator does not hold');
    } catch (err) {
      await c.collections.orgApiKeys.updateOne({ _id: doc._id }, { $set: revokedNow(c) });
      throw err;
    }
    res.status(201).json({ ...keyView(doc), apiKey });
  });

  router.get('/v2/orgs/:orgSlug/apikeys', async (req, res) => {
    const access = await orgAccess(c.collections, await caller(req), String(req.params.orgSlug));
    access.require('apikeys:read');
    const keys = await c.collections.orgApiKeys.find(
      { orgId: access.org._id, revokedAt: null },
      { sort: { createdAt: -1 } },
    );
    res.json(keys.map(keyView));
  });

  router.delete('/v2/orgs/:orgSlug/apikeys/:id', async (req, res) => {
    const access = await orgAccess(c.collections, await caller(req), String(req.params.orgSlug));
    access.require('apikeys:manage');
    const id = String(req.params.id);
    if (boundByItsOwnRights(access.caller, c.config)) {
      const target = await c.collections.orgApiKeys.findOne({
        _id: id,
        orgId: access.org._id,
        revokedAt: null,
      });
      if (target)
        access.requireHeld(
          target.permissions,
          'A credential may not revoke a key holding permissions it does not hold',
        );
    }
    const revoked = await c.collections.orgApiKeys.findOneAndUpdate(
      { _id: id, orgId: access.org._id, revokedAt: null },
      { $set: revokedNow(c) },
    );
    if (!revoked) throw new NotFound(`No API key ${id} in ${access.org.slug}`, { error: 'ApiKeyNotFound' });
    await c.events.credentialRevoked('org_api_key', revoked._id, revoked.keyHash);
    res.status(204).end();
  });
}
