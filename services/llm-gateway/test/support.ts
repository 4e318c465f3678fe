import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { type LlmCompletionEvent, Subjects } from '@platform/contracts';
import type { Clock } from '@platform/kernel';
import { type ProviderSimulator, startProviderSimulator, tempDir, waitFor } from '@platform/testkit';
import OpenAI from 'openai';
import { startTestPlatform, type TestPlatform } from '../../../test/harness';
import type { MODEL_TYPES } from '../src/catalogue/model-entry';

export interface Reply {
  status: number;
  headers: Headers;
  // biome-ignore lint/suspicious/noExplicitAny: answers are asserted field by field
  body: any;
}
export type Caller = { bearer: string } | { apiKey: string } | null;

export const INTERNAL_SECRET = 'gateway-tests-internal-secret-0123456789abcdef';

/** Plans for the tests: `roomy` (the default) and `tight`, assigned per organization by the operator API. */
export const TEST_PLANS = {
  roomy: {
    limits: {
      'llm.rpm': 100_000,
      'llm.tpm': 100_000_000,
      'llm.monthly_tokens': 1_000_000_000,
      'llm.monthly_cost': 1_000_000,
    },
    per_user_defaults: { rpm: 100_000, tpm: 100_000_000 },
  },
  tight: {
    limits: {
      'llm.rpm': 5,
      'llm.tpm': 100_000_000,
      'llm.monthly_tokens': 1_000_000_000,
      'llm.monthly_cost': 1_000_000,
    },
    per_user_defaults: { rpm: 3 },
  },
  /** an org rpm of 50 and no per-user limit (two instances against one limit) */
  rpm50: {
    limits: {
      'llm.rpm': 50,
      'llm.tpm': 100_000_000,
      'llm.monthly_tokens': 1_000_000_000,
      'llm.monthly_cost': 1_000_000,
    },
    per_user_defaults: {},
  },
  budget: {
    limits: {
      'llm.rpm': 100_000,
      'llm.tpm': 100_000_000,
      'llm.monthly_tokens': 400,
      'llm.monthly_cost': 1_000_000,
    },
    per_user_defaults: {},
  },
};

/** The gateway file the tests run on: the simulator's OpenAI and Anthropic faces, and the mock provider. */
export function gatewayFile(sim: ProviderSimulator) {
  return {
    providers: [
      { name: 'sim', type: 'openai', baseUrl: sim.openaiBaseUrl, apiKey: 'sk-sim-secret' },
      { name: 'mock', type: 'mock' },
      { name: 'claude', type: 'anthropic', baseUrl: sim.anthropicBaseUrl, apiKey: 'sk-ant-secret' },
    ],
    models: [
      {
        model_id: 'sim/gpt',
        type: 'completion',
        provider_config: { provider: 'sim', model: 'gpt-sim', forward_headers: ['x-trace-id'] },
        pricing: { input_per_million: 2, output_per_million: 8 },
        parameters_billion: 8,
      },
      // sim/gpt giving up on a provider silent for 2 s: the tests of a stream whose end never comes alone use it, so
      // that no ordinary answer of a busy machine races so short a timeout
      {
        model_id: 'sim/gpt-stalled',
        type: 'completion',
        provider_config: { provider: 'sim', model: 'gpt-stalled-sim' },
        pricing: { input_per_million: 2, output_per_million: 8 },
        timeout_ms: 2_000,
      },
      {
        model_id: 'sim/cheap',
        type: 'completion',
        provider_config: { provider: 'sim', model: 'cheap-sim' },
        pricing: { input_per_million: 0.1, output_per_million: 0.2 },
      },
      {
        model_id: 'sim/identity',
        type: 'completion',
        provider_config: {
          provider: 'sim',
          model: 'identity-sim',
          headers: { 'x-user-id': { value: '{user.id}', required: true }, 'x-org': '{org.slug}' },
        },
        pricing: { input_per_million: 1, output_per_million: 1 },
      },
      // failing over after its attempts: the gateway's default timeout, so no answer of a busy machine races it
      {
        model_id: 'sim/flaky',
        type: 'completion',
        provider_config: { provider: 'sim', model: 'flaky-sim' },
        pricing: { input_per_million: 1, output_per_million: 1 },
        failover: 'sim/cheap',
      },
      // failing over once a silent provider's 300 ms are up: the tests of a silent provider alone use it
      {
        model_id: 'sim/stalling',
        type: 'completion',
        provider_config: { provider: 'sim', model: 'stalling-sim' },
        pricing: { input_per_million: 1, output_per_million: 1 },
        timeout_ms: 300,
        failover: 'sim/cheap',
      },
      {
        model_id: 'sim/slow',
        type: 'completion',
        provider_config: { provider: 'sim', model: 'slow-sim' },
        pricing: { input_per_million: 1, output_per_million: 1 },
        timeout_ms: 300,
      },
      {
        model_id: 'sim/embed',
        type: 'embeddings',
        provider_config: { provider: 'sim', model: 'embed-sim' },
        pricing: { input_per_million: 0.5, output_per_million: 0 },
        supported_dimensions: [64, 256],
      },
      {
        model_id: 'sim/rerank',
        type: 'completion',
        provider_config: { provider: 'sim', model: 'rerank-sim' },
        pricing: { input_per_million: 1, output_per_million: 0 },
        native_rerank: true,
      },
      {
        model_id: 'sim/claude',
        type: 'completion',
        provider_config: { provider: 'claude', model: 'claude-sim' },
        pricing: { input_per_million: 3, output_per_million: 15 },
        parameters_billion: 70,
      },
      {
        model_id: 'mock/chat',
        type: 'completion',
        provider_config: { provider: 'mock', model: 'mock-chat' },
        pricing: { input_per_million: 1, output_per_million: 2 },
      },
    ],
  };
}

