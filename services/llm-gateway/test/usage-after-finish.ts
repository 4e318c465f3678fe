import type { SimulatorRule } from '@platform/testkit';

/**
 * A short streamed answer of the simulator's `model` whose usage report comes 300 ms after its finish_reason chunk
 * and counts 500 tokens of hidden reasoning (12 prompt tokens, 501 completion tokens): what a client that leaves
 * at the finish is still billed.
 */
export const reasoningReportAfterFinish = (model: string): SimulatorRule => ({
  match: { model, stream: true },
  chunkDelayMs: 300,
  reply: {
    content: 'short',
    usage: {
      prompt_tokens: 12,
      completion_tokens: 501,
      completion_tokens_details: { reasoning_tokens: 500 },
    },
  },
});
