import {
  buildOpenApiDocument,
  ErrorEnvelopeSchema,
  PLATFORM_SECURITY_SCHEMES,
  type RouteDoc,
} from '@platform/kernel';
import { LLM_QUOTA_ROUTES } from '@platform/llm-quota';
import { z } from 'zod';
import packageJson from '../package.json';
import { anthropicMessagesRouteDocs } from './routes/anthropic-messages-openapi';
import { catalogueRouteDocs } from './routes/catalogue-openapi';
import { conversationRouteDocs } from './routes/conversations-openapi';
import {
  ChatRequestSchema,
  EmbeddingsRequestSchema,
  RerankRequestSchema,
  ResponsesRequestSchema,
  TextCompletionRequestSchema,
} from './routes/schemas';
import { storedItemListSchema, storedItemSchema } from './routes/stored-items-openapi';
import { InputItemsQuerySchema, ResponseRetrieveQuerySchema } from './routes/stored-responses';

const CALLER = ['sessionJwt', 'accessToken', 'apiKey'];

/** The gateway's error envelope (spec 2.3) with its provider members. */
const GatewayErrorSchema = ErrorEnvelopeSchema.extend({
  provider: z.string().optional(),
  model: z.string().optional(),
  provider_error_type: z.string().optional(),
}).meta({ id: 'GatewayErrorEnvelope', description: 'Error envelope (spec 2.3), with the provider members' });
const error = (description: string) => ({ description, schema: GatewayErrorSchema });

const UsageSchema = z
  .looseObject({
    prompt_tokens: z.number().int(),
    completion_tokens: z.number().int(),
    total_tokens: z.number().int(),
    prompt_tokens_details: z.record(z.string(), z.unknown()).nullable().optional(),
    completion_tokens_details: z.record(z.string(), z.unknown()).nullable().optional(),
    cost: z.number().meta({ description: "addition: the request's cost from the catalogue's pricing" }),
    duration_ms: z.number().meta({ description: 'addition: time spent in the gateway, provider included' }),
    carbon: z.object({ energy_kwh: z.number(), gwp_kgco2eq: z.number() }).nullable().optional().meta({
      description: 'addition: EcoLogits-method estimate; null when the model has no parameter count',
    }),
  })
  .meta({ id: 'GatewayUsage' });

/** Provider answers pass through: documented by their well-known members, open to the rest. */
const ChatCompletionSchema = z
  .looseObject({
    id: z.string(),
    object: z.literal('chat.completion'),
    created: z.number().int(),
    model: z.string().meta({ description: 'the catalogue model that answered' }),
    choices: z.array(
      z.looseObject({
        index: z.number().int(),
        message: z.looseObject({
          role: z.string(),
          content: z.string().nullable().optional(),
          refusal: z.string().nullable().optional(),
          tool_calls: z.array(z.record(z.string(), z.unknown())).optional(),
          function_call: z.record(z.string(), z.unknown()).nullable().optional(),
          annotations: z.array(z.unknown()).optional(),
          audio: z.record(z.string(), z.unknown()).nullable().optional(),
        }),
        finish_reason: z.string().nullable(),
        logprobs: z.record(z.string(), z.unknown()).nullable().optional(),
      }),
    ),
    usage: UsageSchema,
    system_fingerprint: z.string().nullable().optional(),
    service_tier: z.string().nullable().optional(),
  })
  .meta({
    id: 'ChatCompletion',
    description: 'OpenAI chat completion (as the provider answered it) with the gateway usage',
  });

/** A legacy text completion (decision 0115), as the provider answered it, with the gateway usage. */
const TextCompletionSchema = z
  .looseObject({
    id: z.string(),
    object: z.literal('text_completion'),
    created: z.number().int(),
    model: z.string().meta({ description: 'the catalogue model that answered' }),
    choices: z.array(
      z.looseObject({
        text: z.string().meta({ description: 'the completion; the prompt first under `echo`' }),
        index: z.number().int(),
        logprobs: z.record(z.string(), z.unknown()).nullable().optional(),
        finish_reason: z.string().nullable(),
      }),
    ),
    usage: UsageSchema,
    system_fingerprint: z.string().nullable().optional(),
  })
  .meta({
    id: 'TextCompletion',
    description: "OpenAI's legacy text completion (as the provider answered it) with the gateway usage",
  });

