import type { RouteDoc } from '@platform/kernel';
import { z } from 'zod';
import {
  COUNT_TOKENS_PATH,
  CountTokensRequestSchema,
  MESSAGES_PATH,
  MessagesRequestSchema,
} from './anthropic-messages';

/** Anthropic's error body, which these routes answer instead of the envelope (decision 0111). */
export const AnthropicErrorSchema = z
  .object({
    type: z.literal('error'),
    error: z.object({
      type: z.string().meta({
        description:
          "Anthropic's error type for the status: invalid_request_error, authentication_error, permission_error, not_found_error, request_too_large, rate_limit_error, api_error, timeout_error",
      }),
      message: z.string(),
      details: z.looseObject({ error_code: z.string() }).meta({
        description:
          "`error_code` is the envelope's code (`MODEL_NOT_FOUND`, `RATE_LIMITED`…), beside the envelope's details and members (`provider`, `model`, `retryAfter`…)",
      }),
    }),
    request_id: z.string().nullable(),
  })
  .meta({ id: 'AnthropicError', description: "Anthropic's error shape, carrying the gateway's envelope" });

const error = (description: string) => ({ description, schema: AnthropicErrorSchema });

/** The answer (`z.object`: a parse drops what the document does not list, which the tests compare against). */
export const AnthropicMessageSchema = z
  .object({
    id: z.string().meta({ description: '`msg_...`' }),
    type: z.literal('message'),
    role: z.literal('assistant'),
    model: z.string().meta({ description: 'the catalogue model that answered' }),
    content: z.array(
      z.union([
        z.object({ type: z.literal('text'), text: z.string() }),
        z.object({ type: z.literal('thinking'), thinking: z.string(), signature: z.string() }).meta({
          description:
            "the model's thinking, when the request asked for thinking (first): a Claude model's signed, another reasoning model's with an empty signature",
        }),
        z.object({ type: z.literal('redacted_thinking'), data: z.string() }).meta({
          description:
            "a Claude model's thinking its provider encrypted, when the request asked for thinking",
        }),
        z.object({
          type: z.literal('tool_use'),
          id: z.string(),
          name: z.string(),
          input: z.record(z.string(), z.unknown()),
        }),
      ]),
    ),
    stop_reason: z.enum(['end_turn', 'max_tokens', 'tool_use', 'refusal', 'stop_sequence']),
    stop_sequence: z.string().nullable().meta({
      description:
        'the stop sequence that ended the answer, when the provider says which (Anthropic models, vLLM); else null',
    }),
    usage: z.object({
      input_tokens: z.number().int(),
      output_tokens: z.number().int(),
      cache_creation_input_tokens: z.number().int(),
      cache_read_input_tokens: z.number().int(),
      cache_creation: z
        .object({ ephemeral_5m_input_tokens: z.number().int(), ephemeral_1h_input_tokens: z.number().int() })
        .meta({ description: 'the cache writes by TTL (the 1-hour ones priced apart: decision 0113)' }),
      cost: z.number().meta({ description: "addition: the request's cost from the catalogue's pricing" }),
      duration_ms: z.number().meta({ description: 'addition: time spent in the gateway, provider included' }),
      carbon: z.object({ energy_kwh: z.number(), gwp_kgco2eq: z.number() }).nullable(),
    }),
  })
  .meta({ id: 'AnthropicMessage', description: "Anthropic's message object, with the gateway usage" });

const refusals = {
  400: error(
    'INVALID_BODY (`details.issues`; or, with `provider` and `model`, a request the model provider cannot take), NO_ORG_CONTEXT, or the model is of the wrong type',
  ),
  401: error('missing or invalid credentials (the edge answers it in the envelope)'),
  403: error('`models:read` missing; MODEL_NOT_ALLOWED; HEADER_POLICY_VIOLATION'),
  404: error('MODEL_NOT_FOUND'),
  413: error('PAYLOAD_TOO_LARGE'),
};

/** The Messages API's routes in the `{gateway_url}` document. */
export function anthropicMessagesRouteDocs(security: string[]): RouteDoc[] {
  return [
    {
      method: 'post',
      path: MESSAGES_PATH,
      summary: "Anthropic's Messages API, served through chat completions on every model, plain or streamed",
      description:
        "For the `@anthropic-ai/sdk` and Claude Code (`baseURL` the gateway root). Text, image, tool_use and tool_result blocks, `system`, client `tools`, `tool_choice`, `stop_sequences`, `temperature`, `top_p`, `metadata.user_id`, structured outputs; `top_k` is accepted and not sent; `thinking` and the signed thinking blocks of assistant turns reach Claude models as they came (decision 0114); `cache_control` breakpoints (on system, text, image, tool_use and tool_result blocks, tools, and the request's own on its last block; at most 4, each `{type: 'ephemeral', ttl?: '5m' | '1h'}`, else 400) reach an Anthropic model on the same blocks and are dropped for other providers (decision 0113); server tools, two tools of one name (Anthropic's rule), `mcp_servers`, `container` and any other member are 400 naming them. With `stream: true`, Anthropic events (`message_start` … `message_stop`); a provider error or the monthly token budget ends the stream with an `error` event. Quotas, governance, failover and accounting are chat's; the usage event names the endpoint `chat.completions`. Errors are in Anthropic's shape.",
      tags: ['completions'],
      security,
      body: MessagesRequestSchema,
      responses: {
        200: { description: 'the message', schema: AnthropicMessageSchema },
        ...refusals,
        429: error('RATE_LIMITED or MONTHLY_QUOTA_EXCEEDED (`retry-after`)'),
        502: error('PROVIDER_ERROR (`x-should-retry` says whether sending it again can help)'),
        503: error('quota settings unavailable'),
        504: error('PROVIDER_NO_RESPONSE'),
      },
    },
    {
      method: 'post',
      path: COUNT_TOKENS_PATH,
      summary: "A Messages request's prompt tokens, counted by the gateway's tokenizer",
      description:
        'The count the gateway reserves against the quotas before a call (o200k_base with chat overheads), whatever the model; an estimate for Claude models. Not billed, no quota taken. The request is checked as a message is, with the same 400 naming each member; `max_tokens`, `stop_sequences`, `temperature`, `top_p`, `top_k`, `metadata` and `stream` (generation only) are ignored unchecked.',
      tags: ['completions'],
      security,
      body: CountTokensRequestSchema,
      responses: {
        200: {
          description: 'the count',
          schema: z.object({ input_tokens: z.number().int() }).meta({ id: 'AnthropicTokenCount' }),
        },
        ...refusals,
      },
    },
  ];
}
