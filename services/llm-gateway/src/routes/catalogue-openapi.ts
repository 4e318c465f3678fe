import type { RouteDoc } from '@platform/kernel';
import { z } from 'zod';
import { ModelEntryObjectSchema, ModelEntrySchema, ModelPatchSchema } from '../catalogue/model-entry';
import { ProviderBodySchema } from '../catalogue/provider-admin';
import { TRANSCRIPTION_FORMATS } from './audio';
import { ImagesRequestSchema } from './images';
import { ModelListQuerySchema } from './models';
import { SmokeTestRequestSchema } from './smoke-test';
import { SPEECH_CONTENT_TYPES, SpeechRequestSchema } from './speech';

type ErrorDoc = (description: string) => { description: string; schema: z.ZodType };

export const ModelEntryDocSchema = ModelEntrySchema.meta({
  id: 'ModelEntry',
  description: 'A catalogue model entry as stored (with `provider_config` or `deployments`, never both)',
});
/** the same entry as a request gives it (defaults not yet applied) */
const ModelEntryInputSchema = ModelEntrySchema.meta({
  id: 'ModelEntryInput',
  description:
    'A catalogue model entry, as POST and PUT take it (`enabled` defaults to true, prices to 0); exactly one of `provider_config` and `deployments` (1 to 16, weights positive, default 1)',
});

export const ModelViewSchema = ModelEntryObjectSchema.omit({ provider_config: true, deployments: true })
  .extend({
    id: z.string(),
    object: z.literal('model'),
    created: z.number().int(),
    owned_by: z
      .string()
      .meta({ description: 'the provider serving it (of a model with `deployments`, the first one)' }),
    provider_config: ModelEntryObjectSchema.shape.provider_config.meta({
      description: 'platform administrators only, for a model of one provider',
    }),
    deployments: ModelEntryObjectSchema.shape.deployments.meta({
      description: 'platform administrators only, for a model of several deployments',
    }),
  })
  .meta({ id: 'Model', description: "OpenAI's model object with the catalogue entry" });

const DefaultSchema = z
  .object({
    model_id: z.string(),
    source: z.enum(['org', 'platform']),
    name: z.string().optional(),
    downgraded_from: z.string().optional().meta({
      description: "soft_downgrade: the organization's default it does not allow, replaced by model_id",
    }),
  })
  .nullable();

const DefaultsSchema = z
  .object({
    completions: DefaultSchema,
    embeddings: z
      .object({
        model_id: z.string(),
        source: z.enum(['org', 'platform']),
        name: z.string().optional(),
        downgraded_from: z.string().optional(),
        dimensions: z.number().int().nullable(),
        supported_dimensions: z.array(z.number().int()).nullable(),
      })
      .nullable(),
    image_generation: DefaultSchema,
    audio_transcription: DefaultSchema,
    audio_speech: DefaultSchema,
  })
  .meta({ id: 'DefaultModels' });

const SmokeTestSchema = z
  .object({
    ok: z.boolean(),
    model: z.string(),
    provider: z
      .string()
      .optional()
      .meta({ description: 'the provider of the deployment tested, when it answered' }),
    latency_ms: z.number(),
    dimensions: z.number().int().nullable().optional().meta({ description: 'embeddings' }),
    tool_called: z
      .boolean()
      .optional()
      .meta({ description: 'completions: whether the model called the tool' }),
    images: z.number().int().optional(),
    response: z
      .unknown()
      .meta({ description: "the provider's answer, or the error envelope when `ok` is false" }),
  })
  .meta({ id: 'SmokeTestResult' });

const ImagesResponseSchema = z
  .looseObject({
    created: z.number().int(),
    data: z.array(
      z.object({
        b64_json: z.string().optional(),
        url: z.string().optional(),
        revised_prompt: z.string().optional(),
      }),
    ),
    model: z.string(),
    usage: z.looseObject({
      input_tokens: z.number().int(),
      output_tokens: z.number().int(),
      total_tokens: z.number().int(),
      images: z.number().int(),
      cost: z.number(),
      duration_ms: z.number(),
    }),
  })
  .meta({ id: 'ImagesResponse' });

const TranscriptionSchema = z
  .looseObject({
    text: z.string(),
    usage: z.looseObject({
      type: z.string().optional(),
      seconds: z.number().nullable(),
      cost: z.number(),
      duration_ms: z.number(),
    }),
  })
  .meta({
    id: 'Transcription',
    description: '`json` and `verbose_json` formats (`text`, `srt`, `vtt` are text/plain)',
  });

