import { runServiceMain } from '@platform/runtime';
import { legacyAgentConfigSchema } from './config';
import { createLegacyAgentService } from './service';

void runServiceMain({
  name: 'legacy-agent',
  schema: legacyAgentConfigSchema,
  defaultPort: 8083,
  create: (deps) => createLegacyAgentService(deps),
});
