import { envelopeOf, jsonBody, parseInput, toAppError } from '@platform/kernel';
import type { ErrorRequestHandler, Response, Router } from 'express';
import { z } from 'zod';
import type { CatalogueModel } from '../catalogue/catalogue';
import {
  anthropicError,
  type MessageBase,
  MessagesEventWriter,
  messageOfCompletion,
  messageUsage,
  newMessageId,
} from '../inference/anthropic-messages-answer';
import { chatRequestOfMessages, refuseUnsupportedMessages } from '../inference/anthropic-messages-request';
import { authorizeInference, type GatewayContext } from '../inference/gateway-context';
import { AUTO_MODEL, apiKeyIdOf, resolveModel } from '../inference/governance';
import { countChatPromptTokens } from '../inference/prompt-tokens';
import type { ChatChunk, ChatRequest } from '../inference/provider-port';
import { requestIdOf } from './client-abort';
import {
  type Answered,
  CHAT_COMPLETIONS,
  type CompletionWire,
  runCompletion,
  type StreamEnd,
  type StreamSink,
} from './completion-flow';
import { endNamedEventStream, startEventStream, writeNamedEvent } from './sse';

export const MESSAGES_PATH = '/v1/messages';
export const COUNT_TOKENS_PATH = '/v1/messages/count_tokens';

/** A content block: its `type` is read here, the rest by the translation (anthropic-messages-request.ts). */
const BlockSchema = z.looseObject({ type: z.string().min(1) });

const MessageParamSchema = z.looseObject({
  role: z.enum(['user', 'assistant']),
  content: z.union([z.string(), z.array(BlockSchema)]),
});

const TextBlocks = z.union([
  z.string(),
  z.array(z.looseObject({ type: z.literal('text'), text: z.string() })),
]);

const ToolSchema = z.looseObject({
  type: z.string().nullable().optional(),
  name: z.string().min(1).max(128),
  description: z.string().optional(),
  input_schema: z.record(z.string(), z.unknown()).optional(),
});

const ToolChoiceSchema = z
  .looseObject({
    type: z.enum(['auto', 'any', 'tool', 'none']),
    name: z.string().min(1).optional(),
    disable_parallel_tool_use: z.boolean().optional(),
  })
  .refine((choice) => choice.type !== 'tool' || choice.name !== undefined, {
    message: "a tool_choice of type 'tool' needs its name",
    path: ['name'],
  });

/** What `messages`, `system`, `tools` and `tool_choice` are in both requests. */
const conversation = {
  model: z.string().min(1).max(200),
  messages: z.array(MessageParamSchema).min(1, 'at least one message').meta({
    description:
      'user and assistant turns: a string, or blocks (text, image by base64 or url, tool_use, tool_result with text or image content and is_error; thinking blocks of assistant turns reach Claude models, signed, as they came)',
  }),
  system: TextBlocks.optional().meta({
    description:
      'a string or text blocks (`cache_control` kept: an Anthropic model gets it on the same text; 0113)',
  }),
  tools: z.array(ToolSchema).optional(),
  tool_choice: ToolChoiceSchema.optional(),
};

/**
 * Anthropic's Messages request as the gateway serves it (translated to chat completions): the members it reads
 * are checked here; `refuseUnsupportedMessages` refuses those it does not serve, naming them.
 */
export const MessagesRequestSchema = z.looseObject({
  ...conversation,
  max_tokens: z.number().int().positive(),
  stop_sequences: z.array(z.string()).optional(),
  temperature: z.number().min(0).max(1).optional(),
  top_p: z.number().min(0).max(1).optional(),
  top_k: z.number().int().nonnegative().optional().meta({ description: 'accepted, not sent: chat has none' }),
  metadata: z
    .looseObject({ user_id: z.string().max(256).nullable().optional() })
    .optional()
    .meta({ description: '`user_id` is sent as chat `user`' }),
  stream: z.boolean().optional(),
  thinking: z
    .looseObject({ type: z.string().min(1), budget_tokens: z.number().int().positive().optional() })
    .optional()
    .meta({
      description:
        "sent to Claude models as it is (decision 0114), never to others; unless `disabled`, the model's thinking is answered as `thinking` blocks first (a Claude model's signed)",
    }),
});

/**
 * Members only generation reads. Anthropic's `count_tokens` request has none of them; sent there (a client counting
 * the request it is about to send), they are ignored unchecked, and the rest is checked as a message's.
 */
const GENERATION_ONLY = {
  max_tokens: true,
  stop_sequences: true,
  temperature: true,
  top_p: true,
  top_k: true,
  metadata: true,
  stream: true,
} as const;

/** `count_tokens`: a Messages request without what only generation reads (`max_tokens`…), checked alike. */
export const CountTokensRequestSchema = MessagesRequestSchema.omit(GENERATION_ONLY);

type Json = Record<string, unknown>;

/**
 * A request of either route checked and translated to chat, by the same rules so that a body refused by one is
 * refused by the other with the same 400 (decision 0111): the members the gateway does not serve, the schema's
 * shapes, then the translation's (each issue naming its member). `count_tokens` drops the generation-only members
 * first, unread.
 */
