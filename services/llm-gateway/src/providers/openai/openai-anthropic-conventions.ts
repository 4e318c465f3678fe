import type { ChatCompletionRequest } from '../types';

type Json = Record<string, unknown>;

const carries = (item: unknown): boolean =>
  typeof item === 'object' && item !== null && (item as Json).cache_control !== undefined;

const thinks = (message: unknown): boolean => (message as Json).thinking_blocks !== undefined;

function without<T extends object>(item: T): T {
  const { cache_control: _mark, ...rest } = item as T & { cache_control?: unknown };
  return rest as T;
}

/** The message without its breakpoints and signed thinking, or the message itself when it carries neither. */
function messageWithout(message: ChatCompletionRequest['messages'][number]) {
  const parts = Array.isArray(message.content) ? message.content : null;
  const partsCarry = parts?.some(carries) === true;
  if (!partsCarry && !carries(message) && !thinks(message)) return message;
  const { thinking_blocks: _thinking, ...out } = carries(message) ? without(message) : message;
  if (partsCarry) out.content = parts!.map((part) => (carries(part) ? without(part) : part));
  return out as typeof message;
}

/**
 * The chat request without what it says in Anthropic's conventions (LiteLLM's, which the Anthropic adapter reads):
 * prompt-cache breakpoints (`cache_control` on tools, messages and content parts, decision 0113), and extended
 * thinking (the request's `thinking`, assistant messages' signed `thinking_blocks`, decision 0114). OpenAI refuses
 * members it does not know, caches prompts by itself, and reasons by `reasoning_effort`; a request that fails over
 * from an Anthropic model keeps working. A request that carries none of them, nearly every one, is returned as it
 * is, after one look at each tool, message and part.
 */
export function withoutAnthropicConventions<B extends ChatCompletionRequest>(body: B): B {
  const tools = body.tools;
  const toolsCarry = tools?.some(carries) === true;
  let messages: B['messages'] | null = null;
  for (let i = 0; i < body.messages.length; i++) {
    const message = body.messages[i]!;
    const stripped = messageWithout(message);
    if (stripped === message) continue;
    messages ??= body.messages.slice();
    messages[i] = stripped;
  }
  if (!toolsCarry && messages === null && body.thinking === undefined) return body;
  const { thinking: _thinking, ...rest } = body;
  return {
    ...rest,
    ...(messages ? { messages } : {}),
    ...(toolsCarry ? { tools: tools!.map((tool) => (carries(tool) ? without(tool) : tool)) } : {}),
  } as B;
}
