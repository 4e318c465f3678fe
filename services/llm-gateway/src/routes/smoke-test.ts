import { randomUUID } from 'node:crypto';
import { envelopeOf, InvalidInput, jsonBody, parseInput, RateLimited } from '@platform/kernel';
import type { Collection, Doc, RateWindows, Store } from '@platform/store';
import type { Router } from 'express';
import { z } from 'zod';
import type { CatalogueModel } from '../catalogue/catalogue';
import { modelNotAllowed, modelNotFound } from '../inference/errors';
import { authorizeInference, type GatewayContext } from '../inference/gateway-context';
import { apiKeyIdOf, isAllowed, resolveModel } from '../inference/governance';
import { providerHeaders } from '../inference/header-policy';
import { type Pool, withResilience } from '../inference/provider-calls';
import { abortOnClose, requestIdOf } from './client-abort';
import { silentWav } from './wav-fixture';

/** smoke tests an organization may run per minute (they are not billed to its quota) */
export const SMOKE_TESTS_PER_MINUTE = 20;

export const SmokeTestRequestSchema = z
  .object({
    modelId: z.string().min(1).max(200),
    provider: z.string().min(1).max(64).optional().meta({
      description:
        'a model of several deployments: test its deployment on this provider (default: one picked as a request would be)',
    }),
  })
  .strict();

/** A smoke test as recorded (`llm_smoke_tests`); never counted as usage. */
interface SmokeTestDoc extends Doc {
  at: Date;
  orgSlug: string;
  userId: string | null;
  model_id: string;
  ok: boolean;
  latency_ms: number;
  error: string | null;
  requestId: string;
}

const TOOL = {
  type: 'function',
  function: {
    name: 'get_weather',
    description: 'The current weather of a city',
    parameters: {
      type: 'object',
      properties: { city: { type: 'string' } },
      required: ['city'],
    },
  },
};

/** What a smoke test sends for each model type, and what it reports of the answer. */
async function probe(model: CatalogueModel, call: Parameters<CatalogueModel['adapter']['chat']>[1]) {
  switch (model.type) {
    case 'embeddings': {
      const { body } = await model.adapter.embeddings({ input: 'smoke test' }, call);
      const first = (body.data as Array<{ embedding: number[] | string }> | undefined)?.[0]?.embedding;
      return { response: body, extra: { dimensions: Array.isArray(first) ? first.length : null } };
    }
    case 'completion': {
      const { body } = await model.adapter.chat(
        {
          messages: [{ role: 'user', content: 'What is the weather in Paris? Call the get_weather tool.' }],
          tools: [TOOL],
          max_tokens: 64,
        },
        call,
      );
      const choice = (
        body.choices as Array<{ message?: { tool_calls?: Array<{ function?: { name?: string } }> } }>
      )?.[0];
      const toolCalled =
        choice?.message?.tool_calls?.some((t) => t.function?.name === 'get_weather') ?? false;
      return { response: body, extra: { tool_called: toolCalled } };
    }
    case 'image_generation': {
      if (!model.adapter.images) throw unsupported(model, 'image generation');
      const { body } = await model.adapter.images({ prompt: 'a red circle', n: 1, size: '256x256' }, call);
      return { response: body, extra: { images: body.data.length } };
    }
    case 'audio_transcription': {
      if (!model.adapter.transcriptions) throw unsupported(model, 'audio transcription');
      const { body } = await model.adapter.transcriptions(
        {
          file: silentWav(1),
          filename: 'smoke.wav',
          mimeType: 'audio/wav',
          fields: { response_format: 'json' },
        },
        call,
      );
      return { response: body, extra: {} };
    }
    case 'audio_speech': {
      if (!model.adapter.speech) throw unsupported(model, 'speech');
      const answer = await model.adapter.speech({ input: 'Smoke test.', voice: 'alloy' }, call);
      let bytes = 0;
      for await (const chunk of answer.audio) bytes += chunk.length;
      return { response: { content_type: answer.contentType, bytes }, extra: {} };
    }
  }
}

