import { jsonBody, parseInput } from '@platform/kernel';
import type { Request, Router } from 'express';
import { z } from 'zod';
import { invalidBody } from '../inference/errors';
import { inputItemIssues } from '../inference/responses-request';
import type { ConversationStore } from '../stored-responses/conversation-store';
import { inputItems } from '../stored-responses/input-items';
import { jsonBytes } from '../stored-responses/response-store';
import { ownershipOf } from './responses';
import { ItemIdSchema } from './schemas';
import { InputItemsQuerySchema } from './stored-responses';

type Json = Record<string, unknown>;

/** OpenAI's bounds: 16 pairs, keys of 64 characters, values of 512. */
const MetadataSchema = z
  .record(z.string().max(64), z.string().max(512))
  .refine((m) => Object.keys(m).length <= 16, { message: 'at most 16 pairs' })
  .meta({ description: 'at most 16 pairs; keys of at most 64 characters, values of at most 512' });

/** An input item of the Responses API: its members are checked by the translation (`inputItemIssues`). */
const ItemSchema = z.looseObject({
  type: z.string().min(1).optional(),
  role: z.string().min(1).optional(),
  id: ItemIdSchema.optional(),
});

/** OpenAI's bound: "You may add up to 20 items at a time". */
const MAX_ITEMS_AT_ONCE = 20;
const Items = z.array(ItemSchema).max(MAX_ITEMS_AT_ONCE, `at most ${MAX_ITEMS_AT_ONCE} items at a time`);

export const ConversationCreateSchema = z.strictObject({
  items: Items.nullable()
    .optional()
    .meta({ description: 'the first items (messages, function calls and their outputs), at most 20' }),
  metadata: MetadataSchema.nullable().optional(),
});

export const ConversationUpdateSchema = z.strictObject({
  metadata: MetadataSchema.nullable().meta({ description: 'replaces the metadata; null empties it' }),
});

export const ConversationItemsCreateSchema = z.strictObject({
  items: Items.min(1, 'at least one item'),
});

export const ConversationItemQuerySchema = z.object({
  include: z.unknown().optional().meta({
    description:
      "accepted and not needed: items are answered as stored, a reasoning item's encrypted_content included (0114)",
  }),
});

/** The cursor list of conversation items (OpenAI's `ConversationItemList`). */
const itemList = (data: Json[], hasMore: boolean): Json => ({
  object: 'list',
  data,
  first_id: (data[0]?.id as string | undefined) ?? null,
  last_id: (data.at(-1)?.id as string | undefined) ?? null,
  has_more: hasMore,
});

/**
 * Input items checked as a later turn will send them (400 INVALID_BODY naming each), then given their ids and
 * statuses. `earlier` are the conversation's items: a `function_call_output` must answer a call among them or
 * before it.
 */
function checkedItems(items: unknown[], earlier: readonly Json[] = []): Json[] {
  const issues = inputItemIssues(items, 'items', earlier);
  if (issues.length > 0)
    throw invalidBody(`Invalid items: ${issues.map((i) => `${i.field} ${i.message}`).join('; ')}`, issues);
  return inputItems(items);
}

const answersACall = (items: unknown[]) =>
  items.some((item) => (item as Json).type === 'function_call_output');

const param = (req: Request, name: 'id' | 'itemId'): string => req.params[name] as string;

/**
 * OpenAI's Conversations API (decision 0110): a conversation holds items that `POST /v1/responses` with
 * `conversation` sends before its input, and to which it adds the turn. A conversation is its maker's: anyone
 * else gets the 404 of an unknown id. Not billed: no provider is called.
 */
export function mountConversations(router: Router, conversations: ConversationStore): void {
  router.post('/v1/conversations', async (req, res) => {
    const who = ownershipOf(req);
    const body = parseInput(ConversationCreateSchema, jsonBody(req) ?? {});
    const items = checkedItems(body.items ?? []);
    res.json(await conversations.create(who, body.metadata ?? {}, items));
  });

  router.get('/v1/conversations/:id', async (req, res) => {
    res.json(await conversations.get(ownershipOf(req), param(req, 'id')));
  });

  router.post('/v1/conversations/:id', async (req, res) => {
    const who = ownershipOf(req);
    const body = parseInput(ConversationUpdateSchema, jsonBody(req) ?? {});
    res.json(await conversations.update(who, param(req, 'id'), body.metadata ?? {}));
  });

  router.delete('/v1/conversations/:id', async (req, res) => {
    const id = param(req, 'id');
    await conversations.delete(ownershipOf(req), id);
    res.json({ id, object: 'conversation.deleted', deleted: true });
  });

  router.post('/v1/conversations/:id/items', async (req, res) => {
    const who = ownershipOf(req);
    const id = param(req, 'id');
    parseInput(ConversationItemQuerySchema, req.query, 'query');
    const body = parseInput(ConversationItemsCreateSchema, jsonBody(req) ?? {});
    // a function call's output is checked against the calls already made: only then is the conversation read
    const earlier = answersACall(body.items)
      ? await conversations.history(who, id, { count: body.items.length, bytes: jsonBytes(body.items) })
      : [];
    const added = await conversations.add(who, id, checkedItems(body.items, earlier));
    res.json(itemList(added, false));
  });

  router.get('/v1/conversations/:id/items', async (req, res) => {
    const who = ownershipOf(req);
    const query = parseInput(InputItemsQuerySchema, req.query, 'query');
    const page = await conversations.list(who, param(req, 'id'), query);
    res.json(itemList(page.data, page.has_more));
  });

  router.get('/v1/conversations/:id/items/:itemId', async (req, res) => {
    const who = ownershipOf(req);
    parseInput(ConversationItemQuerySchema, req.query, 'query');
    res.json(await conversations.item(who, param(req, 'id'), param(req, 'itemId')));
  });

  router.delete('/v1/conversations/:id/items/:itemId', async (req, res) => {
    res.json(await conversations.deleteItem(ownershipOf(req), param(req, 'id'), param(req, 'itemId')));
  });
}
