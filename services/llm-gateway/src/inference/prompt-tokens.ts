import { countTokens } from 'gpt-tokenizer';

/** Every text a chat request carries: message contents (string or text parts), tool calls and tools. */
function textsOf(value: unknown, out: string[]): void {
  if (typeof value === 'string') out.push(value);
  else if (Array.isArray(value)) for (const v of value) textsOf(v, out);
  else if (value && typeof value === 'object') {
    const o = value as Record<string, unknown>;
    // image/audio parts are priced by providers differently; their URLs/data are not text tokens
    if (o.type === 'image_url' || o.type === 'input_audio') return;
    for (const v of Object.values(o)) textsOf(v, out);
  }
}

/**
 * Prompt tokens counted before the provider is called (o200k_base via gpt-tokenizer, plus the
 * 3-token per-message overhead of OpenAI's chat format). An estimate for reservations: the provider's
 * reported usage replaces it once the answer is in.
 */
export function countChatPromptTokens(body: { messages: unknown[]; tools?: unknown }): number {
  let total = 3;
  for (const message of body.messages) {
    const texts: string[] = [];
    textsOf(message, texts);
    total += 3 + countText(texts.join('\n'));
  }
  if (body.tools !== undefined) total += countText(JSON.stringify(body.tools));
  return total;
}

export const countText = (text: string): number => (text.length === 0 ? 0 : countTokens(text));

export function countInputTokens(input: unknown): number {
  const texts: string[] = [];
  textsOf(input, texts);
  return texts.reduce((n, t) => n + countText(t), 0);
}
