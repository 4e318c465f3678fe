import {
  createPrivateKey,
  createPublicKey,
  generateKeyPairSync,
  type KeyObject,
  randomBytes,
  randomUUID,
} from 'node:crypto';
import http, { type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import { connect } from 'node:net';
import { type Bus, createInProcessBus } from '@platform/bus';
import { type Principal, permissionTree } from '@platform/contracts';
import {
  type Clock,
  type Logger,
  listen,
  loadConfig,
  openPrincipal,
  type RunningServer,
  silentLogger,
} from '@platform/kernel';
import jwt from 'jsonwebtoken';
import { edgeConfigSchema } from '../src/config';
import { createEdgeServiceForTests, type EdgeServiceUnderTest } from '../src/testing';

export const SECRET = 'test-internal-secret-0123456789abcdef0123456789';
export const ISSUER = 'http://localhost:8080';
export const AUDIENCE = 'platform-api';

export interface SigningKey {
  kid: string;
  privateKey: KeyObject;
  jwk: Record<string, unknown>;
}

export function makeSigningKey(kid = `k-${randomUUID()}`): SigningKey {
  // encoded by the generation job, then imported: a KeyObject straight from generateKeyPairSync can deadlock
  // Node 20 when read (docs/decisions/0087)
  const { privateKey, publicKey } = generateKeyPairSync('rsa', {
    modulusLength: 2048,
    publicKeyEncoding: { type: 'spki', format: 'pem' },
    privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
  });
  return {
    kid,
    privateKey: createPrivateKey(privateKey),
    jwk: { ...createPublicKey(publicKey).export({ format: 'jwk' }), kid, alg: 'RS256', use: 'sig' },
  };
}

export interface SessionClaims {
  sub?: string;
  platformSessionId?: string;
  iss?: string;
  aud?: string;
  /** seconds from `now` */
  expiresIn?: number;
  now?: Date;
  scope?: string;
  clientId?: string;
  /** the header's `typ`: `at+jwt` for the OpenID provider's access tokens (RFC 9068), `JWT` for the platform's own */
  typ?: string;
}

export function signSession(key: SigningKey, claims: SessionClaims = {}): string {
  const iat = Math.floor((claims.now ?? new Date()).getTime() / 1000);
  return jwt.sign(
    {
      sub: claims.sub ?? 'user-1',
      platformSessionId: claims.platformSessionId ?? 'session-1',
      jti: randomUUID(),
      iat,
      exp: iat + (claims.expiresIn ?? 3600),
      scope: claims.scope ?? 'openid',
      client_id: claims.clientId ?? 'platform',
      iss: claims.iss ?? ISSUER,
      aud: claims.aud ?? AUDIENCE,
    },
    key.privateKey,
    {
      algorithm: 'RS256',
      keyid: key.kid,
      ...(claims.typ ? { header: { alg: 'RS256', typ: claims.typ } } : {}),
    },
  );
}

export interface Echo {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  rawHeaders: string[];
  body: string;
  upstream: string;
}

export type Route = (req: IncomingMessage, res: ServerResponse, body: string) => boolean | undefined;

/** A loopback upstream that echoes what it received, with optional routes of its own. */
export async function startUpstream(name: string, routes: Record<string, Route> = {}) {
  const received: Echo[] = [];
  const sockets = new Set<unknown>();
  const server = await listen(
    (req, res) => {
      sockets.add(req.socket);
      const path = (req.url ?? '/').split('?')[0]!;
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const body = Buffer.concat(chunks).toString('utf8');
        const route = routes[path];
        if (route?.(req, res, body)) return;
        const echo: Echo = {
          method: req.method!,
          url: req.url!,
          headers: req.headers,
          rawHeaders: req.rawHeaders,
          body,
          upstream: name,
        };
        received.push(echo);
        res.setHeader('content-type', 'application/json');
        res.setHeader('keep-alive', 'timeout=5');
        res.end(JSON.stringify(echo));
      });
    },
    0,
    '127.0.0.1',
  );
  return {
    server,
    url: server.url,
    received,
    connections: () => sockets.size,
    close: () => server.close(100),
  };
}

export interface PrincipalAnswer {
  principal: Principal;
  expiresAt: string | null;
  cacheTtlSeconds: number;
}

