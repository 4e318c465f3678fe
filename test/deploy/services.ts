import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { loadConfig } from '@platform/kernel';
import { authConfigSchema } from '../../services/auth/src/config';
import { edgeConfigSchema } from '../../services/edge/src/config';
import { legacyAgentConfigSchema } from '../../services/legacy-agent/src/config';
import { llmGatewayConfigSchema } from '../../services/llm-gateway/src/config';
import { llmQuotaConfigSchema } from '../../services/llm-quota/src/config';

export const REPO_ROOT = path.resolve(__dirname, '..', '..');

/** a service's zod configuration schema, as loadConfig takes it */
export type ConfigSchema = Parameters<typeof loadConfig>[0];

export interface DeployedService {
  name: string;
  /** the service's own zod configuration schema, as its main.ts loads it */
  schema: ConfigSchema;
  /** `defaultPort` in the service's main.ts */
  defaultPort: number;
  /** MongoDB database the runtime opens for it (packages/runtime openStore) */
  database: string;
}

/** The `defaultPort: N` that services/<name>/src/main.ts hands to runServiceMain. */
export function defaultPortOf(name: string): number {
  const main = readFileSync(path.join(REPO_ROOT, 'services', name, 'src', 'main.ts'), 'utf8');
  const match = /defaultPort:\s*(\d+)/.exec(main);
  if (!match) throw new Error(`services/${name}/src/main.ts names no defaultPort`);
  return Number(match[1]);
}

const service = (name: string, schema: ConfigSchema): DeployedService => ({
  name,
  schema,
  defaultPort: defaultPortOf(name),
  database: `platform_${name.replace(/-/g, '_')}`,
});

/** Every service deployed as its own process, the edge first. */
export const DEPLOYED_SERVICES: DeployedService[] = [
  service('edge', edgeConfigSchema),
  service('auth', authConfigSchema),
  service('llm-quota', llmQuotaConfigSchema),
  service('legacy-agent', legacyAgentConfigSchema),
  service('llm-gateway', llmGatewayConfigSchema),
];

/** Variables a service reads outside its schema (runServiceMain reads PORT itself; Node reads NODE_*). */
export const VARIABLES_OUTSIDE_SCHEMAS = new Set(['PORT', 'NODE_ENV', 'NODE_OPTIONS']);

/** The keys a service's configuration schema reads. */
export const schemaKeys = (schema: ConfigSchema): Set<string> => new Set(Object.keys(schema.shape));

/** A value that passes every schema's PLATFORM_INTERNAL_SECRET rule, for tests that substitute placeholders. */
export const TEST_INTERNAL_SECRET = 'test-only-internal-secret-0123456789abcdef';
