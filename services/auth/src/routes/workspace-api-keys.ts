import {
  type ApiKeyRule,
  canonicalWorkspaceSubject,
  WORKSPACE_RULE_ACTIONS,
  WORKSPACE_RULE_SUBJECT_PLURALS,
  WORKSPACE_RULE_SUBJECTS,
} from '@platform/contracts';
import { Forbidden, jsonBody, NotFound, parseInput } from '@platform/kernel';
import type { Router } from 'express';
import { z } from 'zod';
import type { AuthContext } from '../context';
import type { WorkspaceApiKeyDoc } from '../data/collections';
import { boundByItsOwnRights, loadCaller, requireNoApplication, requireUser } from '../domain/caller';
import { workspaceExists } from '../domain/liveness';
import { apiKeyRemovalTime, revokedNow } from '../domain/removal-times';
import { newId, newWorkspaceApiKey, sha256Hex } from '../domain/secrets';
import { storedRule, type WorkspaceAccess, workspaceAccess } from '../domain/workspace-access';
import { checkExpiry, IsoDateTime, iso, Name } from './common';

const Action = z.enum(WORKSPACE_RULE_ACTIONS);

// Strict like every body (docs/spec-decisions.md): a CASL member such as `inverted` or `fields`, dropped, would grant
// what the client meant to deny or narrow.
export const WorkspaceKeyRule = z
  .strictObject({
    action: z.union([Action, z.array(Action).min(1).max(WORKSPACE_RULE_ACTIONS.length)]),
    subject: z
      .enum([...WORKSPACE_RULE_SUBJECTS, ...Object.keys(WORKSPACE_RULE_SUBJECT_PLURALS)])
      .transform((name) => canonicalWorkspaceSubject(name)!)
      .meta({ description: 'singular or plural (`pages`, `workspaces`, ...); stored and answered singular' }),
    conditions: z
      .never({ error: 'conditions are set by the service (they scope the rule to the workspace)' })
      .optional(),
  })
  .meta({ description: 'one permission rule: action(s) on a subject of the workspace' });

export const CreateWorkspaceKeyBody = z
  .strictObject({
    name: Name,
    rules: z.array(WorkspaceKeyRule).min(1).max(50),
    expiresAt: IsoDateTime.nullable()
      .default(null)
      .meta({ description: 'optional expiry; null never expires' }),
  })
  .meta({ description: 'POST /v2/workspaces/:id/security/apikeys (spec 2.7)' });

/** A stored rule: `action` is always a list, `conditions` scope it to the workspace (spec 2.7). */
export const StoredWorkspaceKeyRuleSchema = z
  .looseObject({
    action: z.array(z.string()),
    subject: z.string(),
    conditions: z.record(z.string(), z.unknown()).meta({
      description: 'set by the service: `{id}` for the workspace itself, `{workspaceId}` inside it',
    }),
  })
  .meta({ id: 'WorkspaceApiKeyRule' });

/** A workspace API key as listed (spec 2.7 without the secret). */
export const WorkspaceApiKeySchema = z
  .looseObject({
    _id: z.string(),
    name: z.string(),
    rules: z.array(StoredWorkspaceKeyRuleSchema),
    subjectId: z.string().meta({ description: 'the workspace id' }),
    subjectType: z.literal('workspaces'),
    createdBy: z.string(),
    createdAt: z.iso.datetime(),
    expiresAt: z.iso.datetime().nullable(),
  })
  .meta({ id: 'WorkspaceApiKey' });

/** 201 of POST /v2/workspaces/:id/security/apikeys (spec 2.7): the only time the key is shown. */
export const CreatedWorkspaceApiKeySchema = WorkspaceApiKeySchema.extend({
  apiKey: z.string().meta({ description: 'sent as `x-platform-api-key`' }),
}).meta({ id: 'CreatedWorkspaceApiKey' });

const keyView = (k: WorkspaceApiKeyDoc) => ({
  _id: k._id,
  name: k.name,
  rules: k.rules,
  subjectId: k.workspaceId,
  subjectType: 'workspaces' as const,
  createdBy: k.createdBy,
  createdAt: iso(k.createdAt),
  expiresAt: iso(k.expiresAt),
});