/** An entry of the gateway file: `model_id`, a model of `type` served as `model` by the provider named `provider`. */
export const modelEntry = (
  model_id: string,
  type: (typeof MODEL_TYPES)[number],
  served: { provider: string; model: string },
  pricing: Record<string, number>,
  more: Record<string, unknown> = {},
) => ({ model_id, type, provider_config: served, pricing, ...more });

export interface GatewayWorld {
  p: TestPlatform;
  sim: ProviderSimulator;
  call(
    base: 'base' | 'gateway',
    method: string,
    path: string,
    as: Caller,
    body?: unknown,
    headers?: Record<string, string>,
  ): Promise<Reply>;
  login(): Promise<{ userId: string; token: string }>;
  /** a new user made a platform administrator, the way `pnpm platform admin grant` does */
  platformAdmin(): Promise<{ userId: string; token: string }>;
  /** a new organization owned by a new user, on a plan */
  org(slug: string, plan?: keyof typeof TEST_PLANS): Promise<{ owner: { userId: string; token: string } }>;
  /** an organization API key the owner makes, holding `models:read` (its `_id` and the key itself) */
  orgKey(owner: { token: string }, slug: string, name: string): Promise<{ id: string; apiKey: string }>;
  client(as: { bearer: string } | { apiKey: string }): OpenAI;
  /**
   * the org's usage once llm-quota has counted `requests` requests and, when given, `tokens` tokens and `cost`
   * USD (the minute and month counters are separate documents: a report may fall between their updates).
   * The minute gauge starts again at 0 when a minute ends: once the minute the requests were sent in (`sentIn`,
   * minuteNow() before the first) is over, the month's tokens or cost alone say they were counted. Without `sentIn`
   * they alone say it at once, since a minute may have ended between the requests and this call (its gauge then
   * shows none of them); with neither tokens nor cost, the requests and the read must share one minute.
   */
  counted(
    slug: string,
    as: Caller,
    expected: { requests: number; tokens?: number; cost?: number; sentIn?: number },
  ): Promise<Reply>;
  stop(): Promise<void>;
}

