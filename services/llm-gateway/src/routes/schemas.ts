import { z } from 'zod';
import { CacheControlSchema, chatBreakpointIssues } from '../inference/cache-breakpoints';

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
  // a breakpoint after the message's last block (decision 0113)
  cache_control: CacheControlSchema,
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
  { cache_control: CacheControlSchema },
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
const ChatRequestMembers = z.looseObject({
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
  // Anthropic's extended thinking, as LiteLLM takes it (decision 0114): sent to Claude models, never to others
  thinking: z
    .looseObject({ type: z.string().min(1), budget_tokens: z.number().int().positive().optional() })
    .nullable()
    .optional(),
});

// the parts' breakpoints, and a fifth one, which Anthropic refuses: the gateway's own 400, whichever provider the
// model is on (decision 0113)
export const ChatRequestSchema = ChatRequestMembers.superRefine((body, ctx) => {
  for (const issue of chatBreakpointIssues(body)) ctx.addIssue({ code: 'custom', ...issue });
  // a tool_choice no tool answers, which every provider refuses (Anthropic's refusal was a 502 that did not say why)
  const tools = body.tools ?? [];
  const choice = body.tool_choice;
  if (choice === 'required' && tools.length === 0)
    ctx.addIssue({ code: 'custom', path: ['tool_choice'], message: "'required' needs tools" });
  const named = typeof choice === 'object' && choice.type === 'function' ? functionName(choice) : undefined;
  if (named !== undefined && !tools.some((t) => t.type === 'function' && functionName(t) === named))
    ctx.addIssue({
      code: 'custom',
      path: ['tool_choice', 'function', 'name'],
      message: `no function tool named ${named} in tools`,
    });
});

/** the name of a function tool, or of the function a tool_choice names */
const functionName = (item: Record<string, unknown>): unknown =>
  (item.function as { name?: unknown } | undefined)?.name;

const TokenArray = z.array(z.number().int().nonnegative());
/** the most texts (or token-id arrays) one request may hold: OpenAI's bound */
const MAX_TEXTS = 2048;
/**
 * What embeddings embed and text completions complete: OpenAI's four shapes of text or token ids. The bound on a
 * list is checked once its shape is known: inside the union, 3,000 strings matched no shape and were refused with
 * one issue per string, each saying it was not a token id.
 */
const TextsOrTokens = z
  .union([z.string(), z.array(z.string()).min(1), TokenArray.min(1), z.array(TokenArray.min(1)).min(1)], {
    error: `a string, or an array of 1 to ${MAX_TEXTS} strings, an array of token ids, or an array of 1 to ${MAX_TEXTS} token-id arrays`,
  })
  .superRefine((input, ctx) => {
    const listed = Array.isArray(input) && typeof input[0] !== 'number';
    if (listed && input.length > MAX_TEXTS)
      ctx.addIssue({ code: 'custom', message: `at most ${MAX_TEXTS} texts or token-id arrays` });
  });
export const EmbeddingsRequestSchema = z.looseObject({
  model: z.string().max(200).optional(),
  // OpenAI refuses an empty text (a 400 the client would get as our 502): refused here, naming it
  input: TextsOrTokens.superRefine((input, ctx) => {
    const texts = typeof input === 'string' ? [input] : input;
    texts.forEach((text, i) => {
      if (text === '')
        ctx.addIssue({
          code: 'custom',
          message: 'must not be an empty string',
          path: typeof input === 'string' ? [] : [i],
        });
    });
  }),
  dimensions: z.number().int().positive().optional(),
  encoding_format: z.enum(['float', 'base64']).optional(),
  user: z.string().optional(),
});

/**
 * OpenAI's legacy text completions (decision 0115): the members the gateway reads or counts are checked, in OpenAI's
 * shapes; every other one (`logit_bias`, `seed`, a server's own such as vLLM's `top_k`) passes through.
 */
export const TextCompletionRequestSchema = z
  .looseObject({
    model: z.string().max(200).optional(),
    prompt: TextsOrTokens,
    suffix: z
      .string()
      .nullable()
      .optional()
      .meta({ description: 'the text after the insertion point (fill-in-the-middle)' }),
    stream: z.boolean().optional(),
    stream_options: z.looseObject({ include_usage: z.boolean().optional() }).nullable().optional(),
    // OpenAI's bounds; `max_tokens: 0` with `echo` scores the prompt alone
    max_tokens: z.number().int().nonnegative().nullable().optional(),
    n: z.number().int().min(1).max(128).nullable().optional(),
    best_of: z.number().int().min(1).max(128).nullable().optional(),
    echo: z.boolean().nullable().optional(),
    logprobs: z.number().int().nonnegative().nullable().optional(),
    stop: z
      .union([z.string(), z.array(z.string())])
      .nullable()
      .optional(),
    temperature: z.number().min(0).max(2).nullable().optional(),
    top_p: z.number().min(0).max(1).nullable().optional(),
    user: z.string().optional(),
  })
  // OpenAI's rule: `n` choices are picked among `best_of` candidates (its 400 reached the caller as our 502)
  .refine((body) => body.best_of == null || body.best_of >= (body.n ?? 1), {
    message: 'must be at least n: the n choices are picked among best_of candidates',
    path: ['best_of'],
  });

export const MAX_RERANK_DOCUMENTS = 200;
/**
 * a document to score: one without text (empty, or only whitespace: a blank chunk of the caller's pipeline) has
 * nothing to rank, and is refused before any scoring is billed
 */
