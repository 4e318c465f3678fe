import { TokenCounter } from './prompt-tokens';
import type { TextCompletionChunk, TextCompletionRequest } from './provider-port';

/**
 * Prompt tokens of a legacy text completion before the provider is called (decision 0115): each prompt with the
 * gateway's tokenizer, a token-id prompt by its length, and the `suffix` (fill-in-the-middle) once per prompt, as
 * each prompt is completed with it. `n` and `best_of` multiply nothing, as chat's `n` does not: providers bill the
 * prompt once.
 */
export function countTextPromptTokens(body: Pick<TextCompletionRequest, 'prompt' | 'suffix'>): number {
  const counter = new TokenCounter();
  const { prompt } = body;
  const suffix = typeof body.suffix === 'string' ? counter.count(body.suffix) : 0;
  if (typeof prompt === 'string') return counter.count(prompt) + suffix;
  // one prompt of token ids
  if (typeof prompt[0] === 'number') return prompt.length + suffix;
  let total = 0;
  for (const one of prompt as Array<string | number[]>)
    total += (typeof one === 'string' ? counter.count(one) : one.length) + suffix;
  return total;
}

/**
 * What a text completion's completion tokens are counted from when the provider reports none: every choice's
 * `text` (an echoed prompt included: `echo` is the caller's, counted rather than missed).
 */
export function textAnswerText(body: Record<string, unknown>): string {
  const choices = body.choices;
  if (!Array.isArray(choices)) return '';
  let text = '';
  for (const choice of choices as Array<{ text?: unknown } | null>)
    if (typeof choice?.text === 'string') text += choice.text;
  return text;
}

/** The text a stream chunk adds, for the monthly budget's count: one choice's string as it is, without copying. */
export function textChunkText(chunk: TextCompletionChunk): string {
  const choices = chunk.choices;
  if (!choices || choices.length === 0) return '';
  if (choices.length === 1) return typeof choices[0]?.text === 'string' ? choices[0].text : '';
  let text = '';
  for (const choice of choices) if (typeof choice.text === 'string') text += choice.text;
  return text;
}
