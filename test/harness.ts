import { createNatsBus } from '@platform/bus';
import { type Clock, listen, loadConfig, type RunningServer, silentLogger } from '@platform/kernel';
import { runCli } from '@platform/operator-cli';
import { type Env, type RunningPlatform, startPlatform } from '@platform/standalone';
import { freePort, tempDir } from '@platform/testkit';
import { startMailCatcher } from '../services/auth/test/mail-catcher';
import { createEdgeService, edgeConfigSchema } from '../services/edge/src';
import { tracked, untracked } from './support/live-platforms';

export interface TestPlatform extends RunningPlatform {
  dataDir: string;
}

/**
 * The whole platform as a user reaches it: every service behind a real edge on a loopback port,
 * a fresh embedded data folder, and NATS when `natsUrl` is given (else the in-process bus).
 */
type PlatformOptions = { env?: Env; clock?: Clock; natsUrl?: string; dataDir?: string; port?: number };

export function startTestPlatform(options: PlatformOptions = {}): Promise<TestPlatform> {
  const starting: Promise<TestPlatform> = tracked(startUntracked(options, () => untracked(starting)));
  return starting;
}

async function startUntracked(options: PlatformOptions, forget: () => void): Promise<TestPlatform> {
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
  let stopped: Promise<void> | undefined;
  return {
    ...platform,
    dataDir: data.dir,
    stop: () => {
      stopped ??= (async () => {
        forget();
        await platform.stop();
        data.remove();
      })();
      return stopped;
    },
  };
}

/**
 * The platform as the account and sign-in tests need it: its public root `base` on a free port (or `port`), which
 * is also the issuer of its tokens and the root of the links it mails; a mail catcher receiving those mails; cheap
 * password hashing; `secret` as the internal secret. `env` adds to that, or changes it. `cliEnv` is what the
 * operator CLI needs to reach auth.
 */
export async function startPlatformWithMail(options: { secret: string; env?: Env; port?: number }) {
  const mail = await startMailCatcher();
  const port = options.port ?? (await freePort());
  const base = `http://127.0.0.1:${port}`;
  const p = await startTestPlatform({
    port,
    env: {
      PLATFORM_INTERNAL_SECRET: options.secret,
      PUBLIC_BASE_URL: base,
      JWT_ISSUER: base,
      SMTP_URL: mail.url,
      PASSWORD_SCRYPT_N: '1024',
      PASSWORD_SCRYPT_P: '1',
      ...options.env,
    },
  });
  return { p, mail, base, cliEnv: { AUTH_URL: p.upstreams.auth, PLATFORM_INTERNAL_SECRET: options.secret } };
}

/** A new anonymous user of `platform`, signed in through the edge. */
export async function anonymousLogin(platform: TestPlatform): Promise<{ userId: string; token: string }> {
  return (await callJson(`${platform.baseUrl}/v2/login/anonymous`, 'POST')).body;
}

/** What the operator CLI needs to reach every part of `platform`, as the user of `token`. */
export const operatorCliEnv = (
  platform: TestPlatform,
  secret: string,
  token: string,
): Record<string, string> => ({
  PLATFORM_URL: platform.baseUrl,
  PLATFORM_GATEWAY_URL: platform.gatewayUrl,
  PLATFORM_TOKEN: token,
  AUTH_URL: platform.upstreams.auth,
  LLM_QUOTA_URL: platform.upstreams.llmQuota,
  PLATFORM_INTERNAL_SECRET: secret,
  DATA_DIR: platform.dataDir,
});

/** The operator CLI as `pnpm platform <argv> --json` runs it: its exit code, the outcome it printed, its stderr. */
export async function runCliJson(env: Record<string, string>, ...argv: string[]) {
  const out: string[] = [];
  const err: string[] = [];
  const code = await runCli([...argv, '--json'], env, { out: (l) => out.push(l), err: (l) => err.push(l) });
  // biome-ignore lint/suspicious/noExplicitAny: outcomes are asserted field by field
  const outcome: any = out.length ? JSON.parse(out.join('\n')) : null;
  return { code, outcome, err: err.join('\n') };
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
