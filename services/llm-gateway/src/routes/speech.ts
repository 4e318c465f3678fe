import { jsonBody, parseInput, writeWithBackpressure } from '@platform/kernel';
import type { Response, Router } from 'express';
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
import { toAnswer } from '../inference/provider-calls';
import { abortOnClose, requestIdOf } from './client-abort';
import { noMediaEndpoint } from './images';
import { mediaFigures } from './media-figures';
import { callPrepared } from './prepared-call';

const SPEECH_FORMATS = ['mp3', 'opus', 'aac', 'flac', 'wav', 'pcm'] as const;

/** OpenAI's content type for each `response_format` */
export const SPEECH_CONTENT_TYPES: Record<(typeof SPEECH_FORMATS)[number], string> = {
  mp3: 'audio/mpeg',
  opus: 'audio/opus',
  aac: 'audio/aac',
  flac: 'audio/flac',
  wav: 'audio/wav',
  pcm: 'audio/pcm',
};

/** OpenAI's limit on `input` and `instructions`, in characters (Unicode code points, as JSON Schema counts) */
const SPEECH_MAX_CHARACTERS = 4096;

const characters = (text: string): number => {
  let n = 0;
  for (const _ of text) n++;
  return n;
};

const speechText = (min: number) =>
  z
    .string()
    .min(min)
    .refine((text) => characters(text) <= SPEECH_MAX_CHARACTERS, {
      message: `at most ${SPEECH_MAX_CHARACTERS} characters`,
    })
    .meta({ maxLength: SPEECH_MAX_CHARACTERS });

export const SpeechRequestSchema = z.looseObject({
  model: z.string().max(200).optional(),
  input: speechText(1),
  voice: z.union([z.string().min(1).max(200), z.looseObject({ id: z.string().min(1).max(200) })]),
  instructions: speechText(0).optional(),
  response_format: z.enum(SPEECH_FORMATS).optional(),
  speed: z.number().min(0.25).max(4).optional(),
  stream_format: z.enum(['audio', 'sse']).optional(),
});

/**
 * The answer's content type: the provider's when it names audio (the mock answers WAV whatever is asked), else
 * OpenAI's for the format asked. No other type of the provider's is passed on: a `text/html` would have the
 * platform's origin serve the provider's markup to the caller's browser.
 */
function speechContentType(provider: string, body: z.infer<typeof SpeechRequestSchema>): string {
  if (body.stream_format === 'sse') return 'text/event-stream';
  const audio = /^\s*(audio\/[\w.+-]+)\s*(;|$)/i.exec(provider)?.[1];
  return audio?.toLowerCase() ?? SPEECH_CONTENT_TYPES[body.response_format ?? 'mp3'];
}

/** Writes the audio as it arrives: nothing is held but a chunk the client is slower to take than the provider. */
async function forward(audio: AsyncIterable<Uint8Array>, res: Response): Promise<void> {
  for await (const chunk of audio) {
    if (!(await writeWithBackpressure(res, chunk))) return; // ends the iteration: the provider call is cancelled
  }
  res.end();
}

/**
 * `POST /v1/audio/speech` (OpenAI's text to speech, to a model of type `audio_speech`): governance and quotas as
 * chat, `input` and `instructions` counted as prompt tokens; priced per million characters of `input`
 * (`pricing.per_million_characters`). The provider's audio is forwarded as it arrives; a client that leaves
 * cancels the provider call. Once the provider has answered, the input is charged whatever happens to the rest.
 */
export function mountSpeech(router: Router, ctx: GatewayContext): void {
  router.post('/v1/audio/speech', async (req, res) => {
    const body = parseInput(SpeechRequestSchema, jsonBody(req) ?? {});
    const promptTokens = countText(body.input) + countText(body.instructions ?? '');
    const prepared = await prepareInference(ctx, req, 'audio_speech', body.model, promptTokens, (m) => {
      if (!m.adapter.speech) throw noMediaEndpoint(m, 'speech');
    });
    const abort = abortOnClose(req, res);
    const { model: _m, ...rest } = body;
    const input = characters(body.input);
    const priceOf = (model: CatalogueModel) =>
      (input / 1_000_000) * (model.pricing.per_million_characters ?? 0);
    /** the model whose provider answered: from then on the request costs its input */
    let served: CatalogueModel | null = null;
    let outcome: Outcome = 'success';
    try {
      const { result, model } = await callPrepared(
        ctx,
        req,
        prepared,
        abort.signal,
        (m, call) => m.adapter.speech!(rest, call),
        'first_chunk',
      );
      served = model;
      res.status(200).set({
        'content-type': speechContentType(result.contentType, body),
        'x-content-type-options': 'nosniff',
        'cache-control': 'no-store',
        'x-accel-buffering': 'no',
        'x-platform-characters': String(input),
        'x-platform-cost': String(mediaFigures(prepared, priceOf(model)).cost),
        ...modelChoiceHeaders(prepared, model),
      });
      await forward(result.audio, res);
      if (abort.signal.aborted) outcome = 'client_cancelled';
    } catch (err) {
      outcome = abort.signal.aborted ? 'client_cancelled' : 'provider_error';
      if (outcome === 'client_cancelled') return; // nobody to answer
      // after the first bytes the answer cannot become an error: the kernel cuts it, and the client sees it cut
      throw served ? toAnswer(err, served, served.timeout_ms ?? ctx.retry.defaultTimeoutMs) : err;
    } finally {
      const model = served ?? failedOn(prepared);
      const usage = served
        ? { prompt_tokens: promptTokens, completion_tokens: 0, total_tokens: promptTokens }
        : zeroUsage();
      void account(
        ctx,
        { ...prepared, model },
        {
          model,
          usage,
          usageSource: 'tokenizer',
          outcome,
          endpoint: 'audio',
          stream: body.stream_format === 'sse',
          requestId: requestIdOf(req),
        },
        mediaFigures(prepared, served ? priceOf(served) : 0),
      );
    }
  });
}
