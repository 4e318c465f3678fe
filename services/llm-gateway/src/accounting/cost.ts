import type { Usage } from '../inference/provider-port';

/** Cost of a request from the catalogue's pricing (per million tokens), in millionths of the currency. */
export function costMicros(
  usage: Usage,
  pricing: { input_per_million: number; output_per_million: number },
): number {
  // price per million tokens * tokens / 1e6 = currency; * 1e6 = micros: the two scales cancel.
  return Math.round(
    usage.prompt_tokens * pricing.input_per_million + usage.completion_tokens * pricing.output_per_million,
  );
}
