import { runServiceMain } from '@platform/runtime';
import { authConfigSchema } from './config';
import { createAuthService } from './service';

void runServiceMain({
  name: 'auth',
  schema: authConfigSchema,
  defaultPort: 8081,
  create: (deps) => createAuthService(deps),
});
