import { z } from 'zod';

/**
 * `{type, function?}` in one of OpenAI's forms (a tool, a tool choice, a tool call): any type passes on to
 * providers that know it, and one of type `function` carries the `function` the adapters read.
 */
function typedItem<F extends z.ZodType>(fn: F, what: string, shape: z.ZodRawShape = {}) {
  return z
    .looseObject({ ...shape, type: z.string().min(1), function: fn.optional() })
    .refine((item) => item.type !== 'function' || item.function !== undefined, {
      message: `${what} of type 'function' needs its function`,
      path: ['function'],
    });
}

/**
 * A chat message's members that the gateway, its tokenizer or a provider adapter reads, in OpenAI's
 * shapes (OpenAI refuses the others with a 400 too); anything else passes through.
 */
const ChatMessageSchema = z.looseObject({
  role: z.string().min(1),
  content: z
    .union([z.string(), z.array(z.looseObject({ type: z.string().min(1) }))])
    .nullable()
    .optional(),
  name: z.string().optional(),
  tool_calls: z
    .array(
      typedItem(z.looseObject({ name: z.string().min(1), arguments: z.string() }), 'a tool call', {
        id: z.string(),
      }),
    )
    .optional(),
  tool_call_id: z.string().optional(),
});

const ChatToolSchema = typedItem(
  z.looseObject({
    name: z.string().min(1),
    description: z.string().optional(),
    parameters: z.record(z.string(), z.unknown()).optional(),
  }),
  'a tool',
);

const ToolChoiceSchema = z.union([
  z.enum(['none', 'auto', 'required']),
  typedItem(z.looseObject({ name: z.string().min(1) }), 'a tool_choice'),
]);

/** `text`, `json_object`, or `json_schema` with its `json_schema` (the Anthropic adapter reads its schema). */
const ResponseFormatSchema = z
  .looseObject({
    type: z.string().min(1),
    json_schema: z
      .looseObject({
        name: z.string().min(1),
        description: z.string().optional(),
        schema: z.record(z.string(), z.unknown()).optional(),
      })
      .optional(),
  })
  .refine((format) => format.type !== 'json_schema' || format.json_schema !== undefined, {
    message: "a response_format of type 'json_schema' needs its json_schema",
    path: ['json_schema'],
  });

/** OpenAI's chat request: the members the gateway reads are checked; every other one passes through. */
export const ChatRequestSchema = z.looseObject({
  model: z.string().max(200).optional(),
  messages: z
    .array(ChatMessageSchema)
    .min(1, 'at least one message')
    .meta({ description: 'OpenAI chat messages (text, multimodal parts, tool calls and results)' }),
  stream: z.boolean().optional(),
  stream_options: z.looseObject({ include_usage: z.boolean().optional() }).nullable().optional(),
  tools: z.array(ChatToolSchema).optional(),
  tool_choice: ToolChoiceSchema.optional(),
  parallel_tool_calls: z.boolean().optional(),
  // OpenAI's own bound: each choice is a whole answer the provider generates
  n: z.number().int().min(1).max(128).nullable().optional(),
  stop: z
    .union([z.string(), z.array(z.string())])
    .nullable()
    .optional(),
  top_p: z.number().min(0).max(1).nullable().optional(),
  user: z.string().optional(),
  response_format: ResponseFormatSchema.optional(),
  temperature: z.number().min(0).max(2).nullable().optional(),
  max_tokens: z.number().int().positive().nullable().optional(),
  max_completion_tokens: z.number().int().positive().nullable().optional(),
});

const TokenArray = z.array(z.number().int().nonnegative());
export const EmbeddingsRequestSchema = z.looseObject({
  model: z.string().max(200).optional(),
  input: z.union(
    [
      z.string(),
      z.array(z.string()).min(1).max(2048),
      TokenArray.min(1),
      z.array(TokenArray.min(1)).min(1).max(2048),
    ],
    {
      error:
        'a string, or an array of 1 to 2048 strings, an array of token ids, or an array of 1 to 2048 token-id arrays',
    },
  ),
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
