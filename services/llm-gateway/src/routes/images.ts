import { InvalidInput, jsonBody, parseInput } from '@platform/kernel';
import type { Router } from 'express';
import { z } from 'zod';
import type { CatalogueModel } from '../catalogue/catalogue';
import {
  account,
  failedOn,
  type GatewayContext,
  modelChoiceHeaders,
  type Outcome,
  prepareInference,
  zeroUsage,
} from '../inference/gateway-context';
import { countText } from '../inference/prompt-tokens';
import type { Usage } from '../inference/provider-port';
import { toUsage } from '../providers/usage';
import { abortOnClose, requestIdOf } from './client-abort';
import { mediaFigures } from './media-figures';
import { callPrepared } from './prepared-call';

export const ImagesRequestSchema = z.looseObject({
  model: z.string().max(200).optional(),
  prompt: z.string().min(1).max(32_000),
  n: z.number().int().min(1).max(10).nullable().optional(),
  size: z.string().max(20).nullable().optional(),
  response_format: z.enum(['url', 'b64_json']).nullable().optional(),
  quality: z.string().max(20).optional(),
  style: z.string().max(20).optional(),
  user: z.string().optional(),
});

export const noMediaEndpoint = (model: CatalogueModel, what: string) =>
  new InvalidInput(`The provider of ${model.model_id} has no ${what} endpoint`, {
    details: { provider: model.providerName },
  });

/**
 * `POST /v1/images/generations` (OpenAI's shape, `b64_json` or `url`): governance and quotas as chat,
 * priced per image (`pricing.per_image`) and accounted like every inference request.
 */
export function mountImages(router: Router, ctx: GatewayContext): void {
  router.post('/v1/images/generations', async (req, res) => {
    const body = parseInput(ImagesRequestSchema, jsonBody(req) ?? {});
    const promptTokens = countText(body.prompt);
    const prepared = await prepareInference(ctx, req, 'image_generation', body.model, promptTokens, (m) => {
      if (!m.adapter.images) throw noMediaEndpoint(m, 'image generation');
    });
    const abort = abortOnClose(req, res);
    const { model: _m, ...rest } = body;
    const counted = { prompt_tokens: promptTokens, completion_tokens: 0, total_tokens: promptTokens };
    const stamp = (model: CatalogueModel, outcome: Outcome, usage: Usage = counted) => ({
      model,
      usage,
      usageSource: usage === counted ? ('tokenizer' as const) : ('provider' as const),
      outcome,
      endpoint: 'images' as const,
      stream: false,
      requestId: requestIdOf(req),
    });
    try {
      const { result, model } = await callPrepared(ctx, req, prepared, abort.signal, (m, call) =>
        m.adapter.images!(rest, call),
      );
      const images = result.body.data.length;
      const figures = mediaFigures(prepared, images * (model.pricing.per_image ?? 0));
      const headers = modelChoiceHeaders(prepared, model);
      // the tokens counted are the ones the answer reports: the provider's (GPT Image models report
      // input and output tokens), else the gateway's count of the prompt, in OpenAI's image usage shape
      const reported = result.body.usage as Record<string, unknown> | undefined;
      const usage = toUsage(reported) ?? counted;
      res.set(headers).json({
        ...result.body,
        model: model.model_id,
        usage: {
          ...(reported ?? {}),
          input_tokens: usage.prompt_tokens,
          output_tokens: usage.completion_tokens,
          total_tokens: usage.total_tokens,
          images,
          cost: figures.cost,
          duration_ms: figures.durationMs,
        },
      });
      void account(ctx, { ...prepared, model }, stamp(model, 'success', usage), figures);
    } catch (err) {
      const outcome: Outcome = abort.signal.aborted ? 'client_cancelled' : 'provider_error';
      void account(ctx, prepared, stamp(failedOn(prepared), outcome, zeroUsage()), mediaFigures(prepared, 0));
      throw err;
    }
  });
}
