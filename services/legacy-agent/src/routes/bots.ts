import { jsonBody, parseInput } from '@platform/kernel';
import type { Router } from 'express';
import type { LegacyDomain } from '../domain';
import { accountToken, bearerToken } from './credentials';
import { createBotBody, updateBotBody } from './schemas';

/**
 * Assistants. `/v2/bots` (an addition) is the account's: create, list, read, rotate tokens, delete.
 * `GET /v1/bots` (spec 4.3) answers the assistant of the developer token, with where its training stands.
 */
export function mountBotRoutes(router: Router, { accounts, assistants, retraining }: LegacyDomain): void {
  router.post('/v2/bots', async (req, res) => {
    const auth = await accounts.authenticate(accountToken(req));
    res.json(await assistants.create(auth, parseInput(createBotBody, jsonBody(req))));
  });

  router.get('/v2/bots', async (req, res) => {
    const auth = await accounts.authenticate(accountToken(req));
    res.json(await assistants.listOwned(auth));
  });

  router.get('/v2/bots/:id', async (req, res) => {
    const auth = await accounts.authenticate(accountToken(req));
    res.json(assistants.view(await assistants.getOwned(auth, String(req.params.id))));
  });

  router.delete('/v2/bots/:id', async (req, res) => {
    const auth = await accounts.authenticate(accountToken(req));
    res.json(await assistants.remove(auth, String(req.params.id)));
  });

  router.post('/v2/bots/:id/developerToken', async (req, res) => {
    const auth = await accounts.authenticate(accountToken(req));
    res.json(await assistants.rotate(auth, String(req.params.id), 'developerToken'));
  });

  router.post('/v2/bots/:id/clientToken', async (req, res) => {
    const auth = await accounts.authenticate(accountToken(req));
    res.json(await assistants.rotate(auth, String(req.params.id), 'clientToken'));
  });

  router.get('/v1/bots', async (req, res) => {
    const token = bearerToken(req);
    const assistant = await assistants.byDeveloperToken(token);
    res.json({ ...assistants.view(assistant, token), training: await retraining.status(assistant) });
  });

  // Addition: the developer token changes its assistant's name, description, photo, satisfaction option
  // and the web origins allowed to call it from a browser (lang and languages shape models: not here).
  router.patch('/v1/bots', async (req, res) => {
    const token = bearerToken(req);
    const assistant = await assistants.byDeveloperToken(token);
    const updated = await assistants.update(assistant, parseInput(updateBotBody, jsonBody(req) ?? {}));
    res.json(assistants.view(updated, token));
  });
}
