export { anthropicInputTokens } from './anthropic';
export { countSimulatorTokens, simulatedEmbedding } from './content';
export { openaiPromptTokens, openaiTextPromptTokens } from './openai';
export type { SimulatorApi, SimulatorEndpoint, SimulatorRule, SimulatorToolCall } from './script';
export type { ProviderSimulator, ProviderSimulatorOptions, SimulatedRequest } from './server';
export { startProviderSimulator } from './server';
