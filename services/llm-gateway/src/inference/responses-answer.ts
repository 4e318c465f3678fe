import { randomUUID } from 'node:crypto';
import { type Said, thinkingText, visibleText } from './answer-text';
import type { Figures } from './gateway-context';
import type { ChatChunk, ChatCompletion, Usage } from './provider-port';
import type { ResponseEcho } from './responses-request';
import { encodeThinking, type ThinkingBlock, thinkingBlocksIn } from './responses-thinking';

/**
 * The Responses API's answer from a chat completion: the `response` object, and for a stream the event
 * sequence the openai SDK's `responses.stream()` assembles (decision 0106).
 */

type Json = Record<string, unknown>;

/** What every state of one response shares. */
export interface ResponseBase {
  /** `resp_...` */
  id: string;
  /** unix seconds */
  createdAt: number;
  /** the catalogue model that answers */
  model: string;
  echo: ResponseEcho;
  /**
   * reasoning items carry Claude's signed thinking blocks as `encrypted_content`: the request's `include` asked
   * for it, or the response is kept (stored, or a conversation's turn) and a later turn reads it back
   */
  encryptedReasoning: boolean;
}

type Status = 'in_progress' | 'completed' | 'incomplete' | 'failed';
type ItemStatus = 'in_progress' | 'completed' | 'incomplete';

export const newId = (prefix: 'resp' | 'msg' | 'rs' | 'fc' | 'fco' | 'call' | 'item'): string =>
  `${prefix}_${randomUUID().replaceAll('-', '')}`;

/** A chat finish reason as the response's status: cut by the length limit or a filter is `incomplete`. */
function ending(finish: unknown): { status: 'completed' | 'incomplete'; incomplete_details: Json | null } {
  if (finish === 'length')
    return { status: 'incomplete', incomplete_details: { reason: 'max_output_tokens' } };
  if (finish === 'content_filter')
    return { status: 'incomplete', incomplete_details: { reason: 'content_filter' } };
  return { status: 'completed', incomplete_details: null };
}

const count = (v: unknown): number => (typeof v === 'number' && Number.isFinite(v) ? v : 0);

/** Chat usage in the Responses API's names, with the gateway's additions (`cost`, `duration_ms`, `carbon`). */
export function responseUsage(usage: Usage, details: Json, figures: Figures): Json {
  // the prompt's cache reads and writes, as the provider reported them (Anthropic's translated)
  const input = (usage.prompt_tokens_details ?? details.prompt_tokens_details) as Json | undefined;
  const output = details.completion_tokens_details as Json | undefined;
  return {
    input_tokens: usage.prompt_tokens,
    input_tokens_details: {
      cached_tokens: count(input?.cached_tokens),
      cache_write_tokens: count(input?.cache_write_tokens),
    },
    output_tokens: usage.completion_tokens,
    output_tokens_details: { reasoning_tokens: count(output?.reasoning_tokens) },
    total_tokens: usage.total_tokens,
    cost: figures.cost,
    duration_ms: figures.durationMs,
    carbon: figures.carbon,
  };
}

/** The response object in one of its states (`output_text` is the SDKs' own convenience, not sent). */
function responseObject(
  base: ResponseBase,
  state: {
    status: Status;
    output: Json[];
    usage: Json | null;
    error?: Json | null;
    incomplete_details?: Json | null;
    completedAt?: number;
  },
): Json {
  const { echo } = base;
  return {
    id: base.id,
    object: 'response',
    created_at: base.createdAt,
    status: state.status,
    ...(state.completedAt !== undefined ? { completed_at: state.completedAt } : {}),
    background: false,
    error: state.error ?? null,
    incomplete_details: state.incomplete_details ?? null,
    instructions: echo.instructions,
    max_output_tokens: echo.max_output_tokens,
    model: base.model,
    output: state.output,
    parallel_tool_calls: echo.parallel_tool_calls,
    previous_response_id: echo.previous_response_id,
    reasoning: echo.reasoning,
    temperature: echo.temperature,
    text: echo.text,
    tool_choice: echo.tool_choice,
    tools: echo.tools,
    top_p: echo.top_p,
    truncation: 'disabled',
    usage: state.usage,
    ...(echo.user !== undefined ? { user: echo.user } : {}),
    metadata: echo.metadata,
    store: echo.store,
  };
}

const outputText = (text: string): Json => ({ type: 'output_text', text, annotations: [], logprobs: [] });

/**
 * The thinking as the Responses API's `reasoning` item, before the message (`summary`: the model wrote none), with
 * its signed blocks as `encrypted_content` when there are any to carry.
 */
