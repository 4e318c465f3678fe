import {
  type ChatCompletion,
  type ChatCompletionRequest,
  type ChatContentPart,
  type ChatMessage,
  type ChatRequestMessage,
  type ChatToolCall,
  type FinishReason,
  isFunction,
  type OtherChatTool,
  type Usage,
} from '../types';
import { chatThinkingOf, thinkingBlocksOf, thinkingPlan } from './anthropic-thinking';
import type {
  AnthropicBlock,
  AnthropicCacheControl,
  AnthropicMessage,
  AnthropicRequest,
  AnthropicResponse,
  AnthropicTextBlock,
  AnthropicTool,
  AnthropicUsage,
} from './anthropic-wire';
import { UntranslatableRequest } from './untranslatable';

/** Anthropic requires `max_tokens`; OpenAI does not. Used when the request names none. */
export const ANTHROPIC_DEFAULT_MAX_TOKENS = 4096;

/**
 * The tool a `response_format` becomes (as LiteLLM does it): Messages has no JSON mode, but a forced
 * tool's input is JSON that follows its schema. The name is one a caller's tool would hardly take.
 */
export const JSON_RESPONSE_TOOL = 'platform_json_response';

/** The request asks for a JSON answer (`json_schema` or `json_object`), given as that tool's input. */
export const answersInJson = (body: ChatCompletionRequest): boolean =>
  body.response_format?.type === 'json_schema' || body.response_format?.type === 'json_object';

/**
 * Parameters that ask for something in the answer, or a hard constraint on it, that Anthropic cannot
 * give: refused rather than silently answered without (decision 0054 lists the ones ignored).
 */
function refuseUnanswerable(body: ChatCompletionRequest): void {
  if (body.logprobs === true)
    throw new UntranslatableRequest('Anthropic does not return log probabilities: logprobs cannot be true');
  if (body.top_logprobs != null)
    throw new UntranslatableRequest(
      'Anthropic does not return log probabilities: top_logprobs cannot be set',
    );
  const bias = body.logit_bias;
  if (typeof bias === 'object' && bias !== null && Object.keys(bias).length > 0)
    throw new UntranslatableRequest('Anthropic has no logit_bias');
  if (Array.isArray(body.modalities) && body.modalities.includes('audio'))
    throw new UntranslatableRequest("Anthropic does not answer in audio: modalities cannot include 'audio'");
  if (body.audio != null)
    throw new UntranslatableRequest('Anthropic does not answer in audio: audio cannot be set');
}

/** `response_format` as the forced JSON tool; `text` (the default) is nothing to say. */
function jsonResponseTool(body: ChatCompletionRequest): AnthropicTool | null {
  const format = body.response_format;
  if (!format || format.type === 'text') return null;
  if (!answersInJson(body))
    throw new UntranslatableRequest(`Anthropic does not accept a response_format of type '${format.type}'`);
  // a forced tool would stop the caller's own tools from being called
  if (body.tools?.length)
    throw new UntranslatableRequest('Anthropic cannot take response_format together with tools');
  const jsonSchema = format.json_schema as { description?: string; schema?: unknown } | undefined;
  return {
    name: JSON_RESPONSE_TOOL,
    description: jsonSchema?.description ?? 'Give the answer as this JSON',
    input_schema: (format.type === 'json_schema' && jsonSchema?.schema) || { type: 'object' },
  };
}

function textOf(content: ChatMessage['content']): string {
  if (typeof content === 'string') return content;
  return (content ?? [])
    .filter((p) => p.type === 'text')
    .map((p) => String((p as { text: unknown }).text))
    .join('\n');
}

/** Anthropic takes at most this many cache breakpoints in a request (the chat schema refuses more before). */
const MAX_BREAKPOINTS = 4;

/**
 * The prompt-cache breakpoint a content part, a message or a tool carries (LiteLLM's convention for Anthropic
 * models behind chat completions, decision 0113); `null` is none. Its shape is the route schema's to check.
 */
