/**
 * The text of a chat answer's `content`, a message's or a stream delta's. OpenAI answers a string; some
 * OpenAI-compatible providers answer an array of parts: Mistral's reasoning models (magistral, and others with
 * `reasoning_effort`) send `{type: "text", text}` parts and `{type: "thinking", thinking: [{type: "text", text}]}`
 * parts, plain and streamed (decision 0106). A string comes back as it is, without copying: the stream's hot path
 * reads every delta through here.
 */

type Part = { type?: unknown; text?: unknown; thinking?: unknown };

function partsText(content: unknown, thinking: boolean): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  let text = '';
  for (const part of content as Part[]) {
    if (typeof part !== 'object' || part === null) continue;
    // Mistral's schema makes `type` optional on a text part (its default)
    if ((part.type === 'text' || part.type === undefined) && typeof part.text === 'string') text += part.text;
    else if (thinking && part.type === 'thinking') text += partsText(part.thinking, false);
  }
  return text;
}

/** The answer the user reads: a string, or the `text` parts (thinking is not the answer). */
export const visibleText = (content: unknown): string => partsText(content, false);

/**
 * Everything the model wrote, for the tokenizer when the provider reports no usage and for the stream's budget:
 * the `text` parts and the text of the `thinking` parts (the provider bills thinking as completion tokens).
 */
export const billableText = (content: unknown): string => partsText(content, true);

type ToolCall = {
  function?: { name?: unknown; arguments?: unknown };
  custom?: { name?: unknown; input?: unknown };
} | null;

/** what the model wrote of a call's part: its text, or the JSON of an object some providers answer instead */
const written = (value: unknown): string =>
  typeof value === 'string' ? value : value === undefined || value === null ? '' : JSON.stringify(value);

/**
 * What the model wrote of a message's or a stream delta's tool calls: each function's name and arguments (a custom
 * tool's name and input), not the JSON around them. A stream sends the arguments in small pieces, one delta each:
 * counting each delta's JSON (its index, the member names) counted several times the tokens the model wrote.
 */
export function toolCallsText(toolCalls: unknown): string {
  if (!Array.isArray(toolCalls)) return '';
  let text = '';
  for (const call of toolCalls as ToolCall[]) {
    if (call?.function) text += written(call.function.name) + written(call.function.arguments);
    else if (call?.custom) text += written(call.custom.name) + written(call.custom.input);
    else text += JSON.stringify(call);
  }
  return text;
}

/** What a chat message or stream delta may carry of the model's thinking. */
export interface Said {
  content?: unknown;
  reasoning_content?: unknown;
  reasoning?: unknown;
}

/**
 * The reasoning an OpenAI-compatible server writes beside the content: vLLM's and DeepSeek's `reasoning_content`,
 * else OpenRouter's `reasoning` (newer vLLM sends both, the same text, so one is read).
 */
export const reasoningText = (said: Said | undefined): string =>
  typeof said?.reasoning_content === 'string' && said.reasoning_content !== ''
    ? said.reasoning_content
    : typeof said?.reasoning === 'string'
      ? said.reasoning
      : '';

/**
 * The model's thinking in a chat message or stream delta, '' when there is none: the reasoning beside the content
 * and the text of Mistral's `thinking` content parts. Read per chunk: a string `content` and no reasoning allocate
 * nothing.
 */
export function thinkingText(said: Said | undefined): string {
  if (!said) return '';
  let text = reasoningText(said);
  if (Array.isArray(said.content))
    for (const part of said.content as Array<Part | null>)
      if (part?.type === 'thinking') text += visibleText(part.thinking);
  return text;
}