const reasoningItem = (
  status: ItemStatus,
  text: string,
  blocks: readonly ThinkingBlock[] = [],
): Json & { content: Json[] } => ({
  id: newId('rs'),
  type: 'reasoning',
  status,
  summary: [],
  content: text === '' ? [] : [{ type: 'reasoning_text', text }],
  ...(blocks.length > 0 ? { encrypted_content: encodeThinking(blocks) } : {}),
});

interface ChatToolCall {
  id?: string;
  type?: string;
  function?: { name?: string; arguments?: string };
}

/** A plain chat completion as the response object: its text (or refusal) as a message, its tool calls as items. */
export function fromChatCompletion(
  base: ResponseBase,
  completion: ChatCompletion,
  usage: Json,
  completedAt: number,
): Json {
  const choice = (completion.choices as Array<Json> | undefined)?.[0];
  const message = (choice?.message ?? {}) as Said & {
    refusal?: unknown;
    tool_calls?: unknown;
    thinking_blocks?: unknown;
  };
  const { status, incomplete_details } = ending(choice?.finish_reason);
  const itemStatus: ItemStatus = status === 'completed' ? 'completed' : 'incomplete';
  // a `thinking` part is not the answer: `output_text` holds the text parts alone
  const text = visibleText(message.content);
  const refusal = typeof message.refusal === 'string' && message.refusal !== '' ? message.refusal : null;
  const calls = (Array.isArray(message.tool_calls) ? message.tool_calls : []) as ChatToolCall[];
  const thinking = thinkingText(message);
  // a redacted block alone has no text: its item is there to carry it
  const blocks = base.encryptedReasoning ? thinkingBlocksIn(message.thinking_blocks) : [];
  // the thinking is whole once the model answered after it, as a stream closes it then
  const thought: ItemStatus = text !== '' || refusal !== null || calls.length > 0 ? 'completed' : itemStatus;
  const output: Json[] =
    thinking !== '' || blocks.length > 0 ? [reasoningItem(thought, thinking, blocks)] : [];
  if (text !== '' || refusal !== null || calls.length === 0)
    output.push({
      id: newId('msg'),
      type: 'message',
      status: itemStatus,
      role: 'assistant',
      content: [
        ...(text !== '' || refusal === null ? [outputText(text)] : []),
        ...(refusal !== null ? [{ type: 'refusal', refusal }] : []),
      ],
    });
  for (const call of calls)
    output.push({
      id: newId('fc'),
      type: 'function_call',
      status: itemStatus,
      call_id: call.id || newId('call'),
      name: call.function?.name ?? '',
      arguments: call.function?.arguments ?? '',
    });
  return responseObject(base, {
    status,
    output,
    usage,
    incomplete_details,
    ...(status === 'completed' ? { completedAt } : {}),
  });
}

/** `response.failed`'s error code for the gateway's envelope (the SDK's `ResponseError.code` names). */
const failureCode = (envelope: Json): string =>
  envelope.status === 429 ? 'rate_limit_exceeded' : 'server_error';

interface OpenMessage {
  item: Json & { content: Json[] };
  index: number;
  /** the content part being written, when one is open */
  part: Json | null;
}

interface OpenReasoning {
  item: Json & { content: Json[] };
  index: number;
  /** its one `reasoning_text` part, opened by the first text (a redacted block alone has none) */
  part: { type: 'reasoning_text'; text: string } | null;
  /** the signed blocks that have arrived whole, its `encrypted_content` when it is done */
  blocks: ThinkingBlock[];
}

interface OpenCall {
  item: Json & { arguments: string };
  index: number;
}

/**
 * A chat stream's chunks as the Responses API's events, each with its `sequence_number`: `response.created` and
 * `response.in_progress`, then per output item `output_item.added`, its content part (`reasoning_text` for the
 * thinking, which comes before the message) or argument deltas and their `done` events, `output_item.done`, and
 * one terminal event: `response.completed`, `response.incomplete` (the length limit, a filter) or
 * `response.failed` followed by an `error` event with the gateway's envelope.
 * Items are written one after the other, as providers stream them; `output` keeps them as they stand.
 */
export class ResponsesEventWriter {
  private sequence = 0;
  private readonly output: Json[] = [];
  private message: OpenMessage | null = null;
  private reasoning: OpenReasoning | null = null;
  private call: OpenCall | null = null;
  /** the items of the chat tool calls, by their chunk index */
  private readonly calls = new Map<number, OpenCall>();
  private finishReason: unknown = null;

