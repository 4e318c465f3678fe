import { z } from 'zod';

/**
 * A catalogue model entry, as the operator's gateway file and the catalogue API (`POST/PUT/PATCH
 * {gateway_url}/v1/models`) give it. One schema for both, so a file exported by `GET /v1/models` can
 * be imported again with `PUT /v1/models`.
 */
export const MODEL_TYPES = [
  'completion',
  'embeddings',
  'image_generation',
  'audio_transcription',
  'audio_speech',
] as const;

/** ids may carry slashes, colons and dots (`bedrock/anthropic.claude-3-haiku`, `eu.anthropic.…-v1:0`) */
export const ModelIdSchema = z
  .string()
  .min(1)
  .max(200)
  .regex(/^[A-Za-z0-9][A-Za-z0-9._:/@+-]*$/, 'letters, digits and . _ : / @ + -')
  .refine((id) => !id.includes('//') && !id.endsWith('/'), 'no empty path segment')
  // a request's `auto` and `default` name the organization's routing and default (decision 0120), never a model
  .refine((id) => id !== 'auto' && id !== 'default', 'auto and default are names requests give, not models');

const HeaderPolicyValueSchema = z.union([
  z.string(),
  z.object({ value: z.string(), required: z.boolean().optional() }).strict(),
]);

/** a top-level member of a request body a deployment may rename or drop: never `model`, which the gateway sets */
const RequestMemberSchema = z
  .string()
  .min(1)
  .max(100)
  .refine((name) => name !== 'model', 'the provider model is set by provider_config.model');

export const ProviderConfigSchema = z
  .object({
    provider: z.string().min(1),
    model: z.string().min(1),
    /** headers sent to the provider; values may name caller identity: {user.id}, {org.slug}, ... */
    headers: z.record(z.string(), HeaderPolicyValueSchema).optional(),
    /** client request headers (lower case) forwarded to the provider; every other one is dropped */
    forward_headers: z.array(z.string().min(1)).optional(),
    /** request members renamed for this provider, `{max_tokens: 'max_completion_tokens'}` (decision 0119) */
    parameter_aliases: z
      .record(RequestMemberSchema, RequestMemberSchema)
      .refine((aliases) => Object.keys(aliases).length <= 50, 'at most 50 aliases')
      .optional(),
    /** request members dropped for this provider; `stream`: called without streaming, the gateway streams the answer */
    exclude_parameters: z.array(RequestMemberSchema).max(50).optional(),
  })
  .strict();
export type ProviderConfig = z.infer<typeof ProviderConfigSchema>;

/** the most deployments one model may name */
export const MAX_DEPLOYMENTS = 16;

/** One deployment of a model served by several: a provider config and its share of the requests. */
export const DeploymentSchema = ProviderConfigSchema.extend({
  /** its share of the requests, relative to the other deployments' (default 1) */
  weight: z.number().positive().max(1_000_000).optional(),
}).meta({ id: 'ModelDeployment' });
export type DeploymentEntry = z.infer<typeof DeploymentSchema>;

/**
 * The most a price may be: a million (the plan currency) per million tokens, image, audio minute or million
 * characters, far above any model's. A price near the largest number made a request's cost infinite, which the
 * organization's month counter then held, refusing every later request of the month.
 */
const MAX_PRICE = 1_000_000;
const price = z.number().min(0).max(MAX_PRICE);

export const PricingSchema = z
  .object({
    input_per_million: price.default(0),
    output_per_million: price.default(0),
    /** prompt tokens the provider read from its prompt cache (absent: `input_per_million`; decision 0107) */
    cached_input_per_million: price.optional(),
    /** prompt tokens the provider wrote to its prompt cache (absent: `input_per_million`; decision 0107) */
    cache_write_per_million: price.optional(),
    /**
     * prompt tokens written to the provider's 1-hour prompt cache (Anthropic's `ttl: "1h"`); absent: twice
     * `input_per_million` (Anthropic's rule), or `cache_write_per_million` when higher (decision 0113)
     */
    cache_write_1h_per_million: price.optional(),
    /** image generation: price of one image */
    per_image: price.optional(),
    /** audio transcription and translation: price of one minute of audio (billed by the second) */
    per_audio_minute: price.optional(),
    /** speech: price of one million characters of `input` (Unicode code points) */
    per_million_characters: price.optional(),
  })
  .strict();

