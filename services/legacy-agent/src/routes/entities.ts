import { jsonBody, parseInput } from '@platform/kernel';
import type { Router } from 'express';
import type { LegacyDomain } from '../domain';
import type { EntityDoc } from '../persistence/collections';
import { bearerToken } from './credentials';
import { answerList } from './lists';
import { entityBody, entityPatchBody } from './schemas';

/** Spec 4.3 entities (2.10), authenticated by the developer token. */
export function mountEntityRoutes(router: Router, { assistants, entities }: LegacyDomain): void {
  router.get('/v1/entities', async (req, res) => {
    const assistant = await assistants.byDeveloperToken(bearerToken(req));
    const list = {
      all: () => entities.all(assistant),
      page: (limit: number, after?: string) => entities.page(assistant, limit, after),
    };
    await answerList(req, res, list, (doc) => entities.view(doc));
  });

  router.post('/v1/entities', async (req, res) => {
    const assistant = await assistants.byDeveloperToken(bearerToken(req));
    res.json(entities.view(await entities.create(assistant, parseInput(entityBody, jsonBody(req)))));
  });

  router.get('/v1/entities/:id', async (req, res) => {
    const assistant = await assistants.byDeveloperToken(bearerToken(req));
    res.json(entities.view(await entities.get(assistant, String(req.params.id))));
  });

  /** Fields present in the body replace the stored ones; the result must be a complete, valid entity. */
  router.post('/v1/entities/:id', async (req, res) => {
    const assistant = await assistants.byDeveloperToken(bearerToken(req));
    const id = String(req.params.id);
    await entities.get(assistant, id);
    const patch = parseInput(entityPatchBody, jsonBody(req) ?? {});
    // merged with the entity as it stands when written (again if another update went in meanwhile); what the 400 names
    // may be stored and not sent (values stored before a rule refused them)
    const merge = (current: EntityDoc) =>
      parseInput(
        entityBody,
        {
          name: current.name,
          automaticallyExtensible: current.automaticallyExtensible,
          useSynonyms: current.useSynonyms,
          data: current.data,
          ...patch,
        },
        'entity (the stored one with the fields sent)',
      );
    res.json(entities.view(await entities.update(assistant, id, merge)));
  });

  router.delete('/v1/entities/:id', async (req, res) => {
    const assistant = await assistants.byDeveloperToken(bearerToken(req));
    res.json(await entities.remove(assistant, String(req.params.id)));
  });
}