export async function startGatewayWorld(
  options: {
    natsUrl?: string;
    env?: Record<string, string>;
    /** models added to the tests' gateway file */
    models?: unknown[];
    /** changes the tests' gateway file (other providers, platform defaults), after `models` are added */
    file?: (base: ReturnType<typeof gatewayFile>) => unknown;
    /** the platform's clock (default: the system's) */
    clock?: Clock;
  } = {},
): Promise<GatewayWorld> {
  const sim = await startProviderSimulator({ port: 0 });
  const dir = tempDir('gateway-file-');
  const file = path.join(dir.dir, 'gateway.json');
  const base = gatewayFile(sim);
  base.models.push(...((options.models ?? []) as typeof base.models));
  writeFileSync(file, JSON.stringify(options.file ? options.file(base) : base));
  const p = await startTestPlatform({
    natsUrl: options.natsUrl,
    clock: options.clock,
    env: {
      PLATFORM_INTERNAL_SECRET: INTERNAL_SECRET,
      LLM_GATEWAY_CONFIG: file,
      LLM_GATEWAY_SETTINGS_TTL_MS: '0',
      LLM_GATEWAY_RETRY_BASE_MS: '5',
      LLM_QUOTA_PLANS: JSON.stringify(TEST_PLANS),
      LLM_QUOTA_DEFAULT_PLAN: 'roomy',
      ...options.env,
    },
  });
  const call: GatewayWorld['call'] = async (base, method, urlPath, as, body, extra = {}) => {
    const headers: Record<string, string> = { ...extra };
    if (as && 'bearer' in as) headers.authorization = `Bearer ${as.bearer}`;
    if (as && 'apiKey' in as) headers['x-platform-api-key'] = as.apiKey;
    if (body !== undefined) headers['content-type'] = 'application/json';
    const res = await fetch(`${base === 'base' ? p.baseUrl : p.gatewayUrl}${urlPath}`, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    let parsed: unknown = text;
    try {
      parsed = text ? JSON.parse(text) : null;
    } catch {}
    return { status: res.status, headers: res.headers, body: parsed };
  };
  const login = async () =>
    (await call('base', 'POST', '/v2/login/anonymous', null)).body as { userId: string; token: string };
  return {
    p,
    sim,
    call,
    login,
    async platformAdmin() {
      const user = await login();
      const res = await fetch(`${p.upstreams.auth}/internal/users/${user.userId}/platform-admin`, {
        method: 'PUT',
        headers: { 'content-type': 'application/json', 'x-platform-internal-secret': INTERNAL_SECRET },
        body: JSON.stringify({ granted: true }),
      });
      if (res.status !== 200) throw new Error(`platform admin: ${res.status}`);
      return user;
    },
    async org(slug, plan = 'roomy') {
      const owner = await login();
      const made = await call('base', 'POST', '/v2/orgs', { bearer: owner.token }, { slug, name: slug });
      if (made.status !== 201) throw new Error(`org ${slug}: ${made.status} ${JSON.stringify(made.body)}`);
      if (plan !== 'roomy') {
        const res = await fetch(`${p.upstreams.llmQuota}/internal/orgs/${slug}/plan`, {
          method: 'PUT',
          headers: { 'content-type': 'application/json', 'x-platform-internal-secret': INTERNAL_SECRET },
          body: JSON.stringify({ plan }),
        });
        if (res.status !== 200) throw new Error(`plan of ${slug}: ${res.status}`);
      }
      return { owner };
    },
    async orgKey(owner, slug, name) {
      const made = await call(
        'base',
        'POST',
        `/v2/orgs/${slug}/apikeys`,
        { bearer: owner.token },
        { name, permissions: ['models:read'] },
      );
      if (made.status !== 201) throw new Error(`key of ${slug}: ${made.status} ${JSON.stringify(made.body)}`);
      return { id: made.body._id as string, apiKey: made.body.apiKey as string };
    },
    client(as) {
      return 'bearer' in as
        ? new OpenAI({ baseURL: `${p.gatewayUrl}/v1`, apiKey: as.bearer, maxRetries: 0 })
        : // as the README says: the SDK sends its apiKey as a Bearer token too, which the edge takes as the same key
          new OpenAI({
            baseURL: `${p.gatewayUrl}/v1`,
            apiKey: as.apiKey,
            maxRetries: 0,
            defaultHeaders: { 'x-platform-api-key': as.apiKey },
          });
    },
    async counted(slug, as, { requests, tokens, cost, sentIn }) {
      let last: Reply | null = null;
      await waitFor(
        async () => {
          last = await call('gateway', 'GET', '/v1/quotas/usage', as);
          const rpm = last.body?.enforced?.find((g: { key: string }) => g.key === 'llm.rpm');
          const month = last.body?.enforced?.find((g: { key: string }) => g.key === 'llm.monthly_tokens');
          const spent = last.body?.enforced?.find((g: { key: string }) => g.key === 'llm.monthly_cost');
          return (
            last.status === 200 &&
            rpm !== undefined &&
            (rpm.used >= requests ||
              ((tokens ?? cost) !== undefined && (sentIn === undefined || minuteNow() !== sentIn))) &&
            (tokens === undefined || (month !== undefined && month.used >= tokens)) &&
            (cost === undefined || (spent !== undefined && spent.used >= cost - 1e-9))
          );
        },
        // the edge answers 60 usage reads a minute per caller: a poll every 350 ms never spends them within the wait
        { what: `llm-quota to count ${requests} requests of ${slug}`, timeoutMs: 20_000, intervalMs: 350 },
      );
      return last!;
    },
    async stop() {
      await p.stop();
      await sim.close();
      dir.remove();
    },
  };
}

/** The usage events (`llm.completion`) the gateway publishes from now on, until `stop()`. */
export interface CompletionRecord {
  /** every event so far, in the order published */
  events: LlmCompletionEvent[];
  /** the event of the request `requestId`, once published */
  of(requestId: string): Promise<LlmCompletionEvent>;
  stop(): void;
}

export function recordCompletions(w: GatewayWorld): CompletionRecord {
  const events: LlmCompletionEvent[] = [];
  const stop = w.p.bus.subscribe(Subjects.llmCompletion, (e) => {
    events.push(e as LlmCompletionEvent);
  });
  return {
    events,
    of: (requestId) =>
      waitFor(() => events.find((e) => e.requestId === requestId), {
        what: `the usage event of ${requestId}`,
      }),
    stop,
  };
}

/** The named events of a raw server-sent-events stream (Responses, Messages), in order. */
// biome-ignore lint/suspicious/noExplicitAny: events are asserted field by field
export function sseEvents(body: string): Array<{ event: string; data: any }> {
  return body
    .split('\n\n')
    .filter(Boolean)
    .map((frame) => ({
      event: /^event: (.*)$/m.exec(frame)?.[1] ?? '',
      data: JSON.parse(/^data: (.*)$/m.exec(frame)?.[1] ?? 'null'),
    }));
}

/** A new `at:` access token of the user of `session`, valid for a day. */
export async function accessToken(
  w: GatewayWorld,
  session: { bearer: string },
  name: string,
): Promise<string> {
  const expiresAt = new Date(Date.now() + 86_400_000).toISOString();
  return (await w.call('base', 'POST', '/v2/user/accessTokens', session, { name, expiresAt })).body.token;
}

/** A new API key of organization `slug`, made by one of its admins, with `permissions` (by default `models:read`). */
export async function orgApiKey(
  w: GatewayWorld,
  admin: Caller,
  slug: string,
  permissions = ['models:read'],
): Promise<string> {
  const name = `key-${Math.random()}`;
  return (await w.call('base', 'POST', `/v2/orgs/${slug}/apikeys`, admin, { name, permissions })).body.apiKey;
}

/** The platform's clock for a test that moves time: it runs `ahead` milliseconds ahead of the system's. */
export function clockAhead(): { ahead: number; clock: Clock } {
  const time = { ahead: 0, clock: { now: () => new Date(Date.now() + time.ahead) } };
  return time;
}

/** the wall clock's minute: llm-quota's minute gauges count the requests of the current one */
export const minuteNow = () => Math.floor(Date.now() / 60_000);

export const gauge = (reply: Reply, key: string): { used: number; limit: number } =>
  reply.body.enforced.find((g: { key: string }) => g.key === key);

type StreamRequest = { path: string; token: string; requestId: string; body: Record<string, unknown> };

/** `body` POSTed to `path` of the gateway with the user's session: the answer, and the abort that leaves it. */
async function openStream(w: GatewayWorld, request: StreamRequest) {
  const controller = new AbortController();
  const res = await fetch(`${w.p.gatewayUrl}${request.path}`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${request.token}`,
      'content-type': 'application/json',
      'x-request-id': request.requestId,
    },
    body: JSON.stringify(request.body),
    signal: controller.signal,
  });
  return { reader: res.body!.getReader(), leave: () => controller.abort() };
}

/**
 * A client that leaves a long stream after its first chunk: the simulator streams 100 words from `sim/gpt` at
 * 100 ms a chunk, `body` is POSTed to `path` of the gateway with the user's session, and the request is aborted
 * once the first chunk arrived. The cancellation tests of each wire format (chat, Responses, Anthropic Messages).
 */
export async function leaveStreamAfterFirstChunk(w: GatewayWorld, request: StreamRequest): Promise<void> {
  w.sim.script([
    {
      match: { model: 'gpt-sim', stream: true },
      chunkDelayMs: 100,
      reply: { content: Array.from({ length: 100 }, (_, i) => `w${i}`).join(' ') },
    },
  ]);
  const stream = await openStream(w, request);
  await stream.reader.read();
  stream.leave();
}

/**
 * A client that leaves a stream once a choice finished: `body` is POSTed to `path` of the gateway with the user's
 * session, read until the first `finish_reason`, and the request is aborted.
 */
export async function leaveStreamAtFinish(w: GatewayWorld, request: StreamRequest): Promise<void> {
  const stream = await openStream(w, request);
  const decoder = new TextDecoder();
  let seen = '';
  while (!/"finish_reason":"\w+"/.test(seen)) {
    const { value, done } = await stream.reader.read();
    if (done) break;
    seen += decoder.decode(value, { stream: true });
  }
  stream.leave();
}
