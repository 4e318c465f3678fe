import { runServiceMain } from '@platform/runtime';
import { edgeConfigSchema } from './config';
import { createEdgeService } from './service';

void runServiceMain({
  name: 'edge',
  schema: edgeConfigSchema,
  defaultPort: 8080,
  usesStore: false,
  create: (deps) => createEdgeService(deps),
});