function checkedRequest(raw: unknown, counting: boolean): { body: Json; chat: ChatRequest } {
  const request =
    counting && typeof raw === 'object' && raw !== null && !Array.isArray(raw)
      ? Object.fromEntries(Object.entries(raw).filter(([key]) => !Object.hasOwn(GENERATION_ONLY, key)))
      : raw;
  refuseUnsupportedMessages(request);
  const body = parseInput(counting ? CountTokensRequestSchema : MessagesRequestSchema, request) as Json;
  return { body, chat: chatRequestOfMessages(body) };
}

/**
 * `POST /v1/messages`: Anthropic's Messages API translated to the gateway's chat path, so governance, quotas, the
 * stream's budget cut, failover and accounting are chat's own on every completion model; `POST
 * /v1/messages/count_tokens` counts a request's prompt with the gateway's tokenizer, unbilled (decision 0111).
 * Every error the gateway answers on them is in Anthropic's shape, so the `@anthropic-ai/sdk` reads it.
 */
export function mountAnthropicMessages(router: Router, ctx: GatewayContext): void {
  router.post(MESSAGES_PATH, (req, res) => {
    res.setHeader('request-id', requestIdOf(req));
    const { body, chat } = checkedRequest(jsonBody(req) ?? {}, false);
    const thinking = (body.thinking as { type?: unknown } | undefined)?.type;
    const wire = new MessagesWire(
      thinking !== undefined && thinking !== 'disabled',
      (body.stop_sequences as string[] | undefined) ?? [],
    );
    return runCompletion(ctx, req, res, chat, wire);
  });

  router.post(COUNT_TOKENS_PATH, async (req, res) => {
    res.setHeader('request-id', requestIdOf(req));
    const { body, chat } = checkedRequest(jsonBody(req) ?? {}, true);
    // the model is resolved as a message's would be (unknown 404, outside the org's governance 403), as
    // Anthropic's count_tokens refuses an unknown model; nothing is admitted, so no quota is taken
    const { principal, orgSlug } = authorizeInference(req);
    const settings = await ctx.orgSettings.get(orgSlug);
    const tokens = () => countChatPromptTokens(chat);
    // `auto` is routed as the message would be (decision 0120): by what the request holds
    const auto = body.model === AUTO_MODEL ? tokens() : undefined;
    resolveModel(body.model as string, 'completion', settings, ctx.catalogue, {
      apiKeyId: apiKeyIdOf(principal),
      traits: auto !== undefined ? CHAT_COMPLETIONS.traits(chat, auto) : undefined,
    });
    res.json({ input_tokens: auto ?? tokens() });
  });

  router.use([MESSAGES_PATH, COUNT_TOKENS_PATH], anthropicErrors(ctx));
}

/**
 * The kernel's error answer (status, `retry-after`, `x-should-retry`, the 5xx logged) with Anthropic's body:
 * `{type: "error", error: {type, message, details: {error_code, ...}}, request_id}`.
 */
function anthropicErrors(ctx: GatewayContext): ErrorRequestHandler {
  return (err, req, res, _next) => {
    const envelope = envelopeOf(err, req.id);
    if (envelope.status >= 500) ctx.logger.error({ err }, 'request failed');
    if (res.headersSent) {
      res.destroy();
      return;
    }
    // the SDK's `err.requestID` (the route sets it too, for its answers; a refusal before it comes here alone)
    res.setHeader('request-id', requestIdOf(req));
    if (envelope.retryAfter !== undefined) res.setHeader('retry-after', String(envelope.retryAfter));
    const retryable = toAppError(err)?.retryable;
    if (retryable !== undefined) res.setHeader('x-should-retry', String(retryable));
    res.status(envelope.status).json(anthropicError(envelope));
  };
}

/** Anthropic's message, plain or as its events, from the chat path's answer. */
class MessagesWire implements CompletionWire {
  readonly endpoint = 'messages';
  private readonly id = newMessageId();

  constructor(
    /** the request asked for extended thinking, so a reasoning model's is answered */
    private readonly thinking: boolean,
    /** the request's stop sequences, which a provider may name as the one that ended the answer */
    private readonly stopSequences: readonly string[],
  ) {}

  private base(model: CatalogueModel): MessageBase {
    return { id: this.id, model: model.model_id, thinking: this.thinking, stopSequences: this.stopSequences };
  }

  respond(res: Response, { completion, model, usage, figures, headers }: Answered): void {
    res.set(headers).json(messageOfCompletion(this.base(model), completion, messageUsage(usage, figures)));
  }

  stream(res: Response): StreamSink {
    return new MessagesStream(res, (model) => this.base(model));
  }
}

/** Anthropic's named events from `message_start` to `message_stop`, or to an `error` event when cut. */
class MessagesStream implements StreamSink {
  private writer: MessagesEventWriter | null = null;

  constructor(
    private readonly res: Response,
    private readonly base: (model: CatalogueModel) => MessageBase,
  ) {}

  open(model: CatalogueModel, headers: Record<string, string>): void {
    startEventStream(this.res, headers);
    this.writer = new MessagesEventWriter(this.base(model), (type, event) =>
      writeNamedEvent(this.res, type, event),
    );
    this.writer.start();
  }

  chunk(chunk: ChatChunk): void {
    this.writer?.chunk(chunk);
  }

  close({ outcome, error, usage, figures }: StreamEnd): void {
    if (error) this.writer?.fail(error);
    else if (outcome === 'success') this.writer?.finish(messageUsage(usage, figures));
    endNamedEventStream(this.res);
  }
}
