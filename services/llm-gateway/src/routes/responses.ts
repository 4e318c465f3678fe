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
 * unless `store: false`, and `previous_response_id` continues a stored one (decision 0108).
 */
export function mountResponses(router: Router, ctx: GatewayContext, responses: ResponseStore): void {
  router.post('/v1/responses', async (req, res) => {
    const raw = jsonBody(req) ?? {};
    refuseUnsupported(raw);
    const body = parseInput(ResponsesRequestSchema, raw) as Json;
    const who = ownershipOf(req);
    const input = inputItems(body.input);
    // the chain is read (404, 400 over its bounds) before any quota is taken or provider called
    const chain =
      typeof body.previous_response_id === 'string'
        ? await responses.chain(who, body.previous_response_id, jsonBytes(input))
        : null;
    const { chat, echo } = toChatRequest(body, chain?.items);
    const keep = echo.store ? { responses, who, input, link: chain?.link ?? null } : null;
    return runCompletion(ctx, req, res, chat, responsesWire(ctx, echo, keep));
  });
}

/** Whose the request's responses are: its organization, and its user or organization API key. */
export function ownershipOf(req: Request): Ownership {
  const { principal, orgSlug } = authorizeInference(req);
  return { orgSlug, owner: ownerOf(principal) };
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

function responsesWire(ctx: GatewayContext, echo: ResponseEcho, keep: Keeping | null): CompletionWire {
  const id = newId('resp');
  const createdAt = seconds(ctx);
  const base = (model: string): ResponseBase => ({ id, createdAt, model, echo });
  return {
    // the usage event's contract (v1) names no `responses` endpoint, and llm-quota refuses a name it does not
    // know: the request is accounted as the chat completion it is served as (decision 0106)
    endpoint: 'chat.completions',
    async respond(res, { completion, model, usage, figures, headers }) {
      const details = (completion.usage ?? {}) as Record<string, unknown>;
      const response = fromChatCompletion(
        base(model.model_id),
        completion,
        responseUsage(usage, details, figures),
        seconds(ctx),
      );
      res.set(headers).json(await stored(ctx, keep, response));
    },
    stream: (res) => responsesStream(ctx, res, base, keep),
  };
}

/** The Responses API's named events, from `response.created` to its terminal event (no `[DONE]`). */
function responsesStream(
  ctx: GatewayContext,
  res: Response,
  base: (model: string) => ResponseBase,
  keep: Keeping | null,
): StreamSink {
  let writer: ResponsesEventWriter | null = null;
  return {
    open(model, headers) {
      startEventStream(res, headers);
      writer = new ResponsesEventWriter(base(model.model_id), (type, event) =>
        writeNamedEvent(res, type, event),
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
        writer.end(await stored(ctx, keep, response));
      }
      endNamedEventStream(res);
    },
  };
}