const entryFields = {
  model_id: ModelIdSchema,
  type: z.enum(MODEL_TYPES),
  enabled: z.boolean().default(true),
  display: z
    .object({
      name: z.string().max(200).optional(),
      brand: z.string().max(100).optional(),
      /** hidden models are served but left out of `visible_only=true` lists (pickers) */
      hidden: z.boolean().optional(),
    })
    .strict()
    .optional(),
  /** what the model can do: vision, audio, tools, json_mode, streaming, ... */
  capabilities: z.record(z.string().regex(/^[a-z][a-z0-9_]*$/), z.boolean()).optional(),
  limits: z
    .object({
      context_window: z.number().int().positive().optional(),
      max_output_tokens: z.number().int().positive().optional(),
    })
    .strict()
    .optional(),
  region: z.string().max(64).optional(),
  /** embeddings: the default output size */
  dimensions: z.number().int().positive().optional(),
  supported_dimensions: z.array(z.number().int().positive()).optional(),
  /** the provider serving it; a model served by several gives `deployments` instead */
  provider_config: ProviderConfigSchema.optional(),
  /** several deployments of the model (regions, keys, clusters), balanced by weight, each cooled down after failures */
  deployments: z
    .array(DeploymentSchema)
    .min(1)
    .max(MAX_DEPLOYMENTS, `at most ${MAX_DEPLOYMENTS} deployments`)
    .optional(),
  pricing: PricingSchema.default({ input_per_million: 0, output_per_million: 0 }),
  tags: z.array(z.string().min(1).max(64)).max(50).optional(),
  /** the organizations that may see and use it; absent: every organization */
  org_slugs: z.array(z.string().min(1)).optional(),
  timeout_ms: z.number().int().positive().max(600_000).optional(),
  parameters_billion: z.number().positive().optional(),
  /** a catalogue model tried when this one's provider keeps failing (429/5xx/no answer) */
  failover: ModelIdSchema.optional(),
  /** rerank through the provider's native `/rerank` endpoint instead of chat scoring */
  native_rerank: z.boolean().optional(),
};

/** the entry's deployments whose provider `has` does not know, as issues (`field`, `message`) */
export function unknownProviders(
  entry: Pick<ModelEntry, 'provider_config' | 'deployments'>,
  has: (provider: string) => boolean,
): Array<{ field: string; message: string }> {
  const issues: Array<{ field: string; message: string }> = [];
  deploymentsOf(entry).forEach((d, i) => {
    if (!has(d.provider))
      issues.push({
        field: entry.deployments ? `deployments.${i}.provider` : 'provider_config.provider',
        message: `no provider named ${d.provider}`,
      });
  });
  return issues;
}

/** The entry's members without the check that binds them (OpenAPI views omit and extend it). */
export const ModelEntryObjectSchema = z.object(entryFields).strict();

export type Pricing = z.infer<typeof PricingSchema>;

/**
 * The prices a request is billed at: each held to MAX_PRICE. A price stored before the bound existed stays in the
 * store as it was written, but never makes a request's cost infinite (which blocked the organization for the month).
 */
export const boundedPricing = (pricing: Pricing): Pricing =>
  Object.fromEntries(
    Object.entries(pricing ?? {}).map(([k, v]) => [k, typeof v === 'number' ? Math.min(v, MAX_PRICE) : v]),
  ) as Pricing;

export const ModelEntrySchema = ModelEntryObjectSchema.superRefine(
  (entry, ctx) => {
    if ((entry.provider_config === undefined) === (entry.deployments === undefined))
      ctx.addIssue({
        code: 'custom',
        path: entry.provider_config ? ['deployments'] : ['provider_config'],
        message: entry.provider_config
          ? 'give provider_config or deployments, not both (a merge patch removes one with null)'
          : 'provider_config (or deployments) is required',
      });
    if (!Array.isArray(entry.deployments)) return;
    const seen = new Set<string>();
    entry.deployments.forEach((d, i) => {
      const key = `${d?.provider}\n${d?.model}`;
      if (seen.has(key))
        ctx.addIssue({
          code: 'custom',
          path: ['deployments', i],
          message: `deployment ${d.provider} / ${d.model} is named twice`,
        });
      seen.add(key);
    });
  },
  // also when other members are wrong, so one answer names every problem (the members may be of any shape here)
  { when: (payload) => typeof payload.value === 'object' && payload.value !== null },
);
export type ModelEntry = z.infer<typeof ModelEntrySchema>;

/** The provider configs serving an entry: its `deployments`, or its one `provider_config`. */
export const deploymentsOf = (
  entry: Pick<ModelEntry, 'provider_config' | 'deployments'>,
): DeploymentEntry[] => entry.deployments ?? (entry.provider_config ? [entry.provider_config] : []);

/** `PATCH /v1/models/{id}`: a JSON merge patch (RFC 7396) of the entry, validated once merged. */
export const ModelPatchSchema = z.record(z.string(), z.unknown()).meta({
  description:
    'members of a model entry to change; `null` removes an optional member; `model_id` cannot change',
});

export const isPlainObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/** RFC 7396 merge: objects merge member by member, `null` removes, anything else replaces. */
export function mergePatch(target: unknown, patch: unknown): unknown {
  if (!isPlainObject(patch)) return patch;
  const out: Record<string, unknown> = isPlainObject(target) ? { ...target } : {};
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete out[k];
    else out[k] = mergePatch(out[k], v);
  }
  return out;
}

/** The platform's default model per concern (`GET /v1/defaults` merges the organization's over them). */
export const PlatformDefaultsSchema = z
  .object({
    completions: ModelIdSchema.optional(),
    embeddings: ModelIdSchema.optional(),
    image_generation: ModelIdSchema.optional(),
    audio_transcription: ModelIdSchema.optional(),
    audio_speech: ModelIdSchema.optional(),
  })
  .strict();
export type PlatformDefaults = z.infer<typeof PlatformDefaultsSchema>;