const breakpointOf = (item: unknown): AnthropicCacheControl | undefined => {
  const mark = (item as { cache_control?: unknown } | null | undefined)?.cache_control;
  return mark == null ? undefined : (mark as AnthropicCacheControl);
};

/** The breakpoint of the last of these items that carries one. */
function lastBreakpointOf(items: readonly unknown[]): AnthropicCacheControl | undefined {
  for (let i = items.length - 1; i >= 0; i--) {
    const mark = breakpointOf(items[i]);
    if (mark) return mark;
  }
  return undefined;
}

/** A breakpoint after the last block so far: a message's own, or that of a part that added no block. */
function markLast(blocks: AnthropicBlock[], mark: AnthropicCacheControl | undefined): void {
  const last = blocks[blocks.length - 1];
  if (mark && last) last.cache_control = mark;
}

/** A piece of a text that chat joins (system messages, a message's parts), with its separator in front. */
type Piece = { text: string; mark?: AnthropicCacheControl };

/** The text parts of a message as pieces joined by `separator` (a string content is one piece). */
function pieces(content: ChatMessage['content'], separator: string): Piece[] {
  if (typeof content === 'string') return [{ text: content }];
  const out: Piece[] = [];
  for (const part of content ?? [])
    if (part.type === 'text')
      out.push({ text: (out.length > 0 ? separator : '') + String(part.text), mark: breakpointOf(part) });
  return out;
}

/**
 * Text pieces as text blocks cut after each breakpoint, so that the blocks together say the very text one block
 * would (the model reads the same prompt with breakpoints or without). A breakpoint after nothing but whitespace
 * marks the block before it: the prefix is the same, and Anthropic refuses a blank block.
 */
function cutAtBreakpoints(all: Piece[]): AnthropicTextBlock[] {
  const blocks: AnthropicTextBlock[] = [];
  let text = '';
  for (const piece of all) {
    text += piece.text;
    if (!piece.mark) continue;
    if (text.trim() !== '') {
      blocks.push({ type: 'text', text, cache_control: piece.mark });
      text = '';
    } else markLast(blocks, piece.mark);
  }
  const last = blocks[blocks.length - 1];
  if (text.trim() !== '' || !last) {
    if (text !== '') blocks.push({ type: 'text', text });
  } else last.text += text;
  return blocks;
}

/**
 * A system or developer message's pieces added to the system prompt's (messages joined by a blank line, as ever;
 * an empty one adds nothing, and its breakpoint marks the prompt so far).
 */
function pushSystem(message: ChatRequestMessage, system: Piece[]): void {
  const own = pieces(message.content, '\n');
  const mark = breakpointOf(message);
  if (own.every((p) => p.text === '')) {
    const last = system[system.length - 1];
    const lastMark = mark ?? [...own].reverse().find((p) => p.mark)?.mark;
    if (last && lastMark) last.mark = lastMark;
    return;
  }
  if (system.length > 0) own[0]!.text = `\n\n${own[0]!.text}`;
  if (mark) own[own.length - 1]!.mark = mark;
  system.push(...own);
}

/** The system prompt: a string, or text blocks when a breakpoint falls in it. */
function systemPrompt(system: Piece[]): string | AnthropicTextBlock[] | undefined {
  if (system.some((p) => p.mark)) {
    const blocks = cutAtBreakpoints(system);
    return blocks.length > 0 ? blocks : undefined;
  }
  return system.map((p) => p.text).join('') || undefined;
}

