export { anthropicInputTokens } from './anthropic';
export {
  countSimulatorTokens,
  lexicalRelevance,
  SIMULATOR_IMAGE_TOKENS,
  SIMULATOR_MESSAGE_OVERHEAD,
  simulatedAnswer,
  simulatedEmbedding,
} from './content';
export { simulatedPng, wavDuration } from './media';
export { openaiPromptTokens } from './openai';
export type { SimulatorApi, SimulatorEndpoint, SimulatorRule, SimulatorToolCall } from './script';
export type { ProviderSimulator, ProviderSimulatorOptions, SimulatedRequest } from './server';
export { startProviderSimulator } from './server';
