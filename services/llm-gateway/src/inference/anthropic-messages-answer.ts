import { randomUUID } from 'node:crypto';
import { type Said, thinkingText, visibleText } from './answer-text';
import type { Figures } from './gateway-context';
import type { ChatChunk, ChatCompletion, Usage } from './provider-port';

/**
 * Anthropic's Messages answer from a chat completion: the `message` object, its stream events (which the
 * `@anthropic-ai/sdk`'s `messages.stream()` assembles) and its error body (decision 0111).
 */

type Json = Record<string, unknown>;

export const newMessageId = (): string => `msg_${randomUUID().replaceAll('-', '')}`;

const count = (v: unknown): number => (typeof v === 'number' && Number.isFinite(v) ? v : 0);

/**
 * Chat usage in Anthropic's terms, with the gateway's additions (`cost`, `duration_ms`, `carbon`): Anthropic's
 * `input_tokens` are those neither read from nor written to the prompt cache, which it counts apart, and its
 * `cache_creation` splits the writes by TTL (the 1-hour ones priced apart: decision 0113).
 */
export function messageUsage(usage: Usage, figures: Figures): Json {
  const details = usage.prompt_tokens_details;
  const read = count(details?.cached_tokens);
  const written = count(details?.cache_write_tokens);
  const hour = Math.max(
    0,
    Math.min(count(details?.cache_creation_token_details?.ephemeral_1h_input_tokens), written),
  );
  return {
    input_tokens: Math.max(0, usage.prompt_tokens - read - written),
    output_tokens: usage.completion_tokens,
    cache_creation_input_tokens: written,
    cache_read_input_tokens: read,
    cache_creation: { ephemeral_5m_input_tokens: written - hour, ephemeral_1h_input_tokens: hour },
    cost: figures.cost,
    duration_ms: figures.durationMs,
    carbon: figures.carbon,
  };
}

/**
 * A chat finish reason as Anthropic's `stop_reason` and `stop_sequence`. Chat has no member for the stop sequence
 * that ended an answer; vLLM and the Anthropic adapter say it as the choice's `stop_reason` (a string beside
 * `finish_reason: "stop"`), and then it is `stop_sequence`. Other providers do not say it: `end_turn`.
 */
function stopOf(
  finish: unknown,
  sequence: unknown,
  asked: readonly string[] = [],
): { stop_reason: string; stop_sequence: string | null } {
  if (finish === 'stop' && typeof sequence === 'string' && asked.includes(sequence))
    return { stop_reason: 'stop_sequence', stop_sequence: sequence };
  return { stop_reason: stopReason(finish), stop_sequence: null };
}

function stopReason(finish: unknown): string {
  switch (finish) {
    case 'length':
      return 'max_tokens';
    case 'tool_calls':
    case 'function_call':
      return 'tool_use';
    case 'content_filter':
      return 'refusal';
    default:
      return 'end_turn';
  }
}

interface ChatToolCall {
  id?: string;
  function?: { name?: string; arguments?: string };
}

/** A tool call's arguments as the `input` object Anthropic answers (an empty one when they are not JSON). */
function toolInput(args: string | undefined): Json {
  if (!args) return {};
  try {
    const input: unknown = JSON.parse(args);
    return typeof input === 'object' && input !== null && !Array.isArray(input) ? (input as Json) : {};
  } catch {
    return {};
  }
}

const toolUseId = (id: string | undefined): string =>
  id || `toolu_${randomUUID().replaceAll('-', '').slice(0, 24)}`;

/** What every state of one message shares. */
export interface MessageBase {
  /** `msg_...` */
  id: string;
  /** the catalogue model that answers */
  model: string;
  /**
   * the request asked for extended thinking: the model's thinking is answered first, as the blocks an Anthropic
   * model signed (chat's `thinking_blocks`), else as one `thinking` block of a reasoning model's thinking whose
   * `signature` is empty (the gateway signs nothing, and drops unsigned blocks sent back); otherwise it is dropped
   */
  thinking: boolean;
  /** the request's `stop_sequences`: a provider's `stop_reason` names one of them, or it is not a stop sequence */
  stopSequences?: readonly string[];
}

/** A thinking block (Anthropic's shape; the SDK accumulates `thinking_delta`s into it). */
const thinkingBlock = (thinking: string, signature = ''): Json => ({ type: 'thinking', thinking, signature });

/** Chat's `thinking_blocks` (an Anthropic model's, signed) as Anthropic's blocks; anything else is skipped. */
function signedThinking(blocks: unknown): Json[] {
  if (!Array.isArray(blocks)) return [];
  const out: Json[] = [];
  for (const block of blocks as Json[]) {
    if (block?.type === 'thinking' && typeof block.thinking === 'string')
      out.push(thinkingBlock(block.thinking, typeof block.signature === 'string' ? block.signature : ''));
    else if (block?.type === 'redacted_thinking' && typeof block.data === 'string')
      out.push({ type: 'redacted_thinking', data: block.data });
  }
  return out;
}