/** the multipart form of transcriptions and translations (every field reaches the provider as sent) */
const AudioUploadSchema = z
  .looseObject({
    file: z.string().meta({
      contentMediaType: 'application/octet-stream',
      description:
        'the audio: flac, m4a, mp3, mp4, mpeg, mpga, oga, ogg, wav or webm, told by its bytes (not its name)',
    }),
    model: z.string().optional().meta({ description: 'an `audio_transcription` model; absent: the default' }),
    response_format: z.enum(TRANSCRIPTION_FORMATS).optional(),
    prompt: z.string().optional(),
    temperature: z.number().optional(),
    language: z.string().optional().meta({ description: 'transcriptions only' }),
    'timestamp_granularities[]': z
      .array(z.enum(['word', 'segment']))
      .optional()
      .meta({ description: 'transcriptions only, `verbose_json`' }),
  })
  .meta({ id: 'AudioUpload' });

/** How an upload's audio is priced, said once for transcriptions and translations. */
const AUDIO_TEXT_DESCRIPTION =
  "multipart/form-data (`response_format`: `json` default, `text`, `verbose_json`, `srt`, `vtt`; every field passed on as sent, a repeated one once per value). Text formats answer text/plain (WebVTT: text/vtt) with `x-platform-audio-seconds` and `x-platform-cost` headers. Priced per audio minute by the provider's duration, else the upload's, read from its headers (flac, m4a, mp3, mp4, mpeg, mpga, oga, ogg, wav, webm): an upload whose duration cannot be read is 400 INVALID_BODY.";

const ProviderViewSchema = z
  .object({
    name: z.string(),
    type: z.enum(['openai', 'anthropic', 'mock']),
    baseUrl: z.string().optional(),
    has_api_key: z.boolean(),
    restricted: z.boolean().optional().meta({
      description:
        'written by a platform administrator: reaches public addresses only, and the networks the operator allows',
    }),
    header_names: z.array(z.string()).optional(),
    azure: z.object({ apiVersion: z.string() }).optional(),
    updatedAt: z.string(),
  })
  .meta({ id: 'Provider', description: 'A provider; its key is never shown' });

