import { InvalidInput, parseInput } from '@platform/kernel';
import type { Router } from 'express';
import { z } from 'zod';
import type { ResponseStore } from '../stored-responses/response-store';
import { ownershipOf } from './responses';

export const ResponseRetrieveQuerySchema = z.object({
  stream: z
    .enum(['true', 'false'])
    .optional()
    .meta({ description: '`true` is refused: a stored response is answered whole, never streamed again' }),
  include: z.unknown().optional().meta({
    description:
      "accepted and not needed: items are answered as stored, a reasoning item's encrypted_content included (0114)",
  }),
  include_obfuscation: z.string().optional().meta({ description: 'accepted; no stream is answered' }),
  starting_after: z.string().optional().meta({ description: 'accepted; no stream is answered' }),
});

export const InputItemsQuerySchema = z.object({
  limit: z.coerce.number().int().min(1).max(100).default(20).meta({ description: '1 to 100' }),
  order: z
    .enum(['asc', 'desc'])
    .default('desc')
    .meta({ description: '`desc` (the default, as OpenAI): the last item first' }),
  after: z.string().min(1).optional().meta({ description: 'an item id: the items after it, in `order`' }),
  include: z.unknown().optional().meta({
    description:
      "accepted and not needed: items are answered as stored, a reasoning item's encrypted_content included (0114)",
  }),
});

/**
 * The stored responses (decision 0108): `GET /v1/responses/{id}` (the Response object as it was answered),
 * `DELETE /v1/responses/{id}` and `GET /v1/responses/{id}/input_items` (OpenAI's cursor list). A response is its
 * maker's: anyone else, in its organization or not, gets the 404 of an unknown id. Not billed.
 */
export function mountStoredResponses(router: Router, responses: ResponseStore): void {
  router.get('/v1/responses/:id', async (req, res) => {
    const who = ownershipOf(req);
    const query = parseInput(ResponseRetrieveQuerySchema, req.query, 'query');
    if (query.stream === 'true')
      throw new InvalidInput('A stored response is answered whole: stream=true is not supported', {
        code: 'INVALID_BODY',
        details: { issues: [{ field: 'stream', message: 'is not supported' }] },
      });
    res.json(await responses.response(who, req.params.id));
  });

  router.delete('/v1/responses/:id', async (req, res) => {
    const who = ownershipOf(req);
    await responses.delete(who, req.params.id);
    res.json({ id: req.params.id, object: 'response', deleted: true });
  });

  router.get('/v1/responses/:id/input_items', async (req, res) => {
    const who = ownershipOf(req);
    const query = parseInput(InputItemsQuerySchema, req.query, 'query');
    const items = await responses.inputItems(who, req.params.id);
    if (query.order === 'desc') items.reverse();
    let start = 0;
    if (query.after !== undefined) {
      const at = items.findIndex((item) => item.id === query.after);
      if (at < 0)
        throw new InvalidInput(`No input item ${query.after} in this response`, {
          code: 'INVALID_BODY',
          details: { issues: [{ field: 'after', message: 'is not an input item of this response' }] },
        });
      start = at + 1;
    }
    const data = items.slice(start, start + query.limit);
    res.json({
      object: 'list',
      data,
      first_id: (data[0]?.id as string | undefined) ?? null,
      last_id: (data.at(-1)?.id as string | undefined) ?? null,
      has_more: start + data.length < items.length,
    });
  });
}