/** A stand-in for auth: serves a JWKS and `POST /internal/principal` from tables the test fills; echoes other paths. */
export async function startFakeAuth() {
  const state = {
    keys: [] as SigningKey[],
    jwksFetches: 0,
    jwksDown: false,
    principalCalls: [] as Array<{ credential: Record<string, string>; orgSlug?: string }>,
    /** credential value (token/key, or `session:<id>`) → answer; absent = 401 */
    answers: new Map<string, (orgSlug?: string) => PrincipalAnswer | null>(),
    internalStatus: 200,
    /** while set, principal answers (decided when each call arrives) are held back until it resolves */
    held: null as Promise<void> | null,
  };
  const upstream = await startUpstream('auth', {
    '/oidc/jwks': (_req, res) => {
      state.jwksFetches++;
      if (state.jwksDown) {
        res.statusCode = 503;
        res.end('{}');
        return true;
      }
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ keys: state.keys.map((k) => k.jwk) }));
      return true;
    },
    '/internal/principal': (req, res, body) => {
      if (req.headers['x-platform-internal-secret'] !== SECRET) {
        res.statusCode = 401;
        res.end('{}');
        return true;
      }
      const parsed = JSON.parse(body) as { credential: Record<string, string>; orgSlug?: string };
      state.principalCalls.push(parsed);
      if (state.internalStatus !== 200) {
        res.statusCode = state.internalStatus;
        res.end('{}');
        return true;
      }
      const c = parsed.credential;
      const id = c.kind === 'session' ? `session:${c.sessionId}` : (c.token ?? c.key)!;
      const answer = state.answers.get(id)?.(parsed.orgSlug) ?? null;
      const send = () => {
        res.setHeader('content-type', 'application/json');
        res.statusCode = answer ? 200 : 401;
        res.end(JSON.stringify(answer ?? { error: 'Unauthorized', status: 401 }));
      };
      if (state.held) void state.held.then(send);
      else send();
      return true;
    },
  });
  return { ...upstream, state };
}

export function principalOf(overrides: {
  kind?: Principal['credential']['kind'];
  id?: string;
  userId?: string | null;
  sessionId?: string | null;
  org?: { slug: string; permissions?: string[]; scopes?: string[] } | null;
  scopes?: string[];
}): Principal {
  const org = overrides.org
    ? {
        slug: overrides.org.slug,
        name: overrides.org.slug,
        role: {
          slug: 'member',
          permissions: overrides.org.permissions ?? [],
          scopes: overrides.org.scopes ?? [],
        },
        groups: [],
        settings: {},
        subscription: null,
      }
    : null;
  return {
    credential: { kind: overrides.kind ?? 'access_token', id: overrides.id ?? randomUUID() },
    session: { id: overrides.sessionId ?? null, org },
    user: {
      id: overrides.userId === undefined ? 'user-1' : overrides.userId,
      email: null,
      anonymous: false,
      role: null,
    },
    run: {
      permissions: permissionTree(overrides.org?.permissions ?? []),
      scopes: overrides.scopes ?? [],
      correlationId: '',
      sourceWorkspaceId: null,
    },
  };
}

export const accessToken = () => `at:${randomBytes(32).toString('base64url')}`;
export const workspaceKey = () => `wak_${randomBytes(32).toString('base64url')}`;
export const orgKey = (slug: string) => `iak_${slug}_${randomUUID()}`;

export type FakeAuth = Awaited<ReturnType<typeof startFakeAuth>>;
export type Upstream = Awaited<ReturnType<typeof startUpstream>>;

/**
 * The services an edge stands in front of: a fake auth whose JWKS holds `key` (the key session JWTs are signed
 * with), and llm-quota and legacy-agent upstreams that echo what reaches them (but for `quotaRoutes`).
 * `urls` are the edge's options naming them.
 */
export async function startBackends(options: { quotaRoutes?: Record<string, Route> } = {}) {
  const key = makeSigningKey();
  const auth = await startFakeAuth();
  auth.state.keys.push(key);
  const quota = await startUpstream('llm-quota', options.quotaRoutes);
  const legacy = await startUpstream('legacy-agent');
  return {
    key,
    auth,
    quota,
    legacy,
    urls: { authUrl: auth.url, llmQuotaUrl: quota.url, legacyUrl: legacy.url },
    async close() {
      await Promise.all([auth.close(), quota.close(), legacy.close()]);
    },
  };
}
export type Backends = Awaited<ReturnType<typeof startBackends>>;