/** 403 `PermissionEscalation` listing each action of `rules` the caller may not take itself. */
function requireWithin(access: WorkspaceAccess, rules: ApiKeyRule[], message: string): void {
  const beyond = rules.flatMap((r) =>
    r.action.filter((a) => !access.can(a, r.subject)).map((a) => ({ action: a, subject: r.subject })),
  );
  if (beyond.length)
    throw new Forbidden(message, { error: 'PermissionEscalation', details: { rules: beyond } });
}

/** Workspace API keys (spec 2.7): explicit rules scoped to the workspace, enforced with CASL. */
export function mountWorkspaceApiKeyRoutes(router: Router, c: AuthContext): void {
  const caller = (req: Parameters<typeof loadCaller>[2]) => loadCaller(c.collections, c.clock, req);

  router.post('/v2/workspaces/:id/security/apikeys', async (req, res) => {
    const user = requireNoApplication(requireUser(await caller(req)), c.config);
    const access = await workspaceAccess(c.collections, user, String(req.params.id));
    access.require('create', 'apikey');
    const body = parseInput(CreateWorkspaceKeyBody, jsonBody(req));
    const now = c.clock.now();
    const expiresAt = checkExpiry('expiresAt', body.expiresAt, now);
    const rules = body.rules.map((r) => storedRule(r.action, r.subject, access.workspace._id));
    // A key never holds more than its creator: an admin cannot mint a key that deletes the workspace.
    requireWithin(access, rules, 'A key may not hold rights its creator does not hold');
    const apiKey = newWorkspaceApiKey();
    const removeAt = apiKeyRemovalTime(c.config, { expiresAt, revokedAt: null });
    const doc: WorkspaceApiKeyDoc = {
      _id: newId(),
      workspaceId: access.workspace._id,
      orgId: access.workspace.orgId,
      name: body.name,
      keyHash: sha256Hex(apiKey),
      rules,
      createdBy: user.user._id,
      createdAt: now,
      expiresAt,
      revokedAt: null,
      ...(removeAt && { removeAt }),
    };
    await c.collections.workspaceApiKeys.insertOne(doc);
    // the workspace (or its organization) was deleted (decision 0099), or its creator lost the role that gave these
    // rights, while this ran: no key outlives it, nor holds what its creator may no longer give
    try {
      if (!(await workspaceExists(c, doc.workspaceId)))
        throw new NotFound(`Workspace ${doc.workspaceId} does not exist`, { error: 'WorkspaceNotFound' });
      const still = await workspaceAccess(c.collections, user, doc.workspaceId);
      still.require('create', 'apikey');
      requireWithin(still, rules, 'A key may not hold rights its creator does not hold');
    } catch (err) {
      await c.collections.workspaceApiKeys.updateOne({ _id: doc._id }, { $set: revokedNow(c) });
      throw err;
    }
    res.status(201).json({ apiKey, ...keyView(doc) });
  });

  router.get('/v2/workspaces/:id/security/apikeys', async (req, res) => {
    const access = await workspaceAccess(c.collections, await caller(req), String(req.params.id));
    access.require('read', 'apikey');
    const keys = await c.collections.workspaceApiKeys.find(
      { workspaceId: access.workspace._id, revokedAt: null },
      { sort: { createdAt: -1 } },
    );
    res.json(keys.map(keyView));
  });

  router.delete('/v2/workspaces/:id/security/apikeys/:keyId', async (req, res) => {
    const who = await caller(req);
    const access = await workspaceAccess(c.collections, who, String(req.params.id));
    access.require('delete', 'apikey');
    const id = String(req.params.keyId);
    if (boundByItsOwnRights(who, c.config)) {
      const target = await c.collections.workspaceApiKeys.findOne({
        _id: id,
        workspaceId: access.workspace._id,
        revokedAt: null,
      });
      if (target)
        requireWithin(
          access,
          target.rules,
          'A credential may not revoke a key holding rights it does not hold',
        );
    }
    const revoked = await c.collections.workspaceApiKeys.findOneAndUpdate(
      { _id: id, workspaceId: access.workspace._id, revokedAt: null },
      { $set: revokedNow(c) },
    );
    if (!revoked)
      throw new NotFound(`No API key ${id} in workspace ${access.workspace._id}`, {
        error: 'ApiKeyNotFound',
      });
    await c.events.credentialRevoked('workspace_api_key', revoked._id, revoked.keyHash);
    res.status(204).end();
  });
}
