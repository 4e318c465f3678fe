import { randomUUID } from 'node:crypto';
import { type Bus, createInProcessBus } from '@platform/bus';
import type { LlmCompletionEvent } from '@platform/contracts';
import { type Principal, permissionTree } from '@platform/contracts';
import {
  type Clock,
  loadConfig,
  ManualClock,
  PRINCIPAL_HEADER,
  sealPrincipal,
  silentLogger,
  USER_ID_HEADER,
} from '@platform/kernel';
import { createEmbeddedStore, type Store } from '@platform/store';
import { tempDir } from '@platform/testkit';
import { type LlmQuotaConfig, llmQuotaConfigSchema } from '../src/config';
import { createLlmQuotaService } from '../src/service';

export const SECRET = 'test-secret-test-secret-test-secret-0123456789';

export interface PrincipalOptions {
  userId?: string | null;
  org?: string | null;
  role?: string;
  permissions?: string[];
  kind?: Principal['credential']['kind'];
  projectId?: string | null;
}

/** A principal as the edge would hand it over (spec 5.2 rule 8). */
export function principal(options: PrincipalOptions = {}): Principal {
  const permissions = options.permissions ?? ['models:read'];
  const kind = options.kind ?? (options.userId === null ? 'org_api_key' : 'session');
  const userId = options.userId === undefined ? 'user-1' : options.userId;
  const org = options.org === undefined ? 'acme' : options.org;
  const tree = permissionTree(permissions);
  return {
    credential: { kind, id: `cred-${randomUUID()}`, projectId: options.projectId ?? null },
    session: {
      id: kind === 'session' ? 'sess-1' : null,
      org: org
        ? {
            slug: org,
            name: org.toUpperCase(),
            role: { slug: options.role ?? 'member', permissions, scopes: [] },
            groups: [],
            settings: {},
            subscription: null,
          }
        : null,
    },
    user: {
      id: userId,
      email: userId ? `${userId}@example.test` : null,
      anonymous: false,
      role: null,
    },
    run: { permissions: tree, scopes: [], correlationId: randomUUID(), sourceWorkspaceId: null },
  };
}

/** The headers the edge sets for a principal. */
export function edgeHeaders(p: Principal, clock?: Clock): Record<string, string> {
  const headers: Record<string, string> = { [PRINCIPAL_HEADER]: sealPrincipal(p, SECRET, clock) };
  if (p.user.id) headers[USER_ID_HEADER] = p.user.id;
  return headers;
}

/** The edge's headers for the organization's owner `admin-1`, who manages its quotas. */
export const adminHeaders = (clock: Clock): Record<string, string> =>
  edgeHeaders(
    principal({ userId: 'admin-1', role: 'owner', permissions: ['models:read', 'quotas:manage'] }),
    clock,
  );

export function quotaConfig(env: Record<string, string> = {}): LlmQuotaConfig {
  return loadConfig(llmQuotaConfigSchema, {
    PLATFORM_INTERNAL_SECRET: SECRET,
    LOG_LEVEL: 'silent',
    LLM_QUOTA_SWEEP_INTERVAL_MS: '60000',
    ...env,
  });
}

export interface QuotaServiceHandle {
  service: Awaited<ReturnType<typeof createLlmQuotaService>>;
  store: Store;
  config: LlmQuotaConfig;
  stop(): Promise<void>;
}

/** llm-quota on an embedded store in `dataDir` (a fresh temp folder when omitted). */
export async function startQuotaService(options: {
  bus: Bus;
  clock?: Clock;
  leaseClock?: Clock;
  env?: Record<string, string>;
  dataDir?: string;
  /** a store shared with other instances (left open by `stop`) */
  store?: Store;
  start?: boolean;
}): Promise<QuotaServiceHandle> {
  const temp = options.dataDir || options.store ? null : tempDir('llm-quota-test-');
  const store =
    options.store ?? createEmbeddedStore({ dataDir: options.dataDir ?? temp!.dir, compactionIntervalMs: 0 });
  const config = quotaConfig(options.env);
  const service = await createLlmQuotaService({
    config,
    logger: silentLogger(),
    clock: options.clock ?? new ManualClock('2025-03-15T12:00:30Z'),
    leaseClock: options.leaseClock,
    store,
    bus: options.bus,
  });
  if (options.start !== false) await service.start();
  return {
    service,
    store,
    config,
    async stop() {
      await service.stop();
      if (!options.store) await store.close();
      temp?.remove();
    },
  };
}

let sequence = 0;
/** A valid completion event; override any field. */
export function completion(overrides: Partial<LlmCompletionEvent> = {}): LlmCompletionEvent {
  sequence++;
  return {
    id: `evt-${sequence}-${randomUUID()}`,
    version: 1,
    occurredAt: '2025-03-15T12:00:10Z',
    orgSlug: 'acme',
    userId: 'user-1',
    model: 'gpt-4o-mini',
    provider: 'openai',
    usage: { prompt_tokens: 70, completion_tokens: 30, total_tokens: 100 },
    cost: 0.25,
    ...overrides,
  };
}

/** What a test of llm-quota works with: its bus, its clock, the service itself. */
export interface QuotaTestWorld {
  bus: Bus;
  clock: ManualClock;
  quota: QuotaServiceHandle;
}

/**
 * A fresh llm-quota for each test of the calling `describe`, on an in-process bus with a manual clock at `at`;
 * stopped after it. The world's members are set before each test.
 */
export function quotaServiceForEachTest(at: string): QuotaTestWorld {
  const world = {} as QuotaTestWorld;
  beforeEach(async () => {
    world.bus = createInProcessBus();
    world.clock = new ManualClock(at);
    world.quota = await startQuotaService({ bus: world.bus, clock: world.clock });
  });
  afterEach(async () => {
    await world.quota.stop();
    await world.bus.close();
  });
  return world;
}
