import { commonConfig } from '@platform/kernel';
import { z } from 'zod';

/** auth's configuration; every key is an environment variable, documented in the README. */
export const authConfigSchema = z.object({
  ...commonConfig,
});
export type AuthConfig = z.infer<typeof authConfigSchema>;
