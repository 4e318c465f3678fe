import type { LlmCompletionEvent } from '@platform/contracts';
import type { Usage } from '../inference/provider-port';

/** The catalogue's token prices, USD (the plan currency) per million tokens. */
interface TokenPricing {
  input_per_million: number;
  output_per_million: number;
  /** prompt tokens read from the provider's prompt cache; absent: the input price */
  cached_input_per_million?: number;
  /** prompt tokens written to the provider's prompt cache; absent: the input price */
  cache_write_per_million?: number;
  /** prompt tokens written to the provider's 1-hour prompt cache; absent: `hourWritePrice` */
  cache_write_1h_per_million?: number;
}

/**
 * The price of a write to the 1-hour cache: the catalogue's, else twice the input price (Anthropic's rule, the
 * same on Bedrock and Vertex), never below the model's other write price: a missing price never under-bills
 * (decision 0113).
 */
export const hourWritePrice = (pricing: TokenPricing): number =>
  pricing.cache_write_1h_per_million ??
  Math.max(2 * pricing.input_per_million, pricing.cache_write_per_million ?? 0);

const count = (v: unknown) => (typeof v === 'number' && Number.isFinite(v) && v > 0 ? Math.floor(v) : 0);

/**
 * How a request's prompt splits: tokens read from the provider's prompt cache, tokens written to it, and the
 * rest. Both are part of `prompt_tokens` (OpenAI's sense); a report claiming more than the prompt is held to it.
 */
function promptSplit(usage: Usage): { uncached: number; cached: number; written: number; hour: number } {
  const details = usage.prompt_tokens_details;
  const cached = Math.min(count(details?.cached_tokens), usage.prompt_tokens);
  const written = Math.min(count(details?.cache_write_tokens), usage.prompt_tokens - cached);
  // the writes to the 1-hour cache are among the writes (Anthropic's `cache_creation`, LiteLLM's name)
  const hour = Math.min(count(details?.cache_creation_token_details?.ephemeral_1h_input_tokens), written);
  return { uncached: usage.prompt_tokens - cached - written, cached, written, hour };
}

/**
 * Cost of a request from the catalogue's pricing (per million tokens), in millionths of the currency: uncached
 * input at the input price, cache reads and writes at theirs (decision 0107), writes to the 1-hour cache at
 * theirs (0113), output at the output price.
 */
export function costMicros(usage: Usage, pricing: TokenPricing): number {
  const { uncached, cached, written: allWritten, hour } = promptSplit(usage);
  const written = allWritten - hour;
  // tokens without a price of their own are input tokens, summed first so a catalogue without the cache
  // prices computes exactly what it did before them (same operands, same rounding)
  let input = uncached;
  let cacheCost = 0;
  if (pricing.cached_input_per_million === undefined) input += cached;
  else cacheCost += cached * pricing.cached_input_per_million;
  if (pricing.cache_write_per_million === undefined) input += written;
  else cacheCost += written * pricing.cache_write_per_million;
  // a usage without 1-hour writes adds nothing here: its cost is the one computed before they were priced
  if (hour > 0) cacheCost += hour * hourWritePrice(pricing);
  // price per million tokens * tokens / 1e6 = currency; * 1e6 = micros: the two scales cancel.
  return Math.round(
    input * pricing.input_per_million + usage.completion_tokens * pricing.output_per_million + cacheCost,
  );
}

/**
 * A request's usage as its `analytics.llm.completion` carries it: the totals, and the cached split when there is one.
 * Whole token counts, as the event's contract has them: llm-quota refuses any other event, and a provider reporting
 * `7.5` tokens would have had its request never counted.
 */
export function eventUsage(usage: Usage): LlmCompletionEvent['usage'] {
  const { cached, written } = promptSplit(usage);
  return {
    prompt_tokens: count(usage.prompt_tokens),
    completion_tokens: count(usage.completion_tokens),
    total_tokens: count(usage.total_tokens),
    ...(cached > 0 ? { cached_tokens: cached } : {}),
    ...(written > 0 ? { cache_write_tokens: written } : {}),
  };
}