/** The Responses API's answer, as the gateway builds it from a chat completion (decision 0106). */
const ResponseOutputItemSchema = z.union([
  z.object({
    id: z.string().meta({ description: '`msg_...`' }),
    type: z.literal('message'),
    status: z.enum(['completed', 'incomplete']),
    role: z.literal('assistant'),
    content: z.array(
      z.union([
        z.object({
          type: z.literal('output_text'),
          text: z.string(),
          annotations: z.array(z.unknown()),
          logprobs: z.array(z.unknown()),
        }),
        z.object({ type: z.literal('refusal'), refusal: z.string() }),
      ]),
    ),
  }),
  z.object({
    id: z.string().meta({ description: '`fc_...`' }),
    type: z.literal('function_call'),
    status: z.enum(['completed', 'incomplete']),
    call_id: z
      .string()
      .meta({ description: "the provider's tool call id: a `function_call_output` names it" }),
    name: z.string(),
    arguments: z.string().meta({ description: 'JSON, as the model wrote it' }),
  }),
  z
    .object({
      id: z.string().meta({ description: '`rs_...`' }),
      type: z.literal('reasoning'),
      status: z.enum(['completed', 'incomplete']),
      summary: z
        .array(z.unknown())
        .meta({ description: 'always empty: providers give the thinking, not a summary' }),
      content: z
        .array(z.object({ type: z.literal('reasoning_text'), text: z.string() }))
        .meta({ description: 'the thinking text; empty when the model thought only in a redacted block' }),
      encrypted_content: z.string().optional().meta({
        description:
          "Claude's signed thinking blocks (decision 0114), `gwtb1:` then base64url JSON, not secret (Anthropic's signature protects them): answered when `include` has `reasoning.encrypted_content` or the response is kept (stored, or in a conversation); sent back in `input`, they let Claude think on through a tool loop",
      }),
    })
    .meta({ description: "a reasoning model's thinking, before the message, when the provider sends it" }),
]);

const ResponseObjectSchema = z
  .object({
    id: z.string().meta({ description: '`resp_...`; `GET /v1/responses/{id}` answers it when stored' }),
    object: z.literal('response'),
    created_at: z.number().int(),
    status: z.enum(['completed', 'incomplete']),
    completed_at: z.number().int().optional().meta({ description: 'when the status is completed' }),
    background: z.literal(false),
    error: z.null(),
    incomplete_details: z
      .object({ reason: z.enum(['max_output_tokens', 'content_filter']) })
      .nullable()
      .meta({ description: 'the provider stopped at the length limit, or its filter' }),
    instructions: z.string().nullable(),
    max_output_tokens: z.number().int().nullable(),
    model: z.string().meta({ description: 'the catalogue model that answered' }),
    output: z.array(ResponseOutputItemSchema),
    parallel_tool_calls: z.boolean(),
    previous_response_id: z.string().nullable().meta({ description: 'the stored response it continues' }),
    reasoning: z.record(z.string(), z.unknown()).nullable().meta({ description: 'as the request said' }),
    temperature: z.number().nullable(),
    text: z
      .record(z.string(), z.unknown())
      .meta({ description: 'as the request said; `{format: {type: "text"}}` by default' }),
    tool_choice: z.unknown(),
    tools: z.array(z.record(z.string(), z.unknown())),
    top_p: z.number().nullable(),
    truncation: z.literal('disabled'),
    usage: z.object({
      input_tokens: z.number().int(),
      input_tokens_details: z.object({
        cached_tokens: z.number().int(),
        cache_write_tokens: z.number().int(),
      }),
      output_tokens: z.number().int(),
      output_tokens_details: z.object({ reasoning_tokens: z.number().int() }),
      total_tokens: z.number().int(),
      cost: z.number().meta({ description: "addition: the request's cost from the catalogue's pricing" }),
      duration_ms: z.number().meta({ description: 'addition: time spent in the gateway, provider included' }),
      carbon: z.object({ energy_kwh: z.number(), gwp_kgco2eq: z.number() }).nullable().meta({
        description: 'addition: EcoLogits-method estimate; null when the model has no parameter count',
      }),
    }),
    user: z.string().optional(),
    metadata: z.record(z.string(), z.string()).nullable().meta({ description: 'as the request said' }),
    store: z.boolean().meta({
      description:
        'whether it is stored: as the request said (default true), false when the store refused the write',
    }),
    conversation: z.object({ id: z.string() }).nullable().optional().meta({
      description:
        'the conversation it was made in (decision 0110), its turn added; null when the turn could not be added',
    }),
  })
  .meta({ id: 'Response', description: "OpenAI's Responses API response object, with the gateway usage" });

