import { runServiceMain } from '@platform/runtime';
import { llmQuotaConfigSchema } from './config';
import { createLlmQuotaService } from './service';

void runServiceMain({
  name: 'llm-quota',
  schema: llmQuotaConfigSchema,
  defaultPort: 8082,
  create: (deps) => createLlmQuotaService(deps),
});
