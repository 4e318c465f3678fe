import { InvalidInput, jsonBody, parseInput } from '@platform/kernel';
import type { Router } from 'express';
import {
  account,
  accountFailure,
  figuresOf,
  type GatewayContext,
  modelChoiceHeaders,
  prepareInference,
} from '../inference/gateway-context';
import { countInputTokens } from '../inference/prompt-tokens';
import type { EmbeddingsRequest, Usage } from '../inference/provider-port';
import { abortOnClose, requestIdOf } from './client-abort';
import { callPrepared } from './prepared-call';
import { EmbeddingsRequestSchema } from './schemas';

function promptTokensOf(input: unknown): number {
  if (Array.isArray(input) && input.length > 0 && typeof input[0] === 'number') return input.length;
  if (Array.isArray(input) && input.length > 0 && Array.isArray(input[0]))
    return (input as number[][]).reduce((n, a) => n + a.length, 0);
  return countInputTokens(input);
}

/** `POST /v1/embeddings`: string or array input; `dimensions` checked against the model's list. */
export function mountEmbeddings(router: Router, ctx: GatewayContext): void {
  router.post('/v1/embeddings', async (req, res) => {
    const body = parseInput(EmbeddingsRequestSchema, jsonBody(req) ?? {});
    const promptTokens = promptTokensOf(body.input);
    const prepared = await prepareInference(ctx, req, 'embeddings', body.model, promptTokens, (model) => {
      const supported = model.supported_dimensions;
      const max = model.adapter.maxEmbeddingDimensions;
      const wanted = body.dimensions;
      if (wanted === undefined) return;
      if ((supported && !supported.includes(wanted)) || (max !== undefined && wanted > max)) {
        throw new InvalidInput(`${model.model_id} does not support ${wanted} dimensions`, {
          error: 'INVALID_DIMENSIONS',
          code: 'INVALID_DIMENSIONS',
          details: {
            dimensions: wanted,
            supported_dimensions: supported ?? null,
            ...(max === undefined ? {} : { max_dimensions: max }),
          },
        });
      }
    });
    const abort = abortOnClose(req, res);
    const { model: _m, ...rest } = body;
    try {
      const { result, model } = await callPrepared(ctx, req, prepared, abort.signal, (_m2, call) =>
        _m2.adapter.embeddings(rest as EmbeddingsRequest, call),
      );
      const usage: Usage = result.usage ?? {
        prompt_tokens: promptTokens,
        completion_tokens: 0,
        total_tokens: promptTokens,
      };
      const figures = figuresOf(ctx, prepared, model, usage);
      const headers = modelChoiceHeaders(prepared, model);
      res.set(headers).json({
        ...result.body,
        model: model.model_id,
        usage: {
          ...(result.body.usage ?? {}),
          ...usage,
          cost: figures.cost,
          duration_ms: figures.durationMs,
        },
      });
      void account(
        ctx,
        { ...prepared, model },
        {
          model,
          usage,
          usageSource: result.usage ? 'provider' : 'tokenizer',
          outcome: 'success',
          endpoint: 'embeddings',
          stream: false,
          requestId: requestIdOf(req),
        },
        figures,
      );
    } catch (err) {
      accountFailure(ctx, prepared, {
        endpoint: 'embeddings',
        stream: false,
        requestId: requestIdOf(req),
        aborted: abort.signal.aborted,
      });
      throw err;
    }
  });
}
