import { EDGE_MAX_HEADER_BYTES, runServiceMain } from '@platform/runtime';
import { edgeConfigSchema } from './config';
import { createEdgeService } from './service';

void runServiceMain({
  name: 'edge',
  schema: edgeConfigSchema,
  defaultPort: 8080,
  usesStore: false,
  // The edge faces clients: Node's default 16 KB head, well under what services accept.
  maxHeaderBytes: EDGE_MAX_HEADER_BYTES,
  create: (deps) => createEdgeService(deps),
});
