import { jsonBody, parseInput } from '@platform/kernel';
import type { Response, Router } from 'express';
import type { GatewayContext } from '../inference/gateway-context';
import {
  fromChatCompletion,
  newId,
  type ResponseBase,
  ResponsesEventWriter,
  responseUsage,
} from '../inference/responses-answer';
import { type ResponseEcho, refuseUnsupported, toChatRequest } from '../inference/responses-request';
import { type CompletionWire, runCompletion, type StreamSink } from './completion-flow';
import { ResponsesRequestSchema } from './schemas';
import { endNamedEventStream, startEventStream, writeNamedEvent } from './sse';

/**
 * `POST /v1/responses`: OpenAI's Responses API, stateless, translated to the gateway's chat path, so governance,
 * quotas, the stream's budget cut, failover and accounting are chat's own (decision 0106).
 */
export function mountResponses(router: Router, ctx: GatewayContext): void {
  router.post('/v1/responses', (req, res) => {
    const raw = jsonBody(req) ?? {};
    refuseUnsupported(raw);
    const { chat, echo } = toChatRequest(parseInput(ResponsesRequestSchema, raw));
    return runCompletion(ctx, req, res, chat, responsesWire(ctx, echo));
  });
}

const seconds = (ctx: GatewayContext) => Math.floor(ctx.clock.now().getTime() / 1000);

function responsesWire(ctx: GatewayContext, echo: ResponseEcho): CompletionWire {
  const id = newId('resp');
  const createdAt = seconds(ctx);
  const base = (model: string): ResponseBase => ({ id, createdAt, model, echo });
  return {
    // the usage event's contract (v1) names no `responses` endpoint, and llm-quota refuses a name it does not
    // know: the request is accounted as the chat completion it is served as (decision 0106)
    endpoint: 'chat.completions',
    respond(res, { completion, model, usage, figures, headers }) {
      const details = (completion.usage ?? {}) as Record<string, unknown>;
      res
        .set(headers)
        .json(
          fromChatCompletion(
            base(model.model_id),
            completion,
            responseUsage(usage, details, figures),
            seconds(ctx),
          ),
        );
    },
    stream: (res) => responsesStream(ctx, res, base),
  };
}

/** The Responses API's named events, from `response.created` to its terminal event (no `[DONE]`). */
function responsesStream(
  ctx: GatewayContext,
  res: Response,
  base: (model: string) => ResponseBase,
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
    close({ outcome, error, usage, usageDetails, figures }) {
      const answered = responseUsage(usage, usageDetails, figures);
      if (error) writer?.fail(error, answered);
      else if (outcome === 'success') writer?.complete(answered, seconds(ctx));
      endNamedEventStream(res);
    },
  };
}
