import { runServiceMain } from '@platform/runtime';
import { llmGatewayConfigSchema } from './config';
import { createLlmGatewayService } from './service';

void runServiceMain({
  name: 'llm-gateway',
  schema: llmGatewayConfigSchema,
  defaultPort: 8084,
  create: (deps) => createLlmGatewayService(deps),
});
