import { jsonBody, parseInput } from '@platform/kernel';
import type { Router } from 'express';
import type { LegacyDomain } from '../domain';
import { bearerToken } from './credentials';
import { answerList } from './lists';
import { intentBody } from './schemas';

/** Spec 4.3 intents, authenticated by the developer token; another assistant's intent is a 404. */
export function mountIntentRoutes(router: Router, { assistants, intents }: LegacyDomain): void {
  router.get('/v1/intents', async (req, res) => {
    const assistant = await assistants.byDeveloperToken(bearerToken(req));
    const list = {
      all: () => intents.all(assistant),
      page: (limit: number, after?: string) => intents.page(assistant, limit, after),
    };
    await answerList(req, res, list, (doc) => intents.view(doc, assistant));
  });

  router.post('/v1/intents', async (req, res) => {
    const assistant = await assistants.byDeveloperToken(bearerToken(req));
    const doc = await intents.create(assistant, parseInput(intentBody, jsonBody(req) ?? {}));
    res.json(intents.view(doc, assistant));
  });

  router.get('/v1/intents/:id', async (req, res) => {
    const assistant = await assistants.byDeveloperToken(bearerToken(req));
    res.json(intents.view(await intents.get(assistant, String(req.params.id)), assistant));
  });

  router.post('/v1/intents/:id', async (req, res) => {
    const assistant = await assistants.byDeveloperToken(bearerToken(req));
    const doc = await intents.update(
      assistant,
      String(req.params.id),
      parseInput(intentBody, jsonBody(req) ?? {}),
    );
    res.json(intents.view(doc, assistant));
  });

  router.delete('/v1/intents/:id', async (req, res) => {
    const assistant = await assistants.byDeveloperToken(bearerToken(req));
    res.json(await intents.remove(assistant, String(req.params.id)));
  });
}
