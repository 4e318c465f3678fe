import type { ChatCompletionRequest } from '../types';

type Json = Record<string, unknown>;

const carries = (item: unknown): boolean =>
  typeof item === 'object' && item !== null && (item as Json).cache_control !== undefined;

function without<T extends object>(item: T): T {
  const { cache_control: _mark, ...rest } = item as T & { cache_control?: unknown };
  return rest as T;
}

/** The message without its breakpoints, or the message itself when it carries none. */
function messageWithout(message: ChatCompletionRequest['messages'][number]) {
  const parts = Array.isArray(message.content) ? message.content : null;
  const partsCarry = parts?.some(carries) === true;
  if (!partsCarry && !carries(message)) return message;
  const out = carries(message) ? without(message) : { ...message };
  if (partsCarry) out.content = parts!.map((part) => (carries(part) ? without(part) : part));
  return out;
}

/**
 * The chat request without its prompt-cache breakpoints (`cache_control` on tools, messages and content parts,
 * decision 0113): OpenAI refuses members it does not know and caches prompts by itself. A request that carries
 * none, nearly every one, is returned as it is, after one look at each tool, message and part.
 */
export function withoutCacheControl<B extends ChatCompletionRequest>(body: B): B {
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
  if (!toolsCarry && messages === null) return body;
  return {
    ...body,
    ...(messages ? { messages } : {}),
    ...(toolsCarry ? { tools: tools!.map((tool) => (carries(tool) ? without(tool) : tool)) } : {}),
  };
}