/** the model reduced to its deployment on `provider` (400 when it has none there) */
function deploymentOn(model: CatalogueModel, provider: string): Pool {
  const deployment = model.pool.find((d) => d.providerName === provider);
  if (!deployment)
    throw new InvalidInput(`The model ${model.model_id} has no deployment on the provider ${provider}`, {
      details: { issues: [{ field: 'provider', message: `not a provider of ${model.model_id}` }] },
    });
  return [deployment];
}

const unsupported = (model: CatalogueModel, what: string) =>
  new InvalidInput(`The provider of ${model.model_id} has no ${what}`, {
    details: { provider: model.providerName },
  });

/**
 * `POST /v1/test {modelId, provider?}`: calls the model once through the gateway's own provider path (its
 * header policy and timeout; no retries, no failover; one deployment, `provider`'s when given) and reports
 * what happened. A failure is
 * `{ok: false, response: <error envelope>}` with status 200. Not billed to the organization's quota;
 * each run is recorded in `llm_smoke_tests`.
 */
export function mountSmokeTest(
  router: Router,
  ctx: GatewayContext,
  deps: { store: Store; limiter: RateWindows },
): void {
  const runs: Collection<SmokeTestDoc> = deps.store.collection<SmokeTestDoc>('llm_smoke_tests', [
    { fields: { at: 1 }, expireAfterSeconds: 90 * 24 * 3600 },
  ]);
  router.post('/v1/test', async (req, res) => {
    const { principal, orgSlug } = authorizeInference(req);
    const { modelId, provider } = parseInput(SmokeTestRequestSchema, jsonBody(req) ?? {});
    const settings = await ctx.orgSettings.get(orgSlug);
    const found = ctx.catalogue.get(modelId);
    if (!found) throw modelNotFound(modelId);
    const apiKeyId = apiKeyIdOf(principal);
    const { model } = resolveModel(modelId, found.type, settings, ctx.catalogue, { apiKeyId });
    // a smoke test never tests a stand-in
    if (model.model_id !== modelId)
      throw modelNotAllowed(modelId, isAllowed(modelId, settings, null) ? 'api_key' : 'org');
    const tested = provider === undefined ? model.pool : deploymentOn(model, provider);
    const window = await deps.limiter.consume(orgSlug, 1);
    if (window.consumedPoints > SMOKE_TESTS_PER_MINUTE)
      throw new RateLimited(Math.max(1, Math.ceil(window.msBeforeNext / 1000)), 'Too many smoke tests', {
        details: { limit: SMOKE_TESTS_PER_MINUTE, window: 'minute' },
      });
    const abort = abortOnClose(req, res);
    const started = performance.now();
    let answer: Record<string, unknown>;
    try {
      const { result, model: served } = await withResilience(
        [tested],
        { ...ctx.retry, maxAttempts: 1 },
        abort.signal,
        (m) => providerHeaders(m, principal, {}, requestIdOf(req)),
        (m, call) => probe(m, call),
      );
      answer = {
        ok: true,
        model: model.model_id,
        provider: served.providerName,
        ...result.extra,
        response: result.response,
      };
    } catch (err) {
      answer = { ok: false, model: model.model_id, response: envelopeOf(err, requestIdOf(req)) };
    }
    const latency = Math.round((performance.now() - started) * 100) / 100;
    const envelope = answer.ok ? null : (answer.response as { code?: string; error?: string });
    await runs.insertOne({
      _id: randomUUID(),
      at: ctx.clock.now(),
      orgSlug,
      userId: principal.user.id,
      model_id: model.model_id,
      ok: answer.ok === true,
      latency_ms: latency,
      error: envelope ? (envelope.code ?? envelope.error ?? 'error') : null,
      requestId: requestIdOf(req),
    });
    res.json({ ...answer, latency_ms: latency });
  });
}
