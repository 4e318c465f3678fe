import { readFileSync } from 'node:fs';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';
import { missingEndpoints } from './catalogue/deployment-endpoints';
import {
  deploymentsOf,
  type ModelEntry,
  ModelEntrySchema,
  PlatformDefaultsSchema,
} from './catalogue/model-entry';
import { ProviderHeadersSchema, ProviderKeySchema } from './catalogue/provider-fields';

/**
 * The operator's gateway file named by LLM_GATEWAY_CONFIG (YAML or JSON): the providers and the model
 * catalogue the gateway starts from. Provider keys are given inline (`apiKey`) or by the name of an
 * environment variable (`apiKeyEnv`); the gateway stores them encrypted and never returns them.
 */
export const ProviderFileEntrySchema = z
  .object({
    name: z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/, 'letters, digits, ".", "_" or "-"'),
    type: z.enum(['openai', 'anthropic', 'mock']),
    baseUrl: z.url().optional(),
    apiKey: ProviderKeySchema.optional(),
    apiKeyEnv: z.string().min(1).optional(),
    headers: ProviderHeadersSchema.optional(),
    azure: z
      .object({ apiVersion: z.string().min(1) })
      .strict()
      .optional(),
  })
  .strict()
  .refine((p) => !(p.apiKey && p.apiKeyEnv), { message: 'give apiKey or apiKeyEnv, not both' })
  .refine((p) => p.type === 'mock' || p.baseUrl !== undefined, { message: 'baseUrl is required' });
export type ProviderFileEntry = z.infer<typeof ProviderFileEntrySchema>;

/** a model entry of the file: the catalogue's entry schema (src/catalogue/model-entry.ts) */
export const ModelFileEntrySchema = ModelEntrySchema;
export type ModelFileEntry = ModelEntry;

export const GatewayFileSchema = z
  .object({
    providers: z.array(ProviderFileEntrySchema).default([]),
    models: z.array(ModelFileEntrySchema).default([]),
    /** the platform's default model per concern; an organization's own defaults win */
    defaults: PlatformDefaultsSchema.optional(),
  })
  .strict()
  .superRefine((file, ctx) => {
    const providers = new Map<string, ProviderFileEntry>();
    file.providers.forEach((p, i) => {
      if (providers.has(p.name))
        ctx.addIssue({
          code: 'custom',
          path: ['providers', i, 'name'],
          message: `duplicate provider ${p.name}`,
        });
      else providers.set(p.name, p);
    });
    const models = new Set(file.models.map((m) => m.model_id));
    const seen = new Set<string>();
    file.models.forEach((m, i) => {
      if (seen.has(m.model_id))
        ctx.addIssue({
          code: 'custom',
          path: ['models', i, 'model_id'],
          message: `duplicate model ${m.model_id}`,
        });
      seen.add(m.model_id);
      deploymentsOf(m).forEach((d, j) => {
        if (!providers.has(d.provider))
          ctx.addIssue({
            code: 'custom',
            path: m.deployments
              ? ['models', i, 'deployments', j, 'provider']
              : ['models', i, 'provider_config', 'provider'],
            message: `no provider named ${d.provider}`,
          });
      });
      for (const issue of missingEndpoints(m, (name) => providers.get(name)))
        ctx.addIssue({
          code: 'custom',
          path: ['models', i, ...issue.field.split('.')],
          message: issue.message,
        });
      if (m.failover !== undefined && !models.has(m.failover))
        ctx.addIssue({
          code: 'custom',
          path: ['models', i, 'failover'],
          message: `no model named ${m.failover}`,
        });
    });
  });
export type GatewayFile = z.infer<typeof GatewayFileSchema>;

/** What the gateway serves when LLM_GATEWAY_CONFIG is unset: the deterministic `mock` family. */
export const BUILT_IN_GATEWAY_FILE: GatewayFile = GatewayFileSchema.parse({
  providers: [{ name: 'mock', type: 'mock' }],
  models: [
    {
      model_id: 'mock/chat',
      type: 'completion',
      provider_config: { provider: 'mock', model: 'mock-chat' },
      pricing: { input_per_million: 0, output_per_million: 0 },
      parameters_billion: 1,
      // the mock's own lexical rerank: scoring through its chat answers ("Mock answer to: ...") gives only zeros
      native_rerank: true,
    },
    {
      model_id: 'mock/embeddings',
      type: 'embeddings',
      provider_config: { provider: 'mock', model: 'mock-embeddings' },
      pricing: { input_per_million: 0, output_per_million: 0 },
      supported_dimensions: [8, 16, 32, 64, 128, 256, 512, 768, 1024, 1536],
      dimensions: 256,
    },
    {
      model_id: 'mock/images',
      type: 'image_generation',
      provider_config: { provider: 'mock', model: 'mock-images' },
      pricing: { per_image: 0 },
    },
    {
      model_id: 'mock/transcriptions',
      type: 'audio_transcription',
      provider_config: { provider: 'mock', model: 'mock-transcriptions' },
      pricing: { per_audio_minute: 0 },
    },
    {
      model_id: 'mock/speech',
      type: 'audio_speech',
      provider_config: { provider: 'mock', model: 'mock-speech' },
      pricing: { per_million_characters: 0 },
    },
  ],
  defaults: {
    completions: 'mock/chat',
    embeddings: 'mock/embeddings',
    image_generation: 'mock/images',
    audio_transcription: 'mock/transcriptions',
    audio_speech: 'mock/speech',
  },
});

const describe = (error: z.ZodError) =>
  error.issues.map((i) => `${i.path.length ? i.path.join('.') : '(root)'}: ${i.message}`).join('; ');

/** Reads and validates the gateway file; throws an Error naming the file and the offending fields. */
export function readGatewayFile(path: string): GatewayFile {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new Error(`cannot read ${path} (${(err as Error).message})`);
  }
  let raw: unknown;
  try {
    raw = /\.json$/i.test(path) ? JSON.parse(text) : parseYaml(text);
  } catch (err) {
    throw new Error(
      `${path} is not valid ${/\.json$/i.test(path) ? 'JSON' : 'YAML'} (${(err as Error).message})`,
    );
  }
  const parsed = GatewayFileSchema.safeParse(raw);
  if (!parsed.success) throw new Error(`invalid gateway file ${path}: ${describe(parsed.error)}`);
  return parsed.data;
}
