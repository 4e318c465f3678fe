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