/** What Anthropic refuses of breakpoints: more than four, or one of an hour after one of five minutes. */
function checkBreakpoints(out: AnthropicRequest): void {
  const marks: AnthropicCacheControl[] = [];
  const note = (item: unknown) => {
    const mark = breakpointOf(item);
    if (mark) marks.push(mark);
  };
  out.tools?.forEach(note);
  if (Array.isArray(out.system)) out.system.forEach(note);
  for (const message of out.messages) message.content.forEach(note);
  if (marks.length > MAX_BREAKPOINTS)
    throw new UntranslatableRequest(
      `Anthropic takes at most ${MAX_BREAKPOINTS} cache_control breakpoints in a request, not ${marks.length}`,
    );
  // tools, then system, then messages is the order Anthropic reads them in
  const short = marks.findIndex((mark) => mark.ttl !== '1h');
  if (short !== -1 && marks.slice(short).some((mark) => mark.ttl === '1h'))
    throw new UntranslatableRequest(
      "a cache_control with ttl '1h' must come before those of 5 minutes (tools, then system, then messages)",
    );
}

function imageBlock(part: Extract<ChatContentPart, { type: 'image_url' }>): AnthropicBlock {
  const url = part.image_url?.url ?? '';
  const data = /^data:([^;,]+);base64,(.*)$/s.exec(url);
  if (data) return { type: 'image', source: { type: 'base64', media_type: data[1]!, data: data[2]! } };
  if (/^https?:\/\//i.test(url)) return { type: 'image', source: { type: 'url', url } };
  throw new UntranslatableRequest('an image_url must be an http(s) URL or a base64 data URL');
}

function userBlocks(message: ChatRequestMessage): AnthropicBlock[] {
  const { content } = message;
  const blocks: AnthropicBlock[] = [];
  if (typeof content === 'string') {
    if (content) blocks.push({ type: 'text', text: content });
  } else
    for (const part of content ?? []) {
      const mark = breakpointOf(part);
      if (part.type === 'text') {
        const text = String((part as { text: unknown }).text ?? '');
        if (text) blocks.push({ type: 'text', text, ...(mark ? { cache_control: mark } : {}) });
        else markLast(blocks, mark);
      } else if (part.type === 'image_url')
        blocks.push({
          ...imageBlock(part as Extract<ChatContentPart, { type: 'image_url' }>),
          ...(mark ? { cache_control: mark } : {}),
        });
      else throw new UntranslatableRequest(`Anthropic does not accept '${part.type}' content parts`);
    }
  markLast(blocks, breakpointOf(message));
  return blocks;
}

/** An assistant turn: its signed thinking, its text (cut at the parts' breakpoints), then its tool calls. */
function assistantBlocks(message: ChatRequestMessage): AnthropicBlock[] {
  const blocks: AnthropicBlock[] = [
    ...thinkingBlocksOf(message),
    ...cutAtBreakpoints(pieces(message.content, '\n')),
    ...(message.tool_calls ?? []).map(toolUse),
  ];
  markLast(blocks, breakpointOf(message));
  return blocks;
}

/** A tool message as a tool_result, marked by the message's breakpoint or one of its parts'. */
function toolResult(message: ChatRequestMessage): AnthropicBlock {
  const mark =
    breakpointOf(message) ?? (Array.isArray(message.content) ? lastBreakpointOf(message.content) : undefined);
  return {
    type: 'tool_result',
    tool_use_id: String(message.tool_call_id ?? ''),
    content: textOf(message.content),
    ...(mark ? { cache_control: mark } : {}),
  };
}

function toolUse(call: ChatToolCall | OtherChatTool): AnthropicBlock {
  if (!isFunction(call))
    throw new UntranslatableRequest(`Anthropic does not accept tool calls of type '${call.type}'`);
  let input: unknown = {};
  if (call.function.arguments) {
    try {
      input = JSON.parse(call.function.arguments);
    } catch {
      throw new UntranslatableRequest(`tool call ${call.id} has arguments that are not JSON`);
    }
  }
  if (typeof input !== 'object' || input === null || Array.isArray(input))
    throw new UntranslatableRequest(`tool call ${call.id} must have a JSON object as arguments`);
  return { type: 'tool_use', id: call.id, name: call.function.name, input };
}

/** Appends blocks to the conversation, merging into the last message when the role repeats. */
function push(messages: AnthropicMessage[], role: AnthropicMessage['role'], blocks: AnthropicBlock[]): void {
  if (blocks.length === 0) return;
  const last = messages[messages.length - 1];
  if (last?.role === role) last.content.push(...blocks);
  else messages.push({ role, content: blocks });
}

/**
 * Anthropic's rule: a message after an assistant turn that called tools holds a tool_result for each of its calls (a
 * tool message for each, before the conversation goes on); the provider's refusal would be a 502 the caller cannot read.
 */
function refuseUnansweredCalls(messages: AnthropicMessage[]): void {
  messages.forEach((message, i) => {
    const next = messages[i + 1];
    if (message.role !== 'assistant' || !next) return;
    const answered = new Set(next.content.map((b) => (b.type === 'tool_result' ? b.tool_use_id : null)));
    for (const block of message.content)
      if (block.type === 'tool_use' && !answered.has(block.id))
        throw new UntranslatableRequest(
          `tool call ${String(block.id)} has no tool message answering it before the conversation goes on`,
        );
  });
}

/** OpenAI chat request -> Anthropic Messages request. */
export function toAnthropicRequest(
  body: ChatCompletionRequest,
  model: string,
  stream: boolean,
  /** the catalogue does not say the model cannot reason (`capabilities.reasoning: false`): it may think (0114) */
  reasons = true,
): AnthropicRequest {
  const system: Piece[] = [];
  const messages: AnthropicMessage[] = [];
  // the ids of the tool calls the tool messages may answer now: Anthropic takes tool_results only at the start of the
  // message after the assistant turn (its messages in a row) that called them (else a 502 the caller cannot read)
  let calls = new Set<string>();
  for (const [i, m] of body.messages.entries()) {
    switch (m.role) {
      case 'system':
      case 'developer':
        pushSystem(m, system);
        break;
      case 'user': {
        const blocks = userBlocks(m);
        if (blocks.length > 0) calls = new Set();
        push(messages, 'user', blocks);
        break;
      }
      case 'assistant':
        if (messages[messages.length - 1]?.role !== 'assistant') calls = new Set();
        push(messages, 'assistant', assistantBlocks(m));
        for (const call of m.tool_calls ?? []) if (isFunction(call)) calls.add(call.id);
        break;
      case 'tool':
        if (!calls.has(m.tool_call_id ?? ''))
          throw new UntranslatableRequest(
            `messages.${i}.tool_call_id ('${m.tool_call_id ?? ''}') answers no tool call of the assistant message just before it (tool messages follow the assistant message that called the tools, before any other message)`,
          );
        push(messages, 'user', [toolResult(m)]);
        break;
      default:
        throw new UntranslatableRequest(`unknown message role '${String(m.role)}'`);
    }
  }
  if (messages.length === 0)
    throw new UntranslatableRequest('a conversation needs at least one user or assistant message');
  refuseUnansweredCalls(messages);
  if (typeof body.n === 'number' && body.n > 1)
    throw new UntranslatableRequest('Anthropic answers one choice: n must be 1');
  refuseUnanswerable(body);

  const plan = thinkingPlan(
    body,
    body.max_completion_tokens ?? body.max_tokens ?? undefined,
    ANTHROPIC_DEFAULT_MAX_TOKENS,
    { reasons, json: answersInJson(body), turns: messages },
  );
  const out: AnthropicRequest = {
    model,
    max_tokens: plan.maxTokens,
    messages,
    ...(stream ? { stream: true } : {}),
    ...(plan.thinking ? { thinking: plan.thinking } : {}),
  };
  const systemField = systemPrompt(system);
  if (systemField) out.system = systemField;
  // OpenAI's temperature goes to 2, Anthropic's to 1
  if (typeof body.temperature === 'number') out.temperature = Math.min(body.temperature, 1);
  if (typeof body.top_p === 'number') out.top_p = body.top_p;
  if (body.stop) out.stop_sequences = Array.isArray(body.stop) ? body.stop : [body.stop];
  if (body.user) out.metadata = { user_id: body.user };
  const jsonTool = jsonResponseTool(body);
  if (jsonTool) {
    out.tools = [jsonTool];
    out.tool_choice = { type: 'tool', name: JSON_RESPONSE_TOOL };
  } else if (body.tools?.length) {
    const names = new Set<string>();
    out.tools = body.tools.map((t) => {
      if (!isFunction(t))
        throw new UntranslatableRequest(`Anthropic does not accept tools of type '${t.type}'`);
      if (t.function.name === JSON_RESPONSE_TOOL)
        throw new UntranslatableRequest(`the tool name '${JSON_RESPONSE_TOOL}' is reserved by the gateway`);
      // Anthropic's 400 ("Tool names must be unique"), which OpenAI does not give
      if (names.has(t.function.name))
        throw new UntranslatableRequest(
          `two tools are named '${t.function.name}': Anthropic wants unique names`,
        );
      names.add(t.function.name);
      const mark = breakpointOf(t);
      return {
        name: t.function.name,
        ...(t.function.description ? { description: t.function.description } : {}),
        input_schema: t.function.parameters ?? { type: 'object', properties: {} },
        ...(mark ? { cache_control: mark } : {}),
      };
    });
    const choice = body.tool_choice;
    const noParallel = body.parallel_tool_calls === false ? { disable_parallel_tool_use: true } : {};
    if (choice === 'none') out.tool_choice = { type: 'none' };
    else if (choice === 'required') out.tool_choice = { type: 'any', ...noParallel };
    else if (typeof choice === 'object') {
      if (!isFunction(choice))
        throw new UntranslatableRequest(`Anthropic does not accept a tool_choice of type '${choice.type}'`);
      out.tool_choice = { type: 'tool', name: choice.function.name, ...noParallel };
    } else if (body.parallel_tool_calls === false) out.tool_choice = { type: 'auto', ...noParallel };
  }
  checkBreakpoints(out);
  return out;
}

export function finishReason(stop: string | null | undefined): FinishReason | null {
  switch (stop) {
    case 'end_turn':
    case 'stop_sequence':
    case 'pause_turn':
      return 'stop';
    case 'max_tokens':
    case 'model_context_window_exceeded':
      return 'length';
    case 'tool_use':
      return 'tool_calls';
    case 'refusal':
      return 'content_filter';
    default:
      return stop ? 'stop' : null;
  }
}

/** A token count as the provider reported it, when it is one: a negative or non-number figure counts none. */
const tokens = (v: unknown): number =>
  typeof v === 'number' && Number.isFinite(v) && v > 0 ? Math.floor(v) : 0;

/**
 * Anthropic's usage in OpenAI's terms: `prompt_tokens` is every input token (`input_tokens` counts only those
 * after the last cache breakpoint), and the cache reads and writes, billed at their own rates, are the
 * prompt's `cached_tokens` and `cache_write_tokens` (OpenAI's `prompt_tokens_details`), given when there are any.
 * Writes to the 1-hour cache, dearer than the 5-minute ones, are `cache_creation_token_details` (LiteLLM's name
 * for Anthropic's `cache_creation`), given when there are any (decision 0113).
 */
export function usageFromAnthropic(usage: AnthropicUsage | undefined): Usage | null {
  const byTtl = usage?.cache_creation;
  // beyond 2^53 no figure is a count: such a report is none (1e308 tokens made the cost infinite, an event llm-quota
  // refuses), and the gateway's tokenizer counts the request as it does an OpenAI-protocol provider's
  const figures = [
    usage?.input_tokens,
    usage?.output_tokens,
    usage?.cache_read_input_tokens,
    usage?.cache_creation_input_tokens,
    byTtl?.ephemeral_5m_input_tokens,
    byTtl?.ephemeral_1h_input_tokens,
  ];
  if (figures.some((v) => typeof v === 'number' && v > Number.MAX_SAFE_INTEGER)) return null;
  const read = tokens(usage?.cache_read_input_tokens);
  const written =
    // null is no figure, as absent: the writes by TTL are counted then
    usage?.cache_creation_input_tokens != null
      ? tokens(usage.cache_creation_input_tokens)
      : tokens(byTtl?.ephemeral_5m_input_tokens) + tokens(byTtl?.ephemeral_1h_input_tokens);
  // the hour's share of the writes, held to them: the rest is the 5 minutes'
  const hour = Math.min(tokens(byTtl?.ephemeral_1h_input_tokens), written);
  const prompt = tokens(usage?.input_tokens) + written + read;
  const completion = tokens(usage?.output_tokens);
  return {
    prompt_tokens: prompt,
    completion_tokens: completion,
    total_tokens: prompt + completion,
    ...(read > 0 || written > 0
      ? {
          prompt_tokens_details: {
            cached_tokens: read,
            cache_write_tokens: written,
            ...(hour > 0
              ? {
                  cache_creation_token_details: {
                    ephemeral_5m_input_tokens: written - hour,
                    ephemeral_1h_input_tokens: hour,
                  },
                }
              : {}),
          },
        }
      : {}),
  };
}

/**
 * The stop sequence that ended an answer, as vLLM says it on a choice (`stop_reason`, beside `finish_reason: "stop"`):
 * chat has no member of its own for it, and `/v1/messages` answers it back as Anthropic's `stop_sequence`.
 */
export const stopSequenceOf = (
  stop: string | null | undefined,
  sequence: unknown,
): { stop_reason?: string } =>
  stop === 'stop_sequence' && typeof sequence === 'string' ? { stop_reason: sequence } : {};

/** The finish reason of an answer; the forced JSON tool's use is the answer's plain end. */
export function answerFinishReason(stop: string | null | undefined, json: boolean): FinishReason | null {
  return json && stop === 'tool_use' ? 'stop' : finishReason(stop);
}

const isToolUse = (b: AnthropicBlock): b is Extract<AnthropicBlock, { type: 'tool_use' }> =>
  b.type === 'tool_use';

/** Anthropic message -> OpenAI chat completion (`json`: the request asked for a JSON answer). */
export function fromAnthropicResponse(
  answer: AnthropicResponse,
  created: number,
  json = false,
): ChatCompletion {
  const text = answer.content
    .filter((b): b is Extract<AnthropicBlock, { type: 'text' }> => b.type === 'text')
    .map((b) => b.text)
    .join('');
  const toolUses = answer.content.filter(isToolUse);
  const toolCalls: ChatToolCall[] = json
    ? []
    : toolUses.map((b) => ({
        id: b.id,
        type: 'function',
        function: { name: b.name, arguments: JSON.stringify(b.input ?? {}) },
      }));
  // a JSON answer is the JSON tool's input alone: text beside it would make the content unparseable
  const jsonInput = toolUses.find((b) => b.name === JSON_RESPONSE_TOOL)?.input;
  const jsonText = jsonInput === undefined ? '' : JSON.stringify(jsonInput);
  const usage = usageFromAnthropic(answer.usage);
  return {
    id: answer.id,
    object: 'chat.completion',
    created,
    model: answer.model,
    choices: [
      {
        index: 0,
        message: {
          role: 'assistant',
          content: json ? jsonText : text || (toolCalls.length > 0 ? null : ''),
          refusal: null,
          ...(toolCalls.length > 0 ? { tool_calls: toolCalls } : {}),
          ...chatThinkingOf(answer.content),
        },
        finish_reason: answerFinishReason(answer.stop_reason, json),
        ...stopSequenceOf(answer.stop_reason, answer.stop_sequence),
        logprobs: null,
      },
    ],
    ...(usage ? { usage } : {}),
  };
}