/** A plain chat completion as Anthropic's message: its text as a text block, its tool calls as tool_use blocks. */
export function messageOfCompletion(base: MessageBase, completion: ChatCompletion, usage: Json): Json {
  const choice = (completion.choices as Json[] | undefined)?.[0];
  const message = (choice?.message ?? {}) as Said & {
    refusal?: unknown;
    tool_calls?: unknown;
    thinking_blocks?: unknown;
  };
  const refusal = typeof message.refusal === 'string' ? message.refusal : '';
  const text = visibleText(message.content) || refusal;
  const calls = (Array.isArray(message.tool_calls) ? message.tool_calls : []) as ChatToolCall[];
  const content: Json[] = [];
  if (base.thinking) {
    content.push(...signedThinking(message.thinking_blocks));
    const thinking = content.length === 0 ? thinkingText(message) : '';
    if (thinking !== '') content.push(thinkingBlock(thinking));
  }
  // an answer with nothing in it is still one (empty) text block, as its stream is
  if (text !== '' || calls.length === 0) content.push({ type: 'text', text });
  for (const call of calls)
    content.push({
      type: 'tool_use',
      id: toolUseId(call.id),
      name: call.function?.name ?? '',
      input: toolInput(call.function?.arguments),
    });
  return {
    id: base.id,
    type: 'message',
    role: 'assistant',
    model: base.model,
    content,
    ...stopOf(choice?.finish_reason, choice?.stop_reason, base.stopSequences),
    usage,
  };
}

/** Anthropic's error type for an HTTP status (the `@anthropic-ai/sdk` reads it as `err.type`). */
function errorType(status: number): string {
  switch (status) {
    case 400:
      return 'invalid_request_error';
    case 401:
      return 'authentication_error';
    case 402:
      return 'billing_error';
    case 403:
      return 'permission_error';
    case 404:
      return 'not_found_error';
    case 413:
      return 'request_too_large';
    case 429:
      return 'rate_limit_error';
    case 504:
      return 'timeout_error';
    case 529:
      return 'overloaded_error';
    default:
      return status >= 500 ? 'api_error' : 'invalid_request_error';
  }
}

/**
 * The gateway's envelope in Anthropic's error shape: `{type: "error", error: {type, message, details},
 * request_id}`. `details.error_code` is the envelope's code (the SDK's `err.errorCode`); the envelope's details and
 * its other members (`provider`, `model`, `retryAfter`…) ride in `details` beside it.
 */
export function anthropicError(envelope: Json): Json {
  const {
    error: name,
    message,
    status,
    requestId,
    code,
    details,
    ...rest
  } = envelope as Json & { details?: Json };
  return {
    type: 'error',
    error: {
      type: errorType(typeof status === 'number' ? status : 500),
      message: typeof message === 'string' ? message : 'The request failed',
      details: { error_code: code ?? name, ...(details ?? {}), ...rest },
    },
    request_id: requestId ?? null,
  };
}

interface OpenBlock {
  index: number;
  kind: 'thinking' | 'redacted_thinking' | 'text' | 'tool_use';
}

/**
 * A chat stream's chunks as Anthropic's events: `message_start`, then per content block `content_block_start`,
 * its `thinking_delta`s (and `signature_delta`), `text_delta`s or `input_json_delta`s and `content_block_stop`, then `message_delta` (the
 * stop reason and the usage) and `message_stop`; a cut stream ends with an `error` event instead. Blocks are written
 * one after the other, as providers stream them: thinking (when asked for), text, then each tool call.
 */
export class MessagesEventWriter {
  private block: OpenBlock | null = null;
  private blocks = 0;
  /** whether a text or tool_use block was written (thinking alone is no answer) */
  private answered = false;
  /** the content block of each chat tool call, by its chunk index */
  private readonly calls = new Map<number, number>();
  private finishReason: unknown = null;
  /** the stop sequence that ended the answer, when the provider says it (vLLM's and the adapter's `stop_reason`) */
  private stopSequence: unknown = null;

  constructor(
    private readonly base: MessageBase,
    /** writes one named event (serialised at once) */
    private readonly send: (type: string, event: Json) => void,
  ) {}

