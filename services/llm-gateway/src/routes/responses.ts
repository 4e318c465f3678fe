import { jsonBody, parseInput } from '@platform/kernel';
import type { Request, Response, Router } from 'express';
import { authorizeInference, type GatewayContext } from '../inference/gateway-context';
import {
  fromChatCompletion,
  newId,
  type ResponseBase,
  ResponsesEventWriter,
  responseUsage,
} from '../inference/responses-answer';
import { type ResponseEcho, refuseUnsupported, toChatRequest } from '../inference/responses-request';
import { includesEncryptedReasoning } from '../inference/responses-thinking';
import { type ConversationStore, refuseRepeatedIds } from '../stored-responses/conversation-store';
import { inputItems } from '../stored-responses/input-items';
import {
  type ChainLink,
  jsonBytes,
  type Ownership,
  ownerOf,
  type ResponseStore,
} from '../stored-responses/response-store';
import { type CompletionWire, runCompletion, type StreamSink } from './completion-flow';
import { ResponsesRequestSchema } from './schemas';
import { endNamedEventStream, startEventStream, writeNamedEvent } from './sse';

type Json = Record<string, unknown>;

/**
 * `POST /v1/responses`: OpenAI's Responses API, translated to the gateway's chat path, so governance, quotas, the
 * stream's budget cut, failover and accounting are chat's own (decision 0106). A finished response is stored
 * unless `store: false`, and `previous_response_id` continues a stored one (decision 0108); a response in a
 * `conversation` comes after its items and adds its turn to it (decision 0110).
 */
export function mountResponses(
  router: Router,
  ctx: GatewayContext,
  responses: ResponseStore,
  conversations: ConversationStore,
): void {
  router.post('/v1/responses', async (req, res) => {
    const raw = jsonBody(req) ?? {};
    refuseUnsupported(raw);
    const body = parseInput(ResponsesRequestSchema, raw) as Json;
    const who = ownershipOf(req);
    const input = inputItems(body.input);
    const earlier = await earlierItems(who, body, input, responses, conversations);
    const { chat, echo } = toChatRequest(body, earlier.items, earlier.where);
    const keep = echo.store ? { responses, who, input, link: earlier.link } : null;
    const turn = earlier.conversationId ? { conversations, who, id: earlier.conversationId, input } : null;
    // Claude's signed thinking is answered when asked, and kept with what a later turn reads back (decision 0114)
    const encryptedReasoning = includesEncryptedReasoning(body.include) || keep !== null || turn !== null;
    const wire = responsesWire(ctx, echo, keep, turn, encryptedReasoning);
    return runCompletion(ctx, req, res, chat, wire);
  });
}

/** What a request comes after: a stored chain's items, or a conversation's. */
interface Earlier {
  items: Json[];
  /** how an issue names them */
  where: string;
  /** where a response continuing a chain joins it */
  link: ChainLink | null;
  conversationId: string | null;
}

/**
 * The items before `input`: those of the chain `previous_response_id` continues, or of the `conversation` (the
 * two are exclusive: `refuseUnsupported`). Read before any quota is taken or provider called: 404 when they are not
 * the caller's, 400 over their bounds, for an input item id given twice or already one of the conversation's.
 */
async function earlierItems(
  who: Ownership,
  body: Json,
  input: Json[],
  responses: ResponseStore,
  conversations: ConversationStore,
): Promise<Earlier> {
  // OpenAI's rule: an item id names one item (and `input_items` pages by it: a repeated id would loop them)
  refuseRepeatedIds('input', [], input);
  const bytes = jsonBytes(input);
  if (typeof body.previous_response_id === 'string') {
    const chain = await responses.chain(who, body.previous_response_id, bytes);
    return {
      items: chain.items,
      where: 'previous_response_id.items',
      link: chain.link,
      conversationId: null,
    };
  }
  const named = body.conversation as string | { id: string } | null | undefined;
  if (named == null) return { items: [], where: 'input', link: null, conversationId: null };
  const conversationId = typeof named === 'string' ? named : named.id;
  const items = await conversations.history(who, conversationId, { count: input.length, bytes });
  refuseRepeatedIds('input', items, input);
  return { items, where: 'conversation.items', link: null, conversationId };
}

/** Whose the request's responses are: its organization, and its user or organization API key. */
export function ownershipOf(req: Request): Ownership {
  const { principal, orgSlug } = authorizeInference(req);
  return { orgSlug, owner: ownerOf(principal) };
}

