import { commonConfig } from '@platform/kernel';
import { z } from 'zod';

/** The edge's configuration; every key is an environment variable, documented in the README. */
export const edgeConfigSchema = z.object({
  ...commonConfig,
  /** where auth listens */
  AUTH_URL: z.url(),
  /** where llm-quota listens */
  LLM_QUOTA_URL: z.url(),
  /** where legacy-agent listens */
  LEGACY_AGENT_URL: z.url(),
});
export type EdgeConfig = z.infer<typeof edgeConfigSchema>;
