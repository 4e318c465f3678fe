import type { RouteDoc } from '@platform/kernel';
import { z } from 'zod';
import {
  ConversationCreateSchema,
  ConversationItemQuerySchema,
  ConversationItemsCreateSchema,
  ConversationUpdateSchema,
} from './conversations';
import { storedItemListSchema, storedItemSchema } from './stored-items-openapi';
import { InputItemsQuerySchema } from './stored-responses';

/** The Conversations API's routes in the `{gateway_url}` document (decision 0110). */

const ConversationSchema = z
  .object({
    id: z.string().meta({ description: '`conv_...`' }),
    object: z.literal('conversation'),
    created_at: z.number().int().meta({ description: 'unix seconds' }),
    metadata: z.record(z.string(), z.string()).meta({ description: 'as last set; `{}` when none' }),
  })
  .meta({ id: 'Conversation', description: "OpenAI's conversation object" });

const ConversationDeletedSchema = z
  .object({ id: z.string(), object: z.literal('conversation.deleted'), deleted: z.literal(true) })
  .meta({ id: 'ConversationDeleted' });

/** An item as the conversation holds it: as it was sent or answered, with its id and status. */
const ConversationItemSchema = storedItemSchema({
  status: z.enum(['completed', 'incomplete']),
  parts: 'its parts (`input_text`, `input_image`, `output_text`, `refusal`...); a string as one text part',
  other: 'another item (`reasoning`) as it was sent or answered, with an id',
}).meta({ id: 'ConversationItem' });

const ConversationItemListSchema = storedItemListSchema(ConversationItemSchema).meta({
  id: 'ConversationItemList',
  description: "OpenAI's cursor list of a conversation's items",
});

/** The routes, with the caller's credentials and the gateway's error envelope. */
export function conversationRouteDocs(
  security: string[],
  error: (description: string) => { description: string; schema: z.ZodType },
): RouteDoc[] {
  const common = {
    400: error('INVALID_BODY (`details.issues`: a member, an item or a query parameter), NO_ORG_CONTEXT'),
    401: error('missing or invalid credentials'),
    403: error('`models:read` missing'),
    404: error(
      "CONVERSATION_NOT_FOUND: no such conversation, or not the caller's (another user's or key's, another organization's), deleted, or past its retention",
    ),
    405: error('METHOD_NOT_ALLOWED (`Allow` names the methods)'),
  };
  const withItem = {
    ...common,
    404: error('CONVERSATION_NOT_FOUND, or CONVERSATION_ITEM_NOT_FOUND: no such item in the conversation'),
  };
  const adding = {
    ...common,
    400: error(
      'INVALID_BODY (`details.issues`: a member or an item; an item id already in the conversation), NO_ORG_CONTEXT, or CONVERSATION_TOO_LONG (`details`: the limit passed)',
    ),
  };
  const doc = (route: Omit<RouteDoc, 'tags' | 'security'>): RouteDoc => ({
    ...route,
    tags: ['completions'],
    security,
  });
  return [
    doc({
      method: 'post',
      path: '/v1/conversations',
      summary: 'Creates a conversation, with its first items (at most 20)',
      description:
        "Items are those of a Responses request's `input` (messages, `function_call`, `function_call_output`), each given an id and a status. Kept `LLM_GATEWAY_CONVERSATIONS_RETENTION_DAYS` after its last change, readable by its maker alone. Not billed.",
      body: ConversationCreateSchema,
      responses: { 200: { description: 'the conversation', schema: ConversationSchema }, ...adding },
    }),
    doc({
      method: 'get',
      path: '/v1/conversations/:id',
      summary: 'A conversation',
      description: 'Not billed.',
      responses: { 200: { description: 'the conversation', schema: ConversationSchema }, ...common },
    }),
    doc({
      method: 'post',
      path: '/v1/conversations/:id',
      summary: "Replaces a conversation's metadata",
      description: 'Not billed.',
      body: ConversationUpdateSchema,
      responses: { 200: { description: 'the conversation', schema: ConversationSchema }, ...common },
    }),
    doc({
      method: 'delete',
      path: '/v1/conversations/:id',
      summary: 'Deletes a conversation and its items',
      description: 'The responses made in it stay (`GET /v1/responses/{id}`). Not billed.',
      responses: { 200: { description: 'deleted', schema: ConversationDeletedSchema }, ...common },
    }),
    doc({
      method: 'post',
      path: '/v1/conversations/:id/items',
      summary: 'Adds items to a conversation (at most 20 at a time)',
      description:
        'An item whose id is already in the conversation is refused; a `function_call_output` must answer a `function_call` of the conversation or before it. Not billed.',
      query: ConversationItemQuerySchema,
      body: ConversationItemsCreateSchema,
      responses: { 200: { description: 'the items added', schema: ConversationItemListSchema }, ...adding },
    }),
    doc({
      method: 'get',
      path: '/v1/conversations/:id/items',
      summary: "A conversation's items (OpenAI's cursor list)",
      description:
        'Oldest first with `order=asc`; `order` `desc` by default, `limit` 1 to 100 (20), `after` an item id (400 when it is none of the conversation). Not billed.',
      query: InputItemsQuerySchema,
      responses: { 200: { description: 'the items', schema: ConversationItemListSchema }, ...common },
    }),
    doc({
      method: 'get',
      path: '/v1/conversations/:id/items/:itemId',
      summary: 'One item of a conversation',
      description: 'Not billed.',
      query: ConversationItemQuerySchema,
      responses: { 200: { description: 'the item', schema: ConversationItemSchema }, ...withItem },
    }),
    doc({
      method: 'delete',
      path: '/v1/conversations/:id/items/:itemId',
      summary: 'Deletes one item of a conversation; answers the conversation',
      description: 'Not billed.',
      responses: { 200: { description: 'the conversation', schema: ConversationSchema }, ...withItem },
    }),
  ];
}