/** What a response in a conversation needs to add its turn to it. */
interface Turn {
  conversations: ConversationStore;
  who: Ownership;
  id: string;
  input: Json[];
}

/**
 * Adds a finished response's turn (its input items, then its output items) to its conversation, before it is
 * answered, so that the next turn sees it. The answer names the conversation (`conversation: {id}`), or says
 * `conversation: null` when the turn could not be added (the conversation was deleted meanwhile, the store refused
 * the write): its tokens are spent, so it is answered all the same.
 */
async function addTurn(ctx: GatewayContext, turn: Turn | null, response: Json): Promise<Json> {
  if (!turn) return response;
  const items = [...turn.input, ...((response.output as Json[] | undefined) ?? [])];
  try {
    if (await turn.conversations.appendTurn(turn.who, turn.id, items))
      return { ...response, conversation: { id: turn.id } };
    ctx.logger.warn(
      { conversationId: turn.id, responseId: response.id },
      'the conversation went before the response finished: its turn was not added',
    );
  } catch (err) {
    ctx.logger.error(
      { err, conversationId: turn.id, responseId: response.id },
      "a response's turn could not be added to its conversation: answered with conversation null",
    );
  }
  return { ...response, conversation: null };
}

/** The response objects a stream's events carry, naming the conversation it is in (the writer knows none). */
function namingConversation(turn: Turn | null, event: Json): Json {
  const response = event.response as Json | undefined;
  if (!turn || !response || 'conversation' in response) return event;
  return { ...event, response: { ...response, conversation: { id: turn.id } } };
}

/** What a response that is kept needs to be stored. */
interface Keeping {
  responses: ResponseStore;
  who: Ownership;
  input: Json[];
  link: ChainLink | null;
}

const seconds = (ctx: GatewayContext) => Math.floor(ctx.clock.now().getTime() / 1000);

/**
 * Stores a finished response before it is answered, so that the next turn finds it. A store that refuses the
 * write does not take the answer from the client (its tokens are spent): it is answered with `store: false`.
 */
async function stored(ctx: GatewayContext, keep: Keeping | null, response: Json): Promise<Json> {
  if (!keep) return response;
  try {
    await keep.responses.save(keep.who, response as Json & { id: string }, keep.input, keep.link);
    return response;
  } catch (err) {
    ctx.logger.error(
      { err, responseId: response.id },
      'a response could not be stored: answered with store false',
    );
    return { ...response, store: false };
  }
}

/** A finished response: its turn added to its conversation, then stored (both before it is answered). */
async function finished(ctx: GatewayContext, keep: Keeping | null, turn: Turn | null, response: Json) {
  return stored(ctx, keep, await addTurn(ctx, turn, response));
}

function responsesWire(
  ctx: GatewayContext,
  echo: ResponseEcho,
  keep: Keeping | null,
  turn: Turn | null,
  encryptedReasoning: boolean,
): CompletionWire {
  const id = newId('resp');
  const createdAt = seconds(ctx);
  const base = (model: string): ResponseBase => ({ id, createdAt, model, echo, encryptedReasoning });
  return {
    endpoint: 'responses',
    async respond(res, { completion, model, usage, figures, headers }) {
      const details = (completion.usage ?? {}) as Record<string, unknown>;
      const response = fromChatCompletion(
        base(model.model_id),
        completion,
        responseUsage(usage, details, figures),
        seconds(ctx),
      );
      res.set(headers).json(await finished(ctx, keep, turn, response));
    },
    stream: (res) => responsesStream(ctx, res, base, keep, turn),
  };
}

/** The Responses API's named events, from `response.created` to its terminal event (no `[DONE]`). */
function responsesStream(
  ctx: GatewayContext,
  res: Response,
  base: (model: string) => ResponseBase,
  keep: Keeping | null,
  turn: Turn | null,
): StreamSink {
  let writer: ResponsesEventWriter | null = null;
  return {
    open(model, headers) {
      startEventStream(res, headers);
      writer = new ResponsesEventWriter(base(model.model_id), (type, event) =>
        writeNamedEvent(res, type, namingConversation(turn, event)),
      );
      writer.start();
    },
    chunk(chunk) {
      writer?.chunk(chunk);
    },
    async close({ outcome, error, usage, usageDetails, figures }) {
      const answered = responseUsage(usage, usageDetails, figures);
      if (error) writer?.fail(error, answered);
      else if (outcome === 'success' && writer) {
        const response = writer.finish(answered, seconds(ctx));
        writer.end(await finished(ctx, keep, turn, response));
      }
      endNamedEventStream(res);
    },
  };
}
