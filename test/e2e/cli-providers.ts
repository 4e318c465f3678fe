import type { ProviderSimulator } from '@platform/testkit';

/** `providers add` of the operator CLI: the simulator's OpenAI face as provider `sim`, with the key `apiKey` */
export const providersAddSim = (sim: ProviderSimulator, apiKey: string): string[] => [
  'providers',
  'add',
  'sim',
  '--type',
  'openai',
  '--base-url',
  sim.openaiBaseUrl,
  '--api-key',
  apiKey,
];
