import { createNatsBus } from '@platform/bus';
import { type Clock, listen, loadConfig, type RunningServer, silentLogger } from '@platform/kernel';
import { type Env, type RunningPlatform, startPlatform } from '@platform/standalone';
import { freePort, tempDir } from '@platform/testkit';
import { createEdgeService, edgeConfigSchema } from '../services/edge/src';

export interface TestPlatform extends RunningPlatform {
  dataDir: string;
}

/**
 * The whole platform as a user reaches it: every service behind a real edge on a loopback port,
 * a fresh embedded data folder, and NATS when `natsUrl` is given (else the in-process bus).
 */
export async function startTestPlatform(
  options: { env?: Env; clock?: Clock; natsUrl?: string; dataDir?: string; port?: number } = {},
): Promise<TestPlatform> {
  const data = options.dataDir ? { dir: options.dataDir, remove: () => undefined } : tempDir('platform-e2e-');
  // known before the start: auth builds mailed links on the public root, never on a request's Host
  const port = options.port ?? (await freePort());
  const platform = await startPlatform({
    env: {
      DATA_DIR: data.dir,
      LOG_LEVEL: 'silent',
      PUBLIC_BASE_URL: `http://127.0.0.1:${port}`,
      ...(options.natsUrl ? { NATS_URL: options.natsUrl } : {}),
      ...options.env,
    },
    clock: options.clock,
    logger: silentLogger(),
    port,
    adminPort: 0,
    host: '127.0.0.1',
  });
  return {
    ...platform,
    dataDir: data.dir,
    stop: async () => {
      await platform.stop();
      data.remove();
    },
  };
}

/**
 * A second edge in front of `platform`'s services, on its own NATS connection (as a second replica would be):
 * what one edge learns from auth's events, this one must learn too. `secret` is the platform's internal secret.
 */
export async function startSecondEdge(
  platform: TestPlatform,
  natsUrl: string,
  secret: string,
): Promise<{ server: RunningServer; stop(): Promise<void> }> {
  const bus = await createNatsBus({ url: natsUrl, name: 'edge-2' });
  const config = loadConfig(edgeConfigSchema, {
    PLATFORM_INTERNAL_SECRET: secret,
    AUTH_URL: platform.upstreams.auth,
    LLM_QUOTA_URL: platform.upstreams.llmQuota,
    LEGACY_AGENT_URL: platform.upstreams.legacyAgent,
  });
  const edge = await createEdgeService({
    config,
    logger: silentLogger(),
    clock: { now: () => new Date() },
    bus,
  });
  await edge.start();
  const server = await listen(edge.handler, 0, '127.0.0.1');
  return {
    server,
    stop: async () => {
      await server.close(100);
      await edge.stop();
      await bus.close();
    },
  };
}

export interface JsonReply {
  status: number;
  // biome-ignore lint/suspicious/noExplicitAny: tests read answers of many shapes
  body: any;
}

/** One JSON request as a client sends it: a Bearer credential or an API key, the answer parsed. */
export async function callJson(
  url: string,
  method: string,
  options: { bearer?: string; apiKey?: string; body?: unknown } = {},
): Promise<JsonReply> {
  const headers: Record<string, string> = {};
  if (options.bearer) headers.authorization = `Bearer ${options.bearer}`;
  if (options.apiKey) headers['x-platform-api-key'] = options.apiKey;
  if (options.body !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(url, {
    method,
    headers,
    body: options.body === undefined ? undefined : JSON.stringify(options.body),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null };
}
