import { commonConfig } from '@platform/kernel';
import { z } from 'zod';

/** llm-quota's configuration; every key is an environment variable, documented in the README. */
export const llmQuotaConfigSchema = z.object({
  ...commonConfig,
});
export type LlmQuotaConfig = z.infer<typeof llmQuotaConfigSchema>;