/** An input item as `GET /v1/responses/{id}/input_items` lists it: as it was sent, with its id and status. */
const ResponseInputItemSchema = storedItemSchema({
  status: z.literal('completed'),
  parts: 'its parts as sent (`input_text`, `input_image`, `output_text`...); a string as one text part',
  other: 'another item (`reasoning`) as it was sent, with an id',
});

const ResponseItemListSchema = storedItemListSchema(ResponseInputItemSchema).meta({
  id: 'ResponseItemList',
  description: "OpenAI's cursor list of a stored response's input items",
});

const ResponseDeletedSchema = z
  .object({ id: z.string(), object: z.literal('response'), deleted: z.literal(true) })
  .meta({ id: 'ResponseDeleted' });

const storedResponse = {
  400: error('INVALID_BODY (`details.issues`: a query parameter), NO_ORG_CONTEXT'),
  401: error('missing or invalid credentials'),
  403: error('`models:read` missing'),
  404: error(
    "RESPONSE_NOT_FOUND: no such response, or not the caller's (another user's or key's, another organization's), `store: false`, deleted, or past its retention",
  ),
  405: error('METHOD_NOT_ALLOWED (`Allow` names the methods)'),
};

const EmbeddingsResponseSchema = z
  .looseObject({
    object: z.literal('list'),
    data: z.array(z.looseObject({ object: z.string(), index: z.number().int(), embedding: z.unknown() })),
    model: z.string(),
    usage: UsageSchema,
  })
  .meta({ id: 'EmbeddingsResponse' });

const RerankResponseSchema = z
  .object({
    object: z.literal('rerank'),
    model: z.string(),
    results: z.array(
      z.object({
        index: z.number().int(),
        relevance_score: z.number(),
        document: z.object({ text: z.string() }).optional(),
      }),
    ),
    usage: z.object({
      prompt_tokens: z.number().int(),
      completion_tokens: z.number().int(),
      total_tokens: z.number().int(),
      cost: z.number(),
      duration_ms: z.number(),
    }),
  })
  .meta({ id: 'RerankResponse' });

const inference = {
  400: error(
    "INVALID_BODY (`details.issues`; or, with `provider` and `model`, a request the model's provider cannot take), NO_ORG_CONTEXT, or the model is of the wrong type",
  ),
  401: error('missing or invalid credentials'),
  403: error(
    "`models:read` missing; MODEL_NOT_ALLOWED (`details.scope`: `org`, or `api_key` for a model outside the calling key's `models.by_api_key` list); HEADER_POLICY_VIOLATION (`details.missing`)",
  ),
  404: error('MODEL_NOT_FOUND'),
  405: error('METHOD_NOT_ALLOWED (`Allow` names the methods)'),
  413: error('PAYLOAD_TOO_LARGE'),
  429: error(
    'RATE_LIMITED (org, user or organization API key rpm/tpm, named by `details.scope`; `retryAfter` and Retry-After), or MONTHLY_QUOTA_EXCEEDED (the month budget; `retryAfter` = seconds to the next month)',
  ),
  502: error(
    "PROVIDER_ERROR with `provider`, `model`, `provider_error_type`; `x-should-retry` says whether sending it again can help, and a provider's 429 passes its Retry-After on",
  ),
  503: error('quota settings unavailable'),
  504: error('PROVIDER_NO_RESPONSE: no answer within the model timeout'),
};

