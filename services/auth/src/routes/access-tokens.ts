import { Forbidden, jsonBody, parseInput } from '@platform/kernel';
import type { Router } from 'express';
import { z } from 'zod';
import type { AuthContext } from '../context';
import type { AccessTokenDoc } from '../data/collections';
import { createAccessToken, revokeAccessToken } from '../domain/access-tokens';
import { loadCaller, requireNoApplication, requireSession, requireUser } from '../domain/caller';
import { IsoDateTime, iso, Name } from './common';

export const CreateAccessTokenBody = z
  .strictObject({
    name: Name,
    expiresAt: IsoDateTime.meta({ description: 'ISO 8601 date-time in the future' }),
  })
  .meta({ description: 'POST /v2/user/accessTokens (spec 2.6)' });

/** 201 of POST /v2/user/accessTokens (spec 2.6): the only time the token is shown. */
export const CreatedAccessTokenSchema = z
  .looseObject({
    name: z.string(),
    expiresAt: z.iso.datetime(),
    userId: z.string(),
    token: z.string().regex(/^at:/).meta({ description: 'opaque, `at:` prefix; cannot be recovered later' }),
    _id: z.string(),
  })
  .meta({ id: 'UserAccessToken', description: 'User access token (spec 2.6)' });

/** An item of GET /v2/user/accessTokens: the record without its secret. */
export const AccessTokenSummarySchema = z
  .looseObject({
    _id: z.string(),
    name: z.string(),
    userId: z.string(),
    expiresAt: z.iso.datetime(),
    createdAt: z.iso.datetime(),
  })
  .meta({ id: 'UserAccessTokenSummary' });

const listed = (t: AccessTokenDoc) => ({
  _id: t._id,
  name: t.name,
  userId: t.userId,
  expiresAt: iso(t.expiresAt),
  createdAt: iso(t.createdAt),
});

/** User access tokens (spec 2.6, 4.2): shown once, stored as sha256 only. */
export function mountAccessTokenRoutes(router: Router, c: AuthContext): void {
  router.post('/v2/user/accessTokens', async (req, res) => {
    const caller = requireNoApplication(
      requireSession(await loadCaller(c.collections, c.clock, req)),
      c.config,
    );
    const body = parseInput(CreateAccessTokenBody, jsonBody(req));
    const { doc, token } = await createAccessToken(c, caller.holder, body.name, body.expiresAt);
    res
      .status(201)
      .json({ name: doc.name, expiresAt: iso(doc.expiresAt), userId: doc.userId, token, _id: doc._id });
  });

  router.get('/v2/user/accessTokens', async (req, res) => {
    const caller = requireSession(await loadCaller(c.collections, c.clock, req));
    const tokens = await c.collections.accessTokens.find(
      { userId: caller.user._id, revokedAt: null },
      { sort: { createdAt: -1 } },
    );
    res.json(tokens.map(listed));
  });

  router.delete('/v2/user/accessTokens/:id', async (req, res) => {
    const caller = requireUser(await loadCaller(c.collections, c.clock, req));
    const id = String(req.params.id);
    // An access token may revoke itself (clean-up by automation), never its siblings.
    if (caller.via === 'access_token' && caller.credentialId !== id) {
      throw new Forbidden('An access token may revoke only itself; use a session to revoke others');
    }
    await revokeAccessToken(c, caller.user._id, id);
    res.status(204).end();
  });
}
