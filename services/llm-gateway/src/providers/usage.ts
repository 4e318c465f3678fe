import type { Usage } from './types';

/**
 * A figure that can be a count of tokens: beyond 2^53 it is none (1e308 tokens made the request's cost infinite, an
 * event llm-quota refuses, so the request was never counted), and the tokenizer counts instead.
 */
const count = (v: unknown) =>
  typeof v === 'number' && Number.isFinite(v) && v >= 0 && v <= Number.MAX_SAFE_INTEGER ? v : null;

/**
 * Usage from an OpenAI (`prompt_tokens`…) or Anthropic-like (`input_tokens`…) object; null without one. OpenAI's
 * `prompt_tokens_details` (cached and cache-written prompt tokens, priced apart) is kept as the provider sent it.
 */
export function toUsage(raw: unknown): Usage | null {
  if (typeof raw !== 'object' || raw === null) return null;
  const r = raw as Record<string, unknown>;
  const prompt = count(r.prompt_tokens) ?? count(r.input_tokens);
  if (prompt === null) return null;
  // none given is none written (embeddings); one given that is no count is no report (not a free answer)
  const given = r.completion_tokens ?? r.output_tokens;
  const completion = given === undefined || given === null ? 0 : count(given);
  if (completion === null) return null;
  const details = r.prompt_tokens_details;
  return {
    prompt_tokens: prompt,
    completion_tokens: completion,
    total_tokens: count(r.total_tokens) ?? prompt + completion,
    ...(typeof details === 'object' && details !== null
      ? { prompt_tokens_details: details as NonNullable<Usage['prompt_tokens_details']> }
      : {}),
  };
}