export interface TestEdge {
  url: string;
  /** the admin listener (/healthz, /readyz, /metrics) */
  adminUrl: string;
  port: number;
  service: EdgeServiceUnderTest;
  server: RunningServer;
  bus: Bus;
  close(): Promise<void>;
}

export async function startEdge(options: {
  authUrl: string;
  llmQuotaUrl?: string;
  legacyUrl?: string;
  env?: Record<string, string>;
  clock?: Clock;
  bus?: Bus;
  logger?: Logger;
  /** kernel `listen`'s: how long the rest of an answered request's body is still read */
  lingeringTimeMs?: number;
}): Promise<TestEdge> {
  const config = loadConfig(edgeConfigSchema, {
    PLATFORM_INTERNAL_SECRET: SECRET,
    AUTH_URL: options.authUrl,
    LLM_QUOTA_URL: options.llmQuotaUrl ?? options.authUrl,
    LEGACY_AGENT_URL: options.legacyUrl ?? options.authUrl,
    LOG_LEVEL: 'silent',
    ...options.env,
  });
  const bus = options.bus ?? createInProcessBus();
  const service = await createEdgeServiceForTests({
    config,
    logger: options.logger ?? silentLogger(),
    clock: options.clock ?? { now: () => new Date() },
    bus,
  });
  await service.start();
  const server = await listen(service.handler, 0, '127.0.0.1', { lingeringTimeMs: options.lingeringTimeMs });
  const admin = await listen(service.admin, 0, '127.0.0.1');
  return {
    url: server.url,
    adminUrl: admin.url,
    port: server.port,
    service,
    server,
    bus,
    async close() {
      await server.close(100);
      await admin.close(100);
      await service.stop();
      if (!options.bus) await bus.close();
    },
  };
}

export interface Answer {
  status: number;
  headers: IncomingHttpHeaders;
  text: string;
  // biome-ignore lint/suspicious/noExplicitAny: test bodies are read loosely
  json: any;
}

/** One request; `headers` may be a flat raw list to send duplicates or odd spellings. */
export function request(
  base: string,
  path: string,
  options: {
    method?: string;
    headers?: Record<string, string> | string[];
    body?: string | Buffer;
    chunked?: Buffer[];
    /** wait this long before each chunk after the first */
    chunkDelayMs?: number;
  } = {},
): Promise<Answer> {
  const url = new URL(path, base);
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: url.hostname,
        port: url.port,
        path: `${url.pathname}${url.search}`,
        method: options.method ?? 'GET',
        headers: options.headers as never,
        agent: false,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let json: unknown;
          try {
            json = JSON.parse(text);
          } catch {
            json = undefined;
          }
          resolve({ status: res.statusCode!, headers: res.headers, text, json });
        });
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    if (options.chunked) {
      const [first, ...rest] = options.chunked;
      if (first) req.write(first);
      void (async () => {
        for (const c of rest) {
          if (options.chunkDelayMs) await new Promise((resolve) => setTimeout(resolve, options.chunkDelayMs));
          req.write(c);
        }
        req.end();
      })();
    } else {
      req.end(options.body);
    }
  });
}

/** Sends raw bytes and returns the status line's code and the raw answer (for header fields Node would fold). */
export function rawRequest(
  port: number,
  text: string,
  body?: Buffer,
): Promise<{ status: number; raw: string }> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    let raw = '';
    socket.on('data', (d) => {
      raw += d.toString('utf8');
    });
    socket.on('end', () => resolve({ status: Number(raw.slice(9, 12)), raw }));
    socket.on('error', reject);
    socket.write(text);
    if (body) socket.write(body);
  });
}

export const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

/** The principal the edge sealed into the request an echoing upstream answered with (`clock` says when it is opened). */
export const forwardedPrincipal = (answer: Answer, clock: Clock) =>
  openPrincipal(answer.json.headers['x-platform-principal'], SECRET, clock);
