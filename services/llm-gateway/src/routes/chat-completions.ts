import { jsonBody, parseInput } from '@platform/kernel';
import type { Response, Router } from 'express';
import type { CatalogueModel } from '../catalogue/catalogue';
import type { GatewayContext } from '../inference/gateway-context';
import type { ChatChunk, ChatRequest } from '../inference/provider-port';
import { requestIdOf } from './client-abort';
import {
  type Answered,
  type CompletionWire,
  runCompletion,
  type StreamEnd,
  type StreamSink,
} from './completion-flow';
import { ChatRequestSchema } from './schemas';
import { endEventStream, startEventStream, writeEvent } from './sse';

type ChatBody = ChatRequest & { stream_options?: { include_usage?: boolean } | null };

/** `POST /v1/chat/completions`: OpenAI's chat completions, plain or streamed, on the catalogue's providers. */
export function mountChatCompletions(router: Router, ctx: GatewayContext): void {
  router.post('/v1/chat/completions', (req, res) => {
    const body = parseInput(ChatRequestSchema, jsonBody(req) ?? {}) as ChatBody;
    return runCompletion(ctx, req, res, body, new ChatWire(ctx, body.stream_options?.include_usage === true));
  });
}

// Classes rather than object literals of arrow functions: the hot path makes one per request, and a literal's
// named closures cost a `__name` call each under tsx (keepNames).

/** Chat completions as they are: the provider's answer and chunks, with the catalogue model and the gateway's usage. */
class ChatWire implements CompletionWire {
  readonly endpoint = 'chat.completions';

  constructor(
    private readonly ctx: GatewayContext,
    private readonly wantsUsage: boolean,
  ) {}

  respond(res: Response, { completion, model, usage, figures, headers }: Answered): void {
    res.set(headers).json({
      ...completion,
      model: model.model_id,
      usage: {
        ...(completion.usage ?? {}),
        ...usage,
        cost: figures.cost,
        duration_ms: figures.durationMs,
        carbon: figures.carbon,
      },
    });
  }

  stream(res: Response): StreamSink {
    return new ChatStream(this.ctx, res, this.wantsUsage);
  }
}

/**
 * Server-sent chunks ending with `data: [DONE]`; a cut stream's error envelope comes as one more chunk before
 * it, and the usage chunk (when the client asked for one) after a full answer.
 */
class ChatStream implements StreamSink {
  private modelId = '';
  /** the usage chunk is one more chunk of the same completion: its id, created and fingerprint */
  private last: ChatChunk | undefined;

  constructor(
    private readonly ctx: GatewayContext,
    private readonly res: Response,
    private readonly wantsUsage: boolean,
  ) {}

  open(model: CatalogueModel, headers: Record<string, string>): void {
    this.modelId = model.model_id;
    startEventStream(this.res, headers);
  }

  chunk(chunk: ChatChunk): void {
    this.last = chunk;
    writeEvent(this.res, {
      ...chunk,
      model: this.modelId,
      usage: this.wantsUsage ? (chunk.usage ?? null) : undefined,
    });
  }

  close({ outcome, error, usage, usageDetails, figures }: StreamEnd): void {
    const { res, last } = this;
    if (error) writeEvent(res, { error });
    if (this.wantsUsage && outcome === 'success') {
      writeEvent(res, {
        id: last?.id ?? `chatcmpl-${requestIdOf(res.req)}`,
        object: 'chat.completion.chunk',
        created: last?.created ?? Math.floor(this.ctx.clock.now().getTime() / 1000),
        model: this.modelId,
        ...(last?.system_fingerprint ? { system_fingerprint: last.system_fingerprint } : {}),
        choices: [],
        usage: {
          ...usageDetails,
          ...usage,
          cost: figures.cost,
          duration_ms: figures.durationMs,
          carbon: figures.carbon,
        },
      });
    }
    endEventStream(res);
  }
}