  constructor(
    private readonly base: ResponseBase,
    /** writes one event (it is serialised at once: later changes to its objects do not reach it) */
    private readonly send: (type: string, event: Json) => void,
  ) {}

  private emit(type: string, fields: Json): void {
    this.send(type, { type, sequence_number: this.sequence++, ...fields });
  }

  start(): void {
    const response = responseObject(this.base, { status: 'in_progress', output: [], usage: null });
    this.emit('response.created', { response });
    this.emit('response.in_progress', { response });
  }

  chunk(chunk: ChatChunk): void {
    const choice = chunk.choices?.[0];
    if (!choice) return;
    const delta = choice.delta as
      | (Said & { refusal?: unknown; tool_calls?: unknown; thinking_blocks?: unknown })
      | undefined;
    const thinking = thinkingText(delta);
    if (thinking !== '') this.think(thinking);
    // each signed block once whole, after its text (a redacted one as it starts, without text)
    if (delta?.thinking_blocks !== undefined && this.base.encryptedReasoning)
      this.thinkingBlocks(thinkingBlocksIn(delta.thinking_blocks));
    const text = visibleText(delta?.content);
    if (text !== '') this.text('output_text', text);
    if (typeof delta?.refusal === 'string' && delta.refusal !== '') this.text('refusal', delta.refusal);
    if (Array.isArray(delta?.tool_calls))
      for (const call of delta.tool_calls as Array<ChatToolCall & { index?: number }>) this.toolCall(call);
    if (choice.finish_reason) this.finishReason = choice.finish_reason;
  }

  /** The answer is whole: its items are closed, then `response.completed` (or `response.incomplete`). */
  complete(usage: Json, completedAt: number): void {
    this.end(this.finish(usage, completedAt));
  }

  /**
   * The answer is whole: its items are closed (their `done` events sent) and the finished response object
   * answered, its terminal event not sent yet (`end`): what is kept of it is stored first.
   */
  finish(usage: Json, completedAt: number): Json {
    const { status, incomplete_details } = ending(this.finishReason);
    const itemStatus: ItemStatus = status === 'completed' ? 'completed' : 'incomplete';
    // an answer with nothing in it (but thinking) is still a message, as a plain answer's is
    if (this.output.every((item) => item.type === 'reasoning')) {
      this.closeReasoning(itemStatus);
      this.openPart(this.openMessage(), 'output_text');
    }
    this.closeItems(itemStatus);
    return responseObject(this.base, {
      status,
      output: this.output,
      usage,
      incomplete_details,
      ...(status === 'completed' ? { completedAt } : {}),
    });
  }

  /** `response.completed` or `response.incomplete` with the object `finish` answered. */
  end(response: Json): void {
    this.emit(`response.${String(response.status)}`, { response });
  }

  /** The stream was cut (the monthly budget, a provider failure): `response.failed`, then the envelope. */
  fail(envelope: Json, usage: Json): void {
    this.closeItems('incomplete');
    const message = typeof envelope.message === 'string' ? envelope.message : 'The response failed';
    this.emit('response.failed', {
      response: responseObject(this.base, {
        status: 'failed',
        output: this.output,
        usage,
        error: { code: failureCode(envelope), message },
      }),
    });
    // a top-level `error` member makes the SDKs raise it, as a chat stream's error chunk does
    this.emit('error', {
      code: typeof envelope.code === 'string' ? envelope.code : null,
      message,
      param: null,
      error: envelope,
    });
  }

  private openMessage(): OpenMessage {
    if (this.message) return this.message;
    const item = { id: newId('msg'), type: 'message', status: 'in_progress', role: 'assistant', content: [] };
    this.message = { item, index: this.output.length, part: null };
    this.output.push(item);
    this.emit('response.output_item.added', { output_index: this.message.index, item });
    return this.message;
  }

  private openPart(message: OpenMessage, kind: 'output_text' | 'refusal'): Json {
    if (message.part?.type === kind) return message.part;
    this.closePart(message);
    const part = kind === 'output_text' ? outputText('') : { type: 'refusal', refusal: '' };
    message.part = part;
    message.item.content.push(part);
    this.emit('response.content_part.added', {
      item_id: message.item.id,
      output_index: message.index,
      content_index: message.item.content.length - 1,
      part,
    });
    return part;
  }

  /** The reasoning item being written, opened (and the item before it closed) when there is none. */
  private openReasoning(): OpenReasoning {
    if (this.reasoning) return this.reasoning;
    this.closeMessage('completed');
    this.closeCall();
    const item = reasoningItem('in_progress', '');
    const open: OpenReasoning = { item, index: this.output.length, part: null, blocks: [] };
    this.reasoning = open;
    this.output.push(item);
    this.emit('response.output_item.added', { output_index: open.index, item });
    return open;
  }