/** The catalogue, defaults, smoke-test, images and audio routes of `{gateway_url}`. */
export function catalogueRouteDocs(error: ErrorDoc, caller: string[]): RouteDoc[] {
  const admin = [...caller, 'operatorSecret'];
  const common = {
    400: error('INVALID_BODY (`details.issues`), NO_ORG_CONTEXT'),
    401: error('missing or invalid credentials'),
    403: error('`models:read` missing in the active organization'),
    405: error('METHOD_NOT_ALLOWED (`Allow` names the methods)'),
  };
  const writes = {
    401: error('missing or invalid credentials'),
    403: error('PLATFORM_ADMIN_REQUIRED: a platform administrator or the operator credential is needed'),
    405: common[405],
  };
  const inference = {
    ...common,
    403: error('`models:read` missing; MODEL_NOT_ALLOWED; HEADER_POLICY_VIOLATION'),
    404: error('MODEL_NOT_FOUND'),
    429: error('RATE_LIMITED or MONTHLY_QUOTA_EXCEEDED'),
    502: error('PROVIDER_ERROR with `provider`, `model`, `provider_error_type`'),
    503: error('quota settings unavailable'),
    504: error('PROVIDER_NO_RESPONSE'),
  };
  return [
    {
      method: 'get',
      path: '/v1/models',
      summary: 'The model catalogue: OpenAI model list, paged and filtered',
      description:
        "A caller sees its organization's usable models (enabled, offered to the organization, allowed by its governance). Platform administrators may pass `orgSlug=<slug>` for an organization's view or `orgSlug=all` for the whole catalogue (their default outside an organization), disabled models included.",
      tags: ['model catalogue'],
      security: admin,
      query: ModelListQuerySchema,
      responses: {
        200: {
          description: 'OpenAI model list with `total`, `page` (zero-based) and `limit`',
          schema: z
            .object({
              object: z.literal('list'),
              data: z.array(ModelViewSchema),
              total: z.number().int(),
              page: z.number().int(),
              limit: z.number().int(),
            })
            .meta({ id: 'ModelList' }),
        },
        ...common,
        403: error('`models:read` missing; PLATFORM_ADMIN_REQUIRED for `orgSlug` of another organization'),
      },
    },
    {
      method: 'post',
      path: '/v1/models',
      summary: 'Add a model to the catalogue',
      tags: ['model catalogue'],
      security: admin,
      body: ModelEntryInputSchema,
      responses: {
        201: { description: 'the entry as stored', schema: ModelEntryDocSchema },
        400: error(
          'MISSING_MODEL_ID, MISSING_TYPE, INVALID_BODY (`details.issues`: e.g. an unknown provider)',
        ),
        ...writes,
        409: error('MODEL_EXISTS'),
      },
    },
    {
      method: 'put',
      path: '/v1/models',
      summary: 'Replace the whole catalogue (all or nothing)',
      description: `At most 500 entries; 5 replaces per hour per consumer. A failure midway leaves the previous catalogue whole (500 BULK_REPLACE_FAILED).`,
      tags: ['model catalogue'],
      security: admin,
      body: z.object({ models: z.array(ModelEntryInputSchema) }).meta({ id: 'ModelCatalogue' }),
      responses: {
        200: {
          description: 'how many entries were removed and added',
          schema: z
            .object({ deleted: z.number().int(), inserted: z.number().int() })
            .meta({ id: 'BulkReplaceResult' }),
        },
        400: error(
          'INVALID_BODY (`models` missing or not an array), INVALID_ITEMS (`details.items`: index, model_id, issues)',
        ),
        ...writes,
        409: error('BULK_REPLACE_IN_PROGRESS'),
        413: error('PAYLOAD_TOO_LARGE: over 500 entries'),
        429: error('RATE_LIMITED: over 5 replaces in an hour (`retryAfter`)'),
        500: error('BULK_REPLACE_FAILED: nothing changed'),
      },
    },
    {
      method: 'get',
      path: '/v1/models/:id',
      summary: 'One model (ids may hold `/` and `:`, sent unencoded)',
      tags: ['model catalogue'],
      security: admin,
      responses: {
        200: { description: 'the model', schema: ModelViewSchema },
        ...common,
        404: error('MODEL_NOT_FOUND'),
      },
    },
    {
      method: 'patch',
      path: '/v1/models/:id',
      summary: 'Change a model (JSON merge patch; `null` removes an optional member)',
      tags: ['model catalogue'],
      security: admin,
      body: ModelPatchSchema,
      responses: {
        200: { description: 'the entry as stored', schema: ModelEntryDocSchema },
        400: error('INVALID_BODY (`details.issues`), `model_id` cannot change'),
        ...writes,
        404: error('MODEL_NOT_FOUND'),
      },
    },
    {
      method: 'delete',
      path: '/v1/models/:id',
      summary: 'Remove a model from the catalogue',
      tags: ['model catalogue'],
      security: admin,
      responses: {
        204: { description: 'removed' },
        ...writes,
        404: error('MODEL_NOT_FOUND'),
        409: error('MODEL_IN_USE (`details.models`: the models whose failover names it)'),
      },
    },
    {
      method: 'get',
      path: '/v1/providers',
      summary: 'The providers (keys never shown)',
      tags: ['model catalogue'],
      security: admin,
      responses: {
        200: {
          description: 'the providers',
          schema: z
            .object({ object: z.literal('list'), data: z.array(ProviderViewSchema) })
            .meta({ id: 'ProviderList' }),
        },
        ...writes,
      },
    },
    {
      method: 'put',
      path: '/v1/providers/:name',
      summary: 'Add or replace a provider (its key is sealed at rest)',
      tags: ['model catalogue'],
      security: admin,
      body: ProviderBodySchema,
      responses: {
        200: { description: 'replaced', schema: ProviderViewSchema },
        201: { description: 'added', schema: ProviderViewSchema },
        400: error(
          'INVALID_BODY (`details.issues`); PROVIDER_DESTINATION_REFUSED: a platform administrator gave a `baseUrl` that is not http(s) or names a non-public address',
        ),
        ...writes,
      },
    },
    {
      method: 'delete',
      path: '/v1/providers/:name',
      summary: 'Remove a provider no model uses',
      tags: ['model catalogue'],
      security: admin,
      responses: {
        204: { description: 'removed' },
        ...writes,
        404: error('PROVIDER_NOT_FOUND'),
        409: error('PROVIDER_IN_USE (`details.models`)'),
      },
    },
    {
      method: 'get',
      path: '/v1/defaults',
      summary: "The default model per concern: the organization's own, else the platform's",
      tags: ['default models'],
      security: caller,
      responses: {
        200: {
          description:
            'per concern, the model a request without `model` goes to; null where that request would be refused (its error says why)',
          schema: DefaultsSchema,
        },
        ...common,
      },
    },
    {
      method: 'post',
      path: '/v1/test',
      summary: 'Smoke-test a model through the gateway (not billed to the quota; recorded)',
      description:
        'Embeddings: a short input (`dimensions` reported). Completions: one user turn and a tool definition (`tool_called` reported). Speech: one short sentence (`response: {content_type, bytes}`). A provider failure is `{ok: false, response: <error envelope>}` with status 200.',
      tags: ['model smoke tests'],
      security: caller,
      body: SmokeTestRequestSchema,
      responses: {
        200: { description: 'the outcome', schema: SmokeTestSchema },
        ...common,
        403: error('`models:read` missing; MODEL_NOT_ALLOWED'),
        404: error('MODEL_NOT_FOUND'),
        429: error('RATE_LIMITED: 20 smoke tests per minute per organization'),
      },
    },
    {
      method: 'post',
      path: '/v1/images/generations',
      summary: 'Image generation (OpenAI wire format), priced per image',
      tags: ['images'],
      security: caller,
      body: ImagesRequestSchema,
      responses: { 200: { description: 'the images', schema: ImagesResponseSchema }, ...inference },
    },
    {
      method: 'post',
      path: '/v1/audio/transcriptions',
      summary: 'Audio transcription (OpenAI multipart upload), priced per audio minute',
      description: `${AUDIO_TEXT_DESCRIPTION} \`timestamp_granularities[]\` (\`word\`, \`segment\`) with \`verbose_json\`.`,
      tags: ['audio'],
      security: caller,
      body: AudioUploadSchema,
      bodyMediaType: 'multipart/form-data',
      responses: {
        200: {
          description: 'the transcription: JSON formats, or text',
          schema: TranscriptionSchema,
          mediaTypes: ['text/plain', 'text/vtt'],
        },
        ...inference,
        413: error('PAYLOAD_TOO_LARGE: the upload is over LLM_GATEWAY_AUDIO_MAX_BYTES'),
      },
    },
    {
      method: 'post',
      path: '/v1/audio/translations',
      summary: 'Audio translation into English (OpenAI multipart upload), priced per audio minute',
      description: `A model of type \`audio_transcription\` whose provider translates (OpenAI: whisper-1), through the provider's \`/audio/translations\`. ${AUDIO_TEXT_DESCRIPTION}`,
      tags: ['audio'],
      security: caller,
      body: AudioUploadSchema,
      bodyMediaType: 'multipart/form-data',
      responses: {
        200: {
          description: 'the translation: JSON formats, or text',
          schema: TranscriptionSchema,
          mediaTypes: ['text/plain', 'text/vtt'],
        },
        ...inference,
        413: error('PAYLOAD_TOO_LARGE: the upload is over LLM_GATEWAY_AUDIO_MAX_BYTES'),
      },
    },
    {
      method: 'post',
      path: '/v1/audio/speech',
      summary: 'Text to speech (OpenAI wire format): the audio, as the provider sends it',
      description:
        "A model of type `audio_speech`. `input` (at most 4096 characters, else 400 INVALID_BODY before any quota or provider call) and `instructions` count as prompt tokens toward rpm/tpm and the monthly tokens; priced per million characters of `input` (`pricing.per_million_characters`), reported in `x-platform-characters` and `x-platform-cost`. The body is the audio in `response_format` (`mp3` default, `opus`, `aac`, `flac`, `wav`, `pcm`) forwarded as it arrives, its content type the provider's when that is audio (the `mock` provider answers WAV whatever is asked), else OpenAI's for the format; with `stream_format: sse`, the provider's `speech.audio.delta` / `speech.audio.done` events. A failure after the first bytes cuts the answer; a client that leaves cancels the provider call.",
      tags: ['audio'],
      security: caller,
      body: SpeechRequestSchema.meta({ id: 'SpeechRequest' }),
      responses: {
        200: {
          description: 'the audio (chunked), or the event stream',
          mediaTypes: [...Object.values(SPEECH_CONTENT_TYPES), 'text/event-stream'],
        },
        ...inference,
      },
    },
  ];
}
