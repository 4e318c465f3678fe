import type { Response } from 'express';
import type { CatalogueModel } from '../catalogue/catalogue';
import type { GatewayContext } from '../inference/gateway-context';
import { requestIdOf } from './client-abort';
import type {
  Answered,
  CompletionApi,
  CompletionBody,
  CompletionWire,
  FlowChunk,
  StreamEnd,
  StreamSink,
} from './completion-flow';
import { endEventStream, startEventStream, writeEvent } from './sse';

// Classes rather than object literals of arrow functions: the hot path makes one per request, and a literal's
// named closures cost a `__name` call each under tsx (keepNames).

/**
 * OpenAI's completion APIs as they are (chat completions, and the legacy text completions: decision 0115): the
 * provider's answer and chunks, with the catalogue model and the gateway's usage.
 */
export class OpenAiWire<K extends FlowChunk> implements CompletionWire<K> {
  readonly endpoint: CompletionWire['endpoint'];

  constructor(
    private readonly ctx: GatewayContext,
    private readonly api: CompletionApi<CompletionBody, K>,
    private readonly wantsUsage: boolean,
  ) {
    this.endpoint = api.endpoint;
  }

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

  stream(res: Response): StreamSink<K> {
    return new OpenAiStream(this.ctx, this.api, res, this.wantsUsage);
  }
}

/**
 * Server-sent chunks ending with `data: [DONE]`; a cut stream's error envelope comes as one more chunk before
 * it, and the usage chunk (when the client asked for one) after a full answer.
 */
class OpenAiStream<K extends FlowChunk> implements StreamSink<K> {
  private modelId = '';
  /** the usage chunk is one more chunk of the same completion: its id, created and fingerprint */
  private last: K | undefined;

  constructor(
    private readonly ctx: GatewayContext,
    private readonly api: CompletionApi<CompletionBody, K>,
    private readonly res: Response,
    private readonly wantsUsage: boolean,
  ) {}

  open(model: CatalogueModel, headers: Record<string, string>): void {
    this.modelId = model.model_id;
    startEventStream(this.res, headers);
  }

  chunk(chunk: K): void {
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
        id: last?.id ?? `${this.api.idPrefix}${requestIdOf(res.req)}`,
        object: this.api.chunkObject,
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
