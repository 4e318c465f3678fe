import {
  type ChatCompletion,
  type ChatCompletionRequest,
  type ChatContentPart,
  type ChatMessage,
  type ChatToolCall,
  type FinishReason,
  isFunction,
  type OtherChatTool,
  type Usage,
} from '../types';
import type {
  AnthropicBlock,
  AnthropicMessage,
  AnthropicRequest,
  AnthropicResponse,
  AnthropicTool,
  AnthropicUsage,
} from './anthropic-wire';

/** Anthropic requires `max_tokens`; OpenAI does not. Used when the request names none. */
export const ANTHROPIC_DEFAULT_MAX_TOKENS = 4096;

/** A request that cannot be said in Anthropic's terms (the adapter turns it into a ProviderError). */
export class UntranslatableRequest extends Error {}

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

function imageBlock(part: Extract<ChatContentPart, { type: 'image_url' }>): AnthropicBlock {
  const url = part.image_url?.url ?? '';
  const data = /^data:([^;,]+);base64,(.*)$/s.exec(url);
  if (data) return { type: 'image', source: { type: 'base64', media_type: data[1]!, data: data[2]! } };
  if (/^https?:\/\//i.test(url)) return { type: 'image', source: { type: 'url', url } };
  throw new UntranslatableRequest('an image_url must be an http(s) URL or a base64 data URL');
}

function userBlocks(content: ChatMessage['content']): AnthropicBlock[] {
  if (typeof content === 'string') return content ? [{ type: 'text', text: content }] : [];
  const blocks: AnthropicBlock[] = [];
  for (const part of content ?? []) {
    if (part.type === 'text') {
      const text = String((part as { text: unknown }).text ?? '');
      if (text) blocks.push({ type: 'text', text });
    } else if (part.type === 'image_url')
      blocks.push(imageBlock(part as Extract<ChatContentPart, { type: 'image_url' }>));
    else throw new UntranslatableRequest(`Anthropic does not accept '${part.type}' content parts`);
  }
  return blocks;
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

/** OpenAI chat request -> Anthropic Messages request. */
export function toAnthropicRequest(
  body: ChatCompletionRequest,
  model: string,
  stream: boolean,
): AnthropicRequest {
  const system: string[] = [];
  const messages: AnthropicMessage[] = [];
  for (const m of body.messages) {
    switch (m.role) {
      case 'system':
      case 'developer':
        system.push(textOf(m.content));
        break;
      case 'user':
        push(messages, 'user', userBlocks(m.content));
        break;
      case 'assistant': {
        const text = textOf(m.content);
        push(messages, 'assistant', [
          ...(text ? [{ type: 'text' as const, text }] : []),
          ...(m.tool_calls ?? []).map(toolUse),
        ]);
        break;
      }
      case 'tool':
        push(messages, 'user', [
          { type: 'tool_result', tool_use_id: String(m.tool_call_id ?? ''), content: textOf(m.content) },
        ]);
        break;
      default:
        throw new UntranslatableRequest(`unknown message role '${String(m.role)}'`);
    }
  }
  if (messages.length === 0)
    throw new UntranslatableRequest('a conversation needs at least one user or assistant message');
  if (typeof body.n === 'number' && body.n > 1)
    throw new UntranslatableRequest('Anthropic answers one choice: n must be 1');
  refuseUnanswerable(body);

  const out: AnthropicRequest = {
    model,
    max_tokens: body.max_completion_tokens ?? body.max_tokens ?? ANTHROPIC_DEFAULT_MAX_TOKENS,
    messages,
    ...(stream ? { stream: true } : {}),
  };
  const systemText = system.filter(Boolean).join('\n\n');
  if (systemText) out.system = systemText;
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
    out.tools = body.tools.map((t) => {
      if (!isFunction(t))
        throw new UntranslatableRequest(`Anthropic does not accept tools of type '${t.type}'`);
      if (t.function.name === JSON_RESPONSE_TOOL)
        throw new UntranslatableRequest(`the tool name '${JSON_RESPONSE_TOOL}' is reserved by the gateway`);
      return {
        name: t.function.name,
        ...(t.function.description ? { description: t.function.description } : {}),
        input_schema: t.function.parameters ?? { type: 'object', properties: {} },
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

/**
 * Anthropic's usage in OpenAI's terms: `prompt_tokens` is every input token (`input_tokens` counts only those
 * after the last cache breakpoint), and the cache reads and writes, billed at their own rates, are the
 * prompt's `cached_tokens` and `cache_write_tokens` (OpenAI's `prompt_tokens_details`), given when there are any.
 */
export function usageFromAnthropic(usage: AnthropicUsage | undefined): Usage {
  const read = usage?.cache_read_input_tokens ?? 0;
  const written = usage?.cache_creation_input_tokens ?? 0;
  const prompt = (usage?.input_tokens ?? 0) + written + read;
  const completion = usage?.output_tokens ?? 0;
  return {
    prompt_tokens: prompt,
    completion_tokens: completion,
    total_tokens: prompt + completion,
    ...(read > 0 || written > 0
      ? { prompt_tokens_details: { cached_tokens: read, cache_write_tokens: written } }
      : {}),
  };
}

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
        },
        finish_reason: answerFinishReason(answer.stop_reason, json),
        logprobs: null,
      },
    ],
    usage,
  };
}
