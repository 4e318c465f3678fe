import { commonConfig } from '@platform/kernel';
import { z } from 'zod';

/** legacy-agent's configuration; every key is an environment variable, documented in the README. */
export const legacyAgentConfigSchema = z.object({
  ...commonConfig,
});
export type LegacyAgentConfig = z.infer<typeof legacyAgentConfigSchema>;
