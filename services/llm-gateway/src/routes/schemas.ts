import { z } from 'zod';

/** OpenAI's chat request: the members the gateway reads are checked; every other one passes through. */
export const ChatRequestSchema = z.looseObject({
  model: z.string().max(200).optional(),
  messages: z
    .array(z.looseObject({ role: z.string().min(1) }))
    .min(1, 'at least one message')
    .meta({ description: 'OpenAI chat messages (text, multimodal parts, tool calls and results)' }),
  stream: z.boolean().optional(),
  stream_options: z.looseObject({ include_usage: z.boolean().optional() }).nullable().optional(),
  tools: z.array(z.unknown()).optional(),
  response_format: z.unknown().optional(),
  temperature: z.number().min(0).max(2).nullable().optional(),
  max_tokens: z.number().int().positive().nullable().optional(),
  max_completion_tokens: z.number().int().positive().nullable().optional(),
});

const TokenArray = z.array(z.number().int().nonnegative());
export const EmbeddingsRequestSchema = z.looseObject({
  model: z.string().max(200).optional(),
  input: z.union([
    z.string(),
    z.array(z.string()).min(1).max(2048),
    TokenArray.min(1),
    z.array(TokenArray.min(1)).min(1).max(2048),
  ]),
  dimensions: z.number().int().positive().optional(),
  encoding_format: z.enum(['float', 'base64']).optional(),
  user: z.string().optional(),
});

export const MAX_RERANK_DOCUMENTS = 200;
export const RerankRequestSchema = z
  .object({
    model: z.string().max(200).optional(),
    query: z.string().min(1),
    documents: z
      .array(z.union([z.string(), z.object({ text: z.string() }).transform((d) => d.text)]))
      .min(1)
      .max(MAX_RERANK_DOCUMENTS, `at most ${MAX_RERANK_DOCUMENTS} documents`),
    top_n: z.number().int().positive().optional(),
    return_documents: z.boolean().optional(),
  })
  .strict();