export const LLM_GATEWAY_ROUTES: RouteDoc[] = [
  {
    method: 'post',
    path: '/v1/chat/completions',
    summary: 'Chat completions (OpenAI wire format), plain or streamed',
    description:
      'With `stream: true` the answer is `text/event-stream`: `data:` chunks, then `data: [DONE]`; a provider error or the monthly token budget ends it with a `data: {"error": ...}` chunk first. `model` omitted or `"default"` uses the organization default; `"auto"` lets the organization\'s `models.routing` choose (rules on the messages or prompt tokens, or the cheapest model that can serve the request), said in `x-platform-model-routed: auto -> <model>`. Under `soft_downgrade` the answer may carry `x-platform-model-downgraded: <from> -> <to>`.',
    tags: ['completions'],
    security: CALLER,
    body: ChatRequestSchema,
    responses: { 200: { description: 'the completion', schema: ChatCompletionSchema }, ...inference },
  },
  {
    method: 'post',
    path: '/v1/completions',
    summary: "OpenAI's legacy text completions (code completion, fill-in-the-middle), plain or streamed",
    description:
      "`prompt` (a string, strings, token ids or token-id arrays) and `suffix` are counted by the gateway's tokenizer before the call (`n` and `best_of` multiply nothing, as in chat); every other member (`max_tokens`, `temperature`, `stop`, `echo`, `logprobs`, `best_of`...) reaches the provider as sent, with the provider's model name. A `best_of` below `n` is 400 INVALID_BODY before any call (OpenAI's rule). Governance, quotas, failover, the stream's monthly budget cut and accounting are chat's; the usage event names the endpoint `completions`. A model no deployment of which has the endpoint (Anthropic's API has none) is 400 before any quota or provider call. With `stream: true` the answer is `text/event-stream`: `text_completion` chunks, then `data: [DONE]`; a provider error or the monthly token budget ends it with a `data: {\"error\": ...}` chunk first, and `stream_options.include_usage` adds the usage chunk (decision 0115).",
    tags: ['completions'],
    security: CALLER,
    body: TextCompletionRequestSchema,
    responses: {
      200: { description: 'the completion', schema: TextCompletionSchema },
      ...inference,
      400: error(
        'INVALID_BODY (`details.issues`; or, with `details.provider`, a model whose provider has no text completions endpoint), NO_ORG_CONTEXT, or the model is of the wrong type',
      ),
    },
  },
  {
    method: 'post',
    path: '/v1/responses',
    summary: "OpenAI's Responses API, served through chat completions, plain or streamed",
    description:
      "`input` (a string, or messages with `input_text` / `input_image` / `output_text` parts and `function_call` / `function_call_output` items), `instructions`, function `tools`, `tool_choice`, `text.format` (`text`, `json_object`, `json_schema`), `max_output_tokens`, `temperature`, `top_p`, `parallel_tool_calls`, `user`, `metadata` (echoed, never sent to the provider). A completed or incomplete response is stored unless `store: false` (kept `LLM_GATEWAY_RESPONSES_RETENTION_DAYS` after the last response of its chain, readable by its maker alone); `previous_response_id` names one to continue: its chain's input and output items come before `input` (not its `instructions`), 404 `RESPONSE_NOT_FOUND` or 400 `RESPONSE_CHAIN_TOO_LONG` before any quota or provider call. `conversation` (decision 0110) names a conversation of the caller's instead: its items come before `input` and the finished response's input and output items are added to it (404 `CONVERSATION_NOT_FOUND`, 400 `CONVERSATION_TOO_LONG`; with `previous_response_id` 400). `background`, `prompt`, a non-empty `include`, `truncation: auto`, tools other than functions and any other member are 400 `INVALID_BODY` naming them (`details.issues`). With `stream: true` the answer is `text/event-stream` of named events (`response.created` ... `response.completed` or `response.incomplete`, each with its `sequence_number`); a provider error or the monthly token budget ends it with `response.failed` and an `error` event carrying the envelope. Quotas, governance, failover and accounting are chat's; the usage event names the endpoint `chat.completions`.",
    tags: ['completions'],
    security: CALLER,
    body: ResponsesRequestSchema,
    responses: {
      200: { description: 'the response', schema: ResponseObjectSchema },
      ...inference,
      400: error(
        "INVALID_BODY (`details.issues`; or, with `provider` and `model`, a request the model's provider cannot take), NO_ORG_CONTEXT, the model is of the wrong type, or RESPONSE_CHAIN_TOO_LONG (`details`: the limit passed)",
      ),
      404: error(
        "MODEL_NOT_FOUND, or RESPONSE_NOT_FOUND: `previous_response_id` (or a response before it) is not the caller's stored response",
      ),
    },
  },
  {
    method: 'get',
    path: '/v1/responses/:id',
    summary: 'A stored response, as it was answered',
    description: 'Not billed. `stream=true` is refused (400): a stored response is answered whole.',
    tags: ['completions'],
    security: CALLER,
    query: ResponseRetrieveQuerySchema,
    responses: { 200: { description: 'the response', schema: ResponseObjectSchema }, ...storedResponse },
  },
  {
    method: 'delete',
    path: '/v1/responses/:id',
    summary: 'Deletes a stored response',
    description:
      'Not billed. A response that continued it can no longer be continued (its chain misses one), and stays readable.',
    tags: ['completions'],
    security: CALLER,
    responses: { 200: { description: 'deleted', schema: ResponseDeletedSchema }, ...storedResponse },
  },
  {
    method: 'get',
    path: '/v1/responses/:id/input_items',
    summary: "A stored response's input items (OpenAI's cursor list)",
    description:
      'The items of the request that made it (not those of the responses it continued), each with its id; `order` `desc` by default, `limit` 1 to 100 (20), `after` an item id. Not billed.',
    tags: ['completions'],
    security: CALLER,
    query: InputItemsQuerySchema,
    responses: { 200: { description: 'the items', schema: ResponseItemListSchema }, ...storedResponse },
  },
  // OpenAI's Conversations API (decision 0110)
  ...conversationRouteDocs(CALLER, error),
  {
    method: 'post',
    path: '/v1/embeddings',
    summary: 'Embeddings (OpenAI wire format)',
    tags: ['embeddings'],
    security: CALLER,
    body: EmbeddingsRequestSchema,
    responses: {
      200: { description: 'the embeddings', schema: EmbeddingsResponseSchema },
      ...inference,
      400: error(
        'INVALID_BODY (an empty string in `input` names it, `input` or `input.N`: OpenAI refuses it), NO_ORG_CONTEXT, or INVALID_DIMENSIONS (`details.supported_dimensions`; the mock computes at most `details.max_dimensions`, 3072)',
      ),
    },
  },
  {
    method: 'post',
    path: '/v1/rerank',
    summary: 'Rerank documents by relevance to a query (best first)',
    description:
      'At most 200 documents. A native rerank provider when the model has one, else chat scoring at temperature 0 (a retry scores only the documents still unscored; `usage` counts every scoring call answered). Under `soft_downgrade` the answer may carry `x-platform-model-downgraded: <from> -> <to>`.',
    tags: ['rerank'],
    security: CALLER,
    body: RerankRequestSchema,
    responses: { 200: { description: 'the ranking', schema: RerankResponseSchema }, ...inference },
  },
  // Anthropic's Messages API (decision 0111): an organization API key may also come as `x-api-key` there
  ...anthropicMessagesRouteDocs([...CALLER, 'anthropicApiKey']),
  ...catalogueRouteDocs(error, CALLER),
];

/** The whole `{gateway_url}` root in one document: the gateway's routes and llm-quota's. */
export function llmGatewayApiDocument(serverUrl: string): Record<string, unknown> {
  return buildOpenApiDocument({
    title: 'AI platform: LLM gateway',
    version: packageJson.version,
    description:
      'The `{gateway_url}` root: OpenAI-compatible inference (served by llm-gateway) and the organization quota routes (served by llm-quota). Errors use the envelope (spec 2.3).',
    serverUrl,
    securitySchemes: {
      ...PLATFORM_SECURITY_SCHEMES,
      operatorSecret: {
        type: 'apiKey',
        in: 'header',
        name: 'x-platform-internal-secret',
        description: "the operator's credential (PLATFORM_INTERNAL_SECRET), for catalogue administration",
      },
      anthropicApiKey: {
        type: 'apiKey',
        in: 'header',
        name: 'x-api-key',
        description:
          "an organization API key as Anthropic's SDKs send their key, on `/v1/messages` and `/v1/messages/count_tokens` only",
      },
    },
    routes: [...LLM_QUOTA_ROUTES, ...LLM_GATEWAY_ROUTES],
  });
}