  /** Thinking opens a reasoning item and adds to its one `reasoning_text` part. */
  private think(delta: string): void {
    const open = this.openReasoning();
    let part = open.part;
    if (!part) {
      part = { type: 'reasoning_text', text: '' };
      open.part = part;
      open.item.content.push(part);
      this.emit('response.content_part.added', {
        item_id: open.item.id,
        output_index: open.index,
        content_index: 0,
        part,
      });
    }
    part.text += delta;
    this.emit('response.reasoning_text.delta', {
      item_id: open.item.id,
      output_index: open.index,
      content_index: 0,
      delta,
    });
  }

  /** Signed blocks join the reasoning item (one is opened for a redacted block alone): its `encrypted_content`. */
  private thinkingBlocks(blocks: ThinkingBlock[]): void {
    if (blocks.length > 0) this.openReasoning().blocks.push(...blocks);
  }

  private text(kind: 'output_text' | 'refusal', delta: string): void {
    this.closeReasoning();
    this.closeCall();
    const message = this.openMessage();
    const part = this.openPart(message, kind);
    const at = {
      item_id: message.item.id,
      output_index: message.index,
      content_index: message.item.content.length - 1,
    };
    if (kind === 'output_text') {
      part.text += delta;
      this.emit('response.output_text.delta', { ...at, delta, logprobs: [] });
    } else {
      part.refusal += delta;
      this.emit('response.refusal.delta', { ...at, delta });
    }
  }

  private toolCall(delta: ChatToolCall & { index?: number }): void {
    const index = delta.index ?? 0;
    let call = this.calls.get(index);
    if (!call) {
      this.closeReasoning();
      this.closeMessage('completed');
      this.closeCall();
      const item = {
        id: newId('fc'),
        type: 'function_call',
        status: 'in_progress',
        call_id: delta.id || newId('call'),
        name: delta.function?.name ?? '',
        arguments: '',
      };
      call = { item, index: this.output.length };
      this.calls.set(index, call);
      this.call = call;
      this.output.push(item);
      this.emit('response.output_item.added', { output_index: call.index, item });
    } else if (delta.function?.name && !call.item.name) call.item.name = delta.function.name;
    const args = delta.function?.arguments;
    if (args) {
      call.item.arguments += args;
      this.emit('response.function_call_arguments.delta', {
        item_id: call.item.id,
        output_index: call.index,
        delta: args,
      });
    }
  }

  private closePart(message: OpenMessage): void {
    const part = message.part;
    if (!part) return;
    const at = {
      item_id: message.item.id,
      output_index: message.index,
      content_index: message.item.content.length - 1,
    };
    if (part.type === 'output_text')
      this.emit('response.output_text.done', { ...at, text: part.text, logprobs: [] });
    else this.emit('response.refusal.done', { ...at, refusal: part.refusal });
    this.emit('response.content_part.done', { ...at, part });
    message.part = null;
  }

  private closeMessage(status: ItemStatus): void {
    const message = this.message;
    if (!message) return;
    this.closePart(message);
    message.item.status = status;
    this.emit('response.output_item.done', { output_index: message.index, item: message.item });
    this.message = null;
  }

  private closeCall(status: ItemStatus = 'completed'): void {
    const call = this.call;
    if (!call) return;
    this.emit('response.function_call_arguments.done', {
      item_id: call.item.id,
      output_index: call.index,
      arguments: call.item.arguments,
    });
    call.item.status = status;
    this.emit('response.output_item.done', { output_index: call.index, item: call.item });
    this.call = null;
  }

  private closeReasoning(status: ItemStatus = 'completed'): void {
    const open = this.reasoning;
    if (!open) return;
    const at = { item_id: open.item.id, output_index: open.index, content_index: 0 };
    if (open.part) {
      this.emit('response.reasoning_text.done', { ...at, text: open.part.text });
      this.emit('response.content_part.done', { ...at, part: open.part });
    }
    // the blocks whole: the item's done event and the final response carry them, not the added event
    if (open.blocks.length > 0) open.item.encrypted_content = encodeThinking(open.blocks);
    open.item.status = status;
    this.emit('response.output_item.done', { output_index: open.index, item: open.item });
    this.reasoning = null;
  }

  private closeItems(status: ItemStatus): void {
    this.closeReasoning(status);
    this.closeMessage(status);
    this.closeCall(status);
  }
}