  /**
   * `message_start` with an empty message. Its usage is zero: the figures come with `message_delta`, whose
   * `input_tokens` the SDK takes over the start's.
   */
  start(): void {
    this.send('message_start', {
      type: 'message_start',
      message: {
        id: this.base.id,
        type: 'message',
        role: 'assistant',
        model: this.base.model,
        content: [],
        stop_reason: null,
        stop_sequence: null,
        usage: { input_tokens: 0, output_tokens: 0 },
      },
    });
  }

  chunk(chunk: ChatChunk): void {
    const choice = chunk.choices?.[0];
    if (!choice) return;
    const delta = choice.delta as (Said & { refusal?: unknown; tool_calls?: unknown }) | undefined;
    if (this.base.thinking) {
      const thinking = thinkingText(delta);
      if (thinking !== '') this.think(thinking);
      for (const block of signedThinking(
        (delta as { thinking_blocks?: unknown } | undefined)?.thinking_blocks,
      ))
        this.signed(block);
    }
    const text = visibleText(delta?.content);
    if (text !== '') this.text(text);
    if (typeof delta?.refusal === 'string' && delta.refusal !== '') this.text(delta.refusal);
    if (Array.isArray(delta?.tool_calls))
      for (const call of delta.tool_calls as Array<ChatToolCall & { index?: number }>) this.toolCall(call);
    if (choice.finish_reason) this.finishReason = choice.finish_reason;
    const sequence = (choice as { stop_reason?: unknown }).stop_reason;
    if (typeof sequence === 'string') this.stopSequence = sequence;
  }

  /** The answer is whole: its last block closed, then `message_delta` with the usage and `message_stop`. */
  finish(usage: Json): void {
    // an answer with nothing in it is still one (empty) text block, as a plain answer's is
    if (!this.answered) this.open('text', { type: 'text', text: '' });
    this.close();
    this.send('message_delta', {
      type: 'message_delta',
      delta: stopOf(this.finishReason, this.stopSequence, this.base.stopSequences),
      // the whole message's counters (the SDK takes them over message_start's), with the gateway's additions
      usage,
    });
    this.send('message_stop', { type: 'message_stop' });
  }

  /** The stream was cut (the monthly budget, a provider failure): Anthropic's `error` event, which the SDK raises. */
  fail(envelope: Json): void {
    this.send('error', anthropicError(envelope));
  }

  private open(kind: OpenBlock['kind'], contentBlock: Json): number {
    this.close();
    const index = this.blocks++;
    this.block = { index, kind };
    if (kind !== 'thinking' && kind !== 'redacted_thinking') this.answered = true;
    this.send('content_block_start', { type: 'content_block_start', index, content_block: contentBlock });
    return index;
  }

  private close(): void {
    if (!this.block) return;
    this.send('content_block_stop', { type: 'content_block_stop', index: this.block.index });
    this.block = null;
  }

  private think(thinking: string): void {
    const index =
      this.block?.kind === 'thinking' ? this.block.index : this.open('thinking', thinkingBlock(''));
    this.send('content_block_delta', {
      type: 'content_block_delta',
      index,
      delta: { type: 'thinking_delta', thinking },
    });
  }

  /**
   * A thinking block an Anthropic model signed, whole (chat's stream gives each once it is): the open thinking
   * block, whose text has streamed, gets its signature and closes; a redacted one is a block of its own.
   */
  private signed(block: Json): void {
    if (block.type === 'redacted_thinking') {
      this.open('redacted_thinking', block);
      this.close();
      return;
    }
    let index = this.block?.kind === 'thinking' ? this.block.index : null;
    if (index === null) {
      index = this.open('thinking', thinkingBlock(''));
      if (block.thinking !== '')
        this.send('content_block_delta', {
          type: 'content_block_delta',
          index,
          delta: { type: 'thinking_delta', thinking: block.thinking },
        });
    }
    if (block.signature !== '')
      this.send('content_block_delta', {
        type: 'content_block_delta',
        index,
        delta: { type: 'signature_delta', signature: block.signature },
      });
    this.close();
  }

  private text(text: string): void {
    const index =
      this.block?.kind === 'text' ? this.block.index : this.open('text', { type: 'text', text: '' });
    this.send('content_block_delta', {
      type: 'content_block_delta',
      index,
      delta: { type: 'text_delta', text },
    });
  }

  private toolCall(delta: ChatToolCall & { index?: number }): void {
    const key = delta.index ?? 0;
    let index = this.calls.get(key);
    if (index === undefined) {
      index = this.open('tool_use', {
        type: 'tool_use',
        id: toolUseId(delta.id),
        name: delta.function?.name ?? '',
        input: {},
      });
      this.calls.set(key, index);
    }
    const args = delta.function?.arguments;
    if (args)
      this.send('content_block_delta', {
        type: 'content_block_delta',
        index,
        delta: { type: 'input_json_delta', partial_json: args },
      });
  }
}