const rerankDocument = z.string().regex(/\S/, 'a document must not be empty or only whitespace');
export const RerankRequestSchema = z
  .object({
    model: z.string().max(200).optional(),
    // a blank query would score, and bill, every document against nothing
    query: z.string().regex(/\S/, 'the query must not be empty or only whitespace'),
    documents: z
      .array(z.union([rerankDocument, z.object({ text: rerankDocument }).transform((d) => d.text)]))
      .min(1)
      .max(MAX_RERANK_DOCUMENTS, `at most ${MAX_RERANK_DOCUMENTS} documents`),
    top_n: z.number().int().positive().optional(),
    return_documents: z.boolean().optional(),
  })
  .strict();

/** A Responses API content part or input item: its `type` is read, the rest by the translation (responses-request.ts). */
/** An input item's id, kept as the item's (stored responses, conversations): a new one when absent. */
export const ItemIdSchema = z
  .string()
  .min(1)
  .max(200)
  .meta({ description: 'kept as the item id; a new one when absent' });

const ResponsesItemSchema = z.looseObject({
  type: z.string().min(1).optional(),
  role: z.string().min(1).optional(),
  // as `items.create` takes it: an id a conversation keeps and `input_items` pages by
  id: ItemIdSchema.nullable().optional(),
});

/**
 * OpenAI's Responses API request as the gateway serves it (stateless, translated to chat completions): the
 * members it reads are checked here; the route refuses every other member with a 400 naming it.
 */
export const ResponsesRequestSchema = z.looseObject({
  model: z.string().max(200).optional(),
  input: z.union([z.string(), z.array(ResponsesItemSchema).min(1, 'at least one item')]).meta({
    description:
      "a string (one user message), or messages (`input_text`, `input_image`, `output_text` parts) with `function_call` and `function_call_output` items; a `reasoning` item's `encrypted_content` of the gateway's (`gwtb1:`) goes back to Claude as its signed thinking (400 when malformed), anything else in it is passed over",
  }),
  instructions: z.string().nullable().optional(),
  tools: z
    .array(
      z.looseObject({
        type: z.string().min(1),
        name: z.string().min(1).optional(),
        description: z.string().nullable().optional(),
        parameters: z.record(z.string(), z.unknown()).nullable().optional(),
        strict: z.boolean().nullable().optional(),
      }),
    )
    .optional(),
  tool_choice: z
    .union([
      z.enum(['none', 'auto', 'required']),
      z.looseObject({ type: z.string().min(1), name: z.string().min(1).optional() }),
    ])
    .optional(),
  temperature: z.number().min(0).max(2).nullable().optional(),
  top_p: z.number().min(0).max(1).nullable().optional(),
  max_output_tokens: z.number().int().positive().nullable().optional(),
  text: z
    .looseObject({
      format: z
        .looseObject({
          type: z.enum(['text', 'json_object', 'json_schema']),
          name: z.string().min(1).optional(),
          description: z.string().optional(),
          schema: z.record(z.string(), z.unknown()).optional(),
          strict: z.boolean().nullable().optional(),
        })
        .refine((f) => f.type !== 'json_schema' || (f.name !== undefined && f.schema !== undefined), {
          message: "a format of type 'json_schema' needs its name and schema",
        })
        .optional(),
      verbosity: z.enum(['low', 'medium', 'high']).nullable().optional(),
    })
    .optional(),
  parallel_tool_calls: z.boolean().nullable().optional(),
  user: z.string().optional(),
  // OpenAI's bounds: 16 pairs, keys of 64 characters, values of 512
  metadata: z
    .record(z.string().max(64), z.string().max(512))
    .refine((m) => Object.keys(m).length <= 16, { message: 'at most 16 pairs' })
    .nullable()
    .optional(),
  stream: z.boolean().nullable().optional(),
  store: z.boolean().nullable().optional().meta({
    description:
      'keep the finished response (default true, as OpenAI): for `GET /v1/responses/{id}` and a later `previous_response_id`; `false` keeps nothing',
  }),
  previous_response_id: z.string().min(1).max(200).nullable().optional().meta({
    description:
      "a stored response of the caller's to continue: its chain's input and output items come before `input` (its `instructions` do not); 404 `RESPONSE_NOT_FOUND` when it is not the caller's or is gone, 400 `RESPONSE_CHAIN_TOO_LONG` over the chain's bounds",
  }),
  conversation: z
    .union([z.string().min(1).max(200), z.strictObject({ id: z.string().min(1).max(200) })])
    .nullable()
    .optional()
    .meta({
      description:
        "a conversation of the caller's (`conv_...` or `{id}`, decision 0110): its items come before `input`, and the response's input and output items are added to it once it is finished; not with `previous_response_id`; 404 `CONVERSATION_NOT_FOUND`, 400 `CONVERSATION_TOO_LONG`",
    }),
  include: z.array(z.string()).nullable().optional().meta({
    description:
      "`reasoning.encrypted_content` alone (any other value is refused): reasoning items carry a Claude model's signed thinking as `encrypted_content`, to send back in a stateless tool loop (`store: false`); a kept response carries it anyway",
  }),
  reasoning: z
    .looseObject({ effort: z.string().nullable().optional() })
    .nullable()
    .optional()
    .meta({ description: '`effort` is sent as chat `reasoning_effort`; summaries are never answered' }),
  safety_identifier: z.string().nullable().optional(),
  prompt_cache_key: z.string().nullable().optional(),
  service_tier: z.string().nullable().optional(),
});
