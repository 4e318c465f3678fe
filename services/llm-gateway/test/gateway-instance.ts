import { writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Bus } from '@platform/bus';
import { type Principal, permissionTree } from '@platform/contracts';
import {
  type Logger,
  listen,
  loadConfig,
  PRINCIPAL_HEADER,
  sealPrincipal,
  silentLogger,
  systemClock,
  USER_ID_HEADER,
} from '@platform/kernel';
import { createEmbeddedStore, type Store } from '@platform/store';
import { tempDir } from '@platform/testkit';
import { llmGatewayConfigSchema } from '../src/config';
import type { OrgGatewaySettings } from '../src/quota/org-settings';
import { createLlmGatewayService } from '../src/service';
import { INTERNAL_SECRET } from './support';

/** One gateway instance on a loopback port, over a given store and bus (instances share the store). */
export async function startInstance(store: Store, bus: Bus, env: Record<string, string> = {}) {
  const config = loadConfig(llmGatewayConfigSchema, {
    PLATFORM_INTERNAL_SECRET: INTERNAL_SECRET,
    LLM_QUOTA_URL: 'http://127.0.0.1:9',
    LOG_LEVEL: 'silent',
    ...env,
  });
  const service = await createLlmGatewayService({
    config,
    logger: silentLogger(),
    clock: systemClock,
    store,
    bus,
  });
  await service.start();
  const server = await listen(service.handler, 0, '127.0.0.1');
  const url = server.url;
  /** a request with the operator's credential */
  const call = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(`${url}${path}`, {
      method,
      headers: { 'content-type': 'application/json', 'x-platform-internal-secret': INTERNAL_SECRET },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    // biome-ignore lint/suspicious/noExplicitAny: answers are asserted field by field
    return { status: res.status, body: (text ? JSON.parse(text) : null) as any };
  };
  return {
    call,
    async stop() {
      await server.close();
      await service.stop();
    },
  };
}

export type GatewayInstance = Awaited<ReturnType<typeof startInstance>>;

/** A catalogue entry served by the built-in mock provider. */
export const catalogueEntry = (model_id: string) => ({
  model_id,
  type: 'completion',
  provider_config: { provider: 'mock', model: 'mock-chat' },
});

/** Where the in-process gateway service asks llm-quota; `fakeQuota` answers there. */
export const QUOTA_URL = 'http://llm-quota.test';

/**
 * The gateway service in this process on the gateway file `file`, not listening (tests call its handler with
 * supertest), asking llm-quota at QUOTA_URL through `fetch`.
 */
export async function startGatewayService(options: {
  file: unknown;
  bus: Bus;
  fetch: typeof fetch;
  env?: Record<string, string>;
  store?: Store;
  logger?: Logger;
}) {
  const folder = tempDir('gateway-file-');
  const configFile = path.join(folder.dir, 'gateway.json');
  writeFileSync(configFile, JSON.stringify(options.file));
  const service = await createLlmGatewayService({
    config: loadConfig(llmGatewayConfigSchema, {
      PLATFORM_INTERNAL_SECRET: INTERNAL_SECRET,
      LLM_QUOTA_URL: QUOTA_URL,
      LLM_GATEWAY_CONFIG: configFile,
      ...options.env,
    }),
    clock: systemClock,
    logger: options.logger ?? silentLogger(),
    store: options.store ?? createEmbeddedStore(),
    bus: options.bus,
    fetch: options.fetch,
  });
  await service.start();
  return {
    service,
    async stop() {
      await service.stop();
      folder.remove();
    },
  };
}

/**
 * A `fetch` for the gateway service: llm-quota's answer at QUOTA_URL is `settingsOf` the organization it asks
 * about (a 404 when none), every other address (a provider's) is the network's.
 */
export const fakeQuota =
  (settingsOf: (orgSlug: string) => OrgGatewaySettings | undefined): typeof fetch =>
  async (input, init) => {
    const url = String(input instanceof Request ? input.url : input);
    if (!url.startsWith(QUOTA_URL)) return fetch(input, init);
    const slug = /\/internal\/orgs\/([^/]+)\//.exec(url)?.[1];
    const found = slug ? settingsOf(decodeURIComponent(slug)) : undefined;
    return found ? Response.json(found) : Response.json({ error: 'NOT_FOUND' }, { status: 404 });
  };

/** the start of the current UTC month, as llm-quota names the month it counted */
export const thisMonthStart = (now = new Date()): string =>
  new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1)).toISOString();

/** An organization's settings as llm-quota answers them: a roomy plan, nothing spent, every model allowed. */
export const orgSettings = (
  orgSlug: string,
  change: Partial<Omit<OrgGatewaySettings, 'models'>> & {
    models?: Partial<OrgGatewaySettings['models']>;
  } = {},
): OrgGatewaySettings => ({
  orgSlug,
  plan: { name: 'roomy', currency: 'USD' },
  policy: 'hard_block',
  limits: {},
  per_user_defaults: {},
  org_user_quotas: { overrides: {}, by_role: {} },
  month: { start: thisMonthStart(), tokens: 0, cost: 0 },
  ...change,
  models: { allowed: null, defaults: {}, downgrade: {}, ...change.models },
});

/** The principal the edge seals for the owner of organization `slug`, signed in with a session. */
const ownerPrincipal = (slug: string): Principal => ({
  credential: { kind: 'session', id: `sess-${slug}` },
  session: {
    id: `sess-${slug}`,
    org: {
      slug,
      name: slug,
      role: { slug: 'owner', permissions: ['models:read'], scopes: [] },
      groups: [],
      settings: {},
      subscription: null,
    },
  },
  user: { id: `user-${slug}`, email: `u@${slug}.test`, anonymous: false, role: null },
  run: {
    permissions: permissionTree(['models:read']),
    scopes: [],
    correlationId: 'c',
    sourceWorkspaceId: null,
  },
});

/** The headers the edge sends the gateway with a request of the owner of organization `slug`. */
export const ownerHeaders = (slug: string) => ({
  [PRINCIPAL_HEADER]: sealPrincipal(ownerPrincipal(slug), INTERNAL_SECRET),
  [USER_ID_HEADER]: `user-${slug}`,
});
