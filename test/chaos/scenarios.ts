import { randomBytes, randomUUID } from 'node:crypto';
import http from 'node:http';
import net from 'node:net';
import { Subjects } from '@platform/contracts';
import { type NatsServerHandle, startNatsServer, tempDir, waitFor } from '@platform/testkit';
import { connect, StringCodec } from 'nats';
import { INSPECTABLE_ENV, memoryAfterGc, rssOf, startPlatformProcesses } from './platform';

/**
 * The failure and fuzz harness (issue 13 item 2): each scenario runs the platform as `pnpm start` does
 * (every service in its own process), on loopback only, bounded in time and size, and returns figures.
 */

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
/** writes need a login rate far above the default 20 a minute per address */
const LOAD_ENV = { ANONYMOUS_LOGIN_RATE_LIMIT: '100000000' };

interface Answer {
  status: number;
  body: string;
}

const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });
const guarded = new WeakSet<object>();

/** a fuzzed request the platform has not answered by then is a failure of its own (it would hang a client) */
const UNANSWERED_AFTER_MS = 20_000;
const UNANSWERED = new Error('no answer');
const UNANSWERED_STATUS = -1;

function call(
  url: string,
  init: { method?: string; headers?: Record<string, string>; body?: string | Buffer } = {},
  deadlineMs?: number,
) {
  return new Promise<Answer>((resolve, reject) => {
    const req = http.request(url, { method: init.method ?? 'GET', headers: init.headers, agent }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString() }));
      res.on('error', reject);
    });
    req.on('error', reject);
    // an answer before the whole body was sent (413) resets the socket under the write: not a crash
    req.on('socket', (socket) => {
      if (guarded.has(socket)) return;
      guarded.add(socket);
      socket.on('error', () => undefined);
    });
    if (deadlineMs) {
      const deadline = setTimeout(() => {
        reject(UNANSWERED);
        req.destroy();
      }, deadlineMs);
      req.on('close', () => clearTimeout(deadline));
    }
    req.end(init.body);
  });
}

const login = async (baseUrl: string) => {
  const res = await call(`${baseUrl}/v2/login/anonymous`, { method: 'POST' });
  if (res.status !== 200) throw new Error(`login answered ${res.status}: ${res.body}`);
  return JSON.parse(res.body) as { userId: string; token: string };
};

// ---------------------------------------------------------------------------------------------------

export interface KillFigures {
  rounds: number;
  acknowledged: number;
  lost: number;
}

/**
 * kill -9 of every process during a burst of concurrent writes (anonymous logins: a user and a session
 * each), restart on the same data, and check that every acknowledged write is there (its session works).
 */
export async function killDuringWrites(rounds: number, log = console.log): Promise<KillFigures> {
  const data = tempDir('chaos-kill9-');
  let acknowledged = 0;
  let lost = 0;
  try {
    let platform = await startPlatformProcesses(data.dir, LOAD_ENV);
    for (let round = 1; round <= rounds; round++) {
      const acked: string[] = [];
      let writing = true;
      const writers = Array.from({ length: 16 }, async () => {
        while (writing) {
          try {
            const res = await call(`${platform.baseUrl}/v2/login/anonymous`, { method: 'POST' });
            if (res.status === 200) acked.push(JSON.parse(res.body).token);
          } catch {
            // the platform died under this request: not acknowledged
          }
        }
      });
      await pause(300 + Math.floor(Math.random() * 700));
      await platform.kill9();
      writing = false;
      await Promise.all(writers);
      platform = await startPlatformProcesses(data.dir, LOAD_ENV);
      let missing = 0;
      for (const token of acked) {
        const me = await call(`${platform.baseUrl}/v2/me`, { headers: { authorization: `Bearer ${token}` } });
        if (me.status !== 200) missing++;
      }
      acknowledged += acked.length;
      lost += missing;
      log(`  kill -9 round ${round}/${rounds}: ${acked.length} acknowledged writes, ${missing} lost`);
    }
    await platform.stop();
  } finally {
    agent.destroy();
    data.remove();
  }
  return { rounds, acknowledged, lost };
}

// ---------------------------------------------------------------------------------------------------

export interface NatsFigures {
  events: number;
  counted: number;
  lost: number;
  countedTwice: number;
  natsRestarts: number;
}

/**
 * Usage events flow from a gateway (JetStream publishes with a message id, retried until acknowledged,
 * as an outbox does) while nats-server is stopped and restarted with JetStream on disk; llm-quota in
 * its own process counts them. Every event carries one token: the month's tokens must equal the events.
 */
export async function natsRestartDuringUsage(events: number, log = console.log): Promise<NatsFigures> {
  const nats: NatsServerHandle = await startNatsServer();
  const data = tempDir('chaos-nats-');
  const codec = StringCodec();
  const platform = await startPlatformProcesses(data.dir, { ...LOAD_ENV, NATS_URL: nats.url });
  const nc = await connect({ servers: nats.url, maxReconnectAttempts: -1, reconnectTimeWait: 100 });
  let restarts = 0;
  try {
    const owner = await login(platform.baseUrl);
    const orgSlug = `chaos-${randomBytes(3).toString('hex')}`;
    const org = await call(`${platform.baseUrl}/v2/orgs`, {
      method: 'POST',
      headers: { authorization: `Bearer ${owner.token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ slug: orgSlug, name: 'Chaos' }),
    });
    if (org.status !== 201) throw new Error(`org: ${org.status} ${org.body}`);
    const js = nc.jetstream();
    // the stream exists once llm-quota started its consumer
    await waitFor(async () => (await nc.jetstreamManager()).streams.info('ANALYTICS').then(() => true), {
      timeoutMs: 20_000,
      what: 'the ANALYTICS stream',
    });

    let next = 0;
    const publishOne = async (i: number) => {
      const event = {
        id: `chaos-${i}`,
        version: 1,
        occurredAt: new Date().toISOString(),
        orgSlug,
        userId: owner.userId,
        model: 'chaos-model',
        provider: 'chaos',
        usage: { prompt_tokens: 1, completion_tokens: 0, total_tokens: 1 },
        cost: 0,
      };
      // the outbox: retry until the stream acknowledges (a retry after a lost ack is a duplicate)
      for (;;) {
        try {
          await js.publish(Subjects.llmCompletion, codec.encode(JSON.stringify(event)), {
            msgID: event.id,
            timeout: 2_000,
          });
          return;
        } catch {
          await pause(100);
        }
      }
    };
    const publishers = Array.from({ length: 8 }, async () => {
      while (next < events) await publishOne(next++);
    });
    const chaos = (async () => {
      for (const at of [0.25, 0.6]) {
        await waitFor(() => next >= events * at, { timeoutMs: 120_000, intervalMs: 20 });
        await nats.stop();
        await pause(1_000);
        await nats.start();
        restarts++;
        log(`  nats-server restarted after ${next} events published`);
      }
    })();
    await Promise.all([...publishers, chaos]);

    const usageOf = async () => {
      const res = await call(`${platform.gatewayUrl}/v1/quotas/usage`, {
        headers: { authorization: `Bearer ${owner.token}` },
      });
      if (res.status !== 200) return -1;
      return (JSON.parse(res.body).enforced as Array<{ key: string; used: number }>).find(
        (g) => g.key === 'llm.monthly_tokens',
      )!.used;
    };
    // settled: the consumer has nothing pending, then read once (the endpoint allows 60 a minute)
    // (JetStream may still be recovering from the last restart: each probe asks again)
    await waitFor(
      async () => {
        const jsm = await nc.jetstreamManager({ timeout: 2_000 });
        const info = await jsm.consumers.info('ANALYTICS', 'llm-quota');
        return info.num_pending + info.num_ack_pending === 0;
      },
      { timeoutMs: 60_000, intervalMs: 200, what: 'llm-quota to handle every event' },
    );
    const counted = await waitFor(async () => {
      const used = await usageOf();
      return used >= 0 ? { used } : null;
    });
    return {
      events,
      counted: counted.used,
      lost: Math.max(0, events - counted.used),
      countedTwice: Math.max(0, counted.used - events),
      natsRestarts: restarts,
    };
  } finally {
    await nc.close().catch(() => undefined);
    await platform.stop();
    await nats.dispose();
    data.remove();
  }
}

// ---------------------------------------------------------------------------------------------------

export interface RotationFigures {
  rotations: number;
  requests: number;
  achievedRate: number;
  non200: number;
  statuses: Record<string, number>;
}

/**
 * Session-JWT load at a fixed rate through the edge while auth's signing key is rotated by force,
 * fresh logins (signed by the newest key) joining the load as soon as they exist.
 */
export async function rotationsUnderLoad(
  rotations: number,
  rate: number,
  secondsBetween = 3,
  log = console.log,
): Promise<RotationFigures> {
  const data = tempDir('chaos-rotate-');
  const platform = await startPlatformProcesses(data.dir, {
    ...LOAD_ENV,
    JWKS_PUBLISH_DELAY_SECONDS: '1',
    JWKS_CHECK_INTERVAL_MS: '200',
  });
  const statuses: Record<string, number> = {};
  let requests = 0;
  try {
    const tokens = [(await login(platform.baseUrl)).token];
    let running = true;
    const freshLogins = (async () => {
      while (running) {
        tokens.push((await login(platform.baseUrl)).token);
        if (tokens.length > 50) tokens.shift();
        await pause(100);
      }
    })();
    const rotate = (async () => {
      for (let i = 1; i <= rotations; i++) {
        await pause(secondsBetween * 1_000);
        const res = await call(`${platform.authUrl}/internal/signing-keys/rotate`, {
          method: 'POST',
          headers: { 'x-platform-internal-secret': platform.internalSecret },
        });
        log(`  rotation ${i}/${rotations}: ${res.status} ${res.body}`);
      }
      await pause(secondsBetween * 1_000);
      running = false;
    })();
    const started = performance.now();
    const inflight = new Set<Promise<void>>();
    while (running) {
      const due = Math.floor(((performance.now() - started) * rate) / 1000);
      while (requests < due && inflight.size < 256) {
        requests++;
        const token = tokens[tokens.length - 1 - (requests % Math.min(tokens.length, 10))]!;
        const p = call(`${platform.baseUrl}/v2/me`, { headers: { authorization: `Bearer ${token}` } })
          .then((r) => {
            statuses[r.status] = (statuses[r.status] ?? 0) + 1;
          })
          .catch(() => {
            statuses.error = (statuses.error ?? 0) + 1;
          })
          .finally(() => inflight.delete(p));
        inflight.add(p);
      }
      await pause(1);
    }
    await Promise.all(inflight);
    await Promise.all([freshLogins, rotate]);
    const seconds = (performance.now() - started) / 1000;
    const non200 = Object.entries(statuses)
      .filter(([s]) => s !== '200')
      .reduce((n, [, c]) => n + c, 0);
    return { rotations, requests, achievedRate: Math.round(requests / seconds), non200, statuses };
  } finally {
    await platform.stop();
    data.remove();
  }
}

// ---------------------------------------------------------------------------------------------------

export interface FuzzFigures {
  requests: number;
  statuses: Record<string, number>;
  fiveXx: number;
  /** method, path and headers of a few 5xx answers, to reproduce them */
  fiveXxSamples: string[];
  /** the requests not answered within UNANSWERED_AFTER_MS (method, path and headers) */
  unanswered: string[];
  /**
   * The edge's resident memory after a full garbage collection (forced through its inspector, see
   * platform.ts memoryAfterGc): before the first request, after the warm-up (the first tenth of the
   * requests, at most 10,000), and at the end. Growth is end against warm-up: what the edge keeps
   * once its code is compiled and its pools and caches are filled, which a leak keeps increasing.
   */
  rssIdleMb: number;
  rssWarmMb: number;
  rssEndMb: number;
  rssGrowthPercent: number;
  /** the same from before the first request (first-use compilation and pools included) */
  rssGrowthFromIdlePercent: number;
  /** the V8 heap in use after those collections */
  heapWarmMb: number;
  heapEndMb: number;
  /** resident memory (no collection forced) at each tenth of the run: a leak climbs, settling flattens */
  rssTrendMb: number[];
}

const pick = <T>(items: readonly T[]): T => items[Math.floor(Math.random() * items.length)]!;

const PATHS = [
  '/',
  '/v2/me',
  '/v2/login/anonymous',
  '/v2/logout',
  '/v2/user/active-org',
  '/v2/user/accessTokens',
  '/v2/user/accessTokens/x',
  '/v2/orgs',
  '/v2/orgs/acme',
  '/v2/orgs/acme/members',
  '/v2/orgs/acme/roles/admin',
  '/v2/orgs/acme/apikeys',
  '/v2/workspaces',
  '/v2/workspaces/w1',
  '/v2/workspaces/w1/members/u1',
  '/v2/workspaces/w1/security/apikeys',
  '/oidc/jwks',
  '/openapi.json',
  '/llm/v1/quotas/usage',
  '/llm/v1/quotas/settings',
  '/llm/openapi.json',
  '/llm/v1/chat/completions',
  '/llm/v1/responses',
  '/llm/v1/responses/resp_x',
  '/llm/v1/responses/resp_x/input_items',
  '/llm/v1/defaults',
  '/llm/v1/embeddings',
  '/legacy/v1/intents',
  '/legacy/v1/intents/abc',
  '/legacy/v1/entities',
  '/legacy/v1/bots',
  '/legacy/v1/Messages',
  '/legacy/v2/auth/accessToken',
  '/legacy/v2/auth/signup',
  '/internal/principal',
  '/healthz',
  '/metrics',
];
const METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD', 'OPTIONS', 'TRACE', 'PROPFIND'];
const CONTENT_TYPES = [
  'application/json',
  'application/json; charset=utf-8',
  'application/json; charset=latin1',
  'text/plain',
  'application/x-www-form-urlencoded',
  'multipart/form-data; boundary=x',
  'application/vnd.api+json',
  '',
];
const ENCODINGS = ['gzip', 'deflate', 'br', 'identity', 'x-unknown', 'gzip, gzip'];

function mutatePath(p: string): string {
  switch (Math.floor(Math.random() * 10)) {
    case 0:
      return `${p}/${randomBytes(4).toString('hex')}`;
    case 1:
      return `${p}?${'a=1&'.repeat(Math.floor(Math.random() * 50))}`;
    case 2:
      return p.replace(/\//g, '//');
    case 3:
      return `${p}/%2e%2e/%2e%2e/internal/principal`;
    case 4:
      return `${p}/${'x'.repeat(Math.floor(Math.random() * 9000))}`;
    case 5:
      return `${p}/%${randomBytes(1).toString('hex')}%zz`;
    case 6:
      return p.toUpperCase();
    case 7:
      return `${p}/ü/%F0%9F%99%82`;
    default:
      return p;
  }
}

function fuzzBody(): Buffer | undefined {
  switch (Math.floor(Math.random() * 8)) {
    case 0:
      return undefined;
    case 1:
      return Buffer.from('{"name": "x", "expiresAt": "2099-01-01T00:00:00Z"}');
    case 2:
      return Buffer.from('{"unterminated": ');
    case 3:
      return randomBytes(Math.floor(Math.random() * 4096));
    case 4:
      return Buffer.from(JSON.stringify({ deep: JSON.parse(`${'['.repeat(500)}${']'.repeat(500)}`) }));
    case 5:
      // oversized (past every body limit) now and then; mostly just large
      return Buffer.alloc(Math.random() < 0.05 ? 11 * 1024 * 1024 : Math.floor(Math.random() * 300_000), 'a');
    case 6:
      return Buffer.from(
        Math.random() < 0.5
          ? 'null'
          : // members named like Object's own, beside what each root reads
            '{"__proto__":{"a":1},"constructor":{"b":2},"model":"mock/chat","input":"x","messages":[{"role":"user","content":"x"}],"text":"x","userId":"u"}',
      );
    default:
      return Buffer.from(JSON.stringify({ text: 'hello', userId: 'u', platform: 'web', rules: [{}] }));
  }
}

/** A fuzzed request's status: 0 when the connection failed, UNANSWERED_STATUS past the deadline. */
function fuzzCall(
  url: string,
  init: { method: string; headers: Record<string, string>; body?: string | Buffer },
  what: string,
): Promise<{ status: number; what: string }> {
  return call(url, init, UNANSWERED_AFTER_MS).then(
    (r) => ({ status: r.status, what }),
    (err: Error) => ({ status: err === UNANSWERED ? UNANSWERED_STATUS : 0, what }),
  );
}

const GATEWAY_ROUTES = ['/llm/v1/chat/completions', '/llm/v1/embeddings', '/llm/v1/rerank'];
const HOSTILE = [null, true, 0, -1, 1e308, '', 'x', [], {}, [{}], 'required', 'x'.repeat(5000)];
const HOSTILE_TOOLS = [
  [[1]],
  [{}],
  [{ type: 'function' }],
  [{ type: 'function', function: { name: 7 } }],
  [{ type: 'function', function: { name: 'f', parameters: 'x' } }],
  [{ type: 'custom', custom: { name: 'g' } }],
  [{ type: 'function', function: { name: 'weather', parameters: { type: 'object' } } }],
];
const HOSTILE_MESSAGES = [
  [{ role: 'user', content: 'use a tool' }],
  [{ role: 'user', content: [{ type: 'text', text: 'hi' }, { type: 'image_url' }] }],
  [
    { role: 'user', content: 'a' },
    { role: 'assistant', tool_calls: [{}] },
  ],
  [
    { role: 'user', content: 'a' },
    { role: 'assistant', tool_calls: [{ id: 'c', type: 'custom' }] },
  ],
  [{ role: 'tool', content: 5 }],
  [{ role: 'user', content: null }],
  [{}],
  'hi',
];
const GATEWAY_FIELDS = [
  'tool_choice',
  'n',
  'stop',
  'stream',
  'stream_options',
  'max_tokens',
  'response_format',
  'input',
  'dimensions',
  'query',
  'documents',
  'top_n',
];

/** An inference request with a hostile JSON body, from a session whose organization may call the mock models. */
function gatewayRequest(baseUrl: string, token: string): Promise<{ status: number; what: string }> {
  const path = pick(GATEWAY_ROUTES);
  const body: Record<string, unknown> = {
    model: pick(['mock/chat', 'mock/chat', 'mock/embeddings', 'default', 'nope/x', 7]),
  };
  if (Math.random() < 0.8) body.messages = pick(HOSTILE_MESSAGES);
  if (Math.random() < 0.5) body.tools = pick(HOSTILE_TOOLS);
  for (const field of GATEWAY_FIELDS) if (Math.random() < 0.2) body[field] = pick(HOSTILE);
  if (path.endsWith('rerank') && Math.random() < 0.6)
    Object.assign(body, { query: 'q', documents: pick([['a', 'b'], [{ text: 'a' }], [], [7]]) });
  if (path.endsWith('embeddings') && Math.random() < 0.6)
    body.input = pick(['x', ['a', 'b'], [[1, 2]], [], [-1]]);
  const text = JSON.stringify(body);
  const what = `POST ${path} ${text.slice(0, 300)}`;
  const headers = {
    authorization: `Bearer ${token}`,
    'content-type': 'application/json',
    'content-length': String(Buffer.byteLength(text)),
  };
  return fuzzCall(`${baseUrl}${path}`, { method: 'POST', headers, body: text }, what);
}

/** One fuzzed request through http (well-formed HTTP, hostile content). */
function fuzzedRequest(baseUrl: string, credentials: string[]): Promise<{ status: number; what: string }> {
  const method = pick(METHODS);
  const path = mutatePath(pick(PATHS));
  const headers: Record<string, string> = {};
  if (Math.random() < 0.6) headers.authorization = `Bearer ${pick(credentials)}`;
  if (Math.random() < 0.2) headers['x-platform-api-key'] = pick(['wak_x', 'iak_acme_x', randomUUID(), '']);
  if (Math.random() < 0.2) headers['x-platform-principal'] = randomBytes(40).toString('base64url');
  if (Math.random() < 0.2) headers['X_PLATFORM_USER_ID'] = 'admin';
  if (Math.random() < 0.2) headers['x-platform-api-version'] = pick(['2025-01-01', 'garbage', '1900-13-45']);
  if (Math.random() < 0.1) headers['x-request-id'] = pick(['ok-id', '../../etc', 'x'.repeat(500)]);
  const body =
    method === 'GET' || method === 'HEAD' ? (Math.random() < 0.1 ? fuzzBody() : undefined) : fuzzBody();
  if (body) {
    // framed always: Node's client sends a GET, DELETE, OPTIONS or TRACE body without Content-Length,
    // which the server then reads as the next request (a 400 and a closed connection, not the platform's doing)
    headers['content-length'] = String(body.length);
    const ct = pick(CONTENT_TYPES);
    if (ct) headers['content-type'] = ct;
    if (Math.random() < 0.15) headers['content-encoding'] = pick(ENCODINGS);
  }
  const what = `${method} ${path.slice(0, 120)} ${JSON.stringify(Object.keys(headers))}${headers['content-encoding'] ? ` ce=${headers['content-encoding']}` : ''}`;
  return fuzzCall(`${baseUrl}${path}`, { method, headers, body }, what);
}

/** Malformed HTTP on a raw socket: what an http client would refuse to send. */
function rawRequest(port: number): Promise<{ status: number; what: string }> {
  const payloads = [
    'GET /v2/me HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n',
    'POST /v2/login/anonymous HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nZZ\r\nxx\r\n0\r\n\r\n',
    'GET /%zz HTTP/1.1\r\nHost: x\r\n\r\n',
    'GET / HTTP/1.1\r\nHost: x\r\nX: \u0000\r\n\r\n',
    `GET /${'a'.repeat(20000)} HTTP/1.1\r\nHost: x\r\n\r\n`,
    'BREW /coffee HTCPCP/1.0\r\n\r\n',
    'GET /legacy/v1/bots HTTP/1.0\r\n\r\n',
  ];
  const payload = pick(payloads);
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    let text = '';
    socket.setTimeout(5_000, () => socket.destroy());
    socket.on('data', (d) => {
      text += d.toString('latin1');
    });
    socket.on('close', () => {
      const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(text)?.[1] ?? 0);
      resolve({ status, what: `raw ${JSON.stringify(payload.slice(0, 60))}` });
    });
    socket.on('error', () => undefined);
    socket.end(payload);
  });
}

const mb = (bytes: number) => Math.round(bytes / 1e5) / 10;
const percent = (from: number, to: number) => Math.round(((to - from) / from) * 1000) / 10;

/** Fuzzed requests across every root; 5xx counted with samples, and the edge's memory before and after. */
export async function fuzz(total: number, log = console.log): Promise<FuzzFigures> {
  const data = tempDir('chaos-fuzz-');
  // the enterprise plan's rate limits let most of the inference requests through to the mock models
  const platform = await startPlatformProcesses(data.dir, {
    ...LOAD_ENV,
    ...INSPECTABLE_ENV,
    LLM_QUOTA_DEFAULT_PLAN: 'enterprise',
  });
  const statuses: Record<string, number> = {};
  const fiveXxSamples: string[] = [];
  const unanswered: string[] = [];
  try {
    const session = await login(platform.baseUrl);
    const credentials = [session.token, `${session.token}x`, 'at:nope', 'not-a-jwt', 'a.b.c', ''];
    // A session of its own, which the fuzzed requests cannot log out, with an organization (its active one):
    // it reaches the inference routes' validation and the mock models.
    const inference = await login(platform.baseUrl);
    const org = await call(`${platform.baseUrl}/v2/orgs`, {
      method: 'POST',
      headers: { authorization: `Bearer ${inference.token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'Fuzz', slug: 'fuzz' }),
    });
    if (org.status !== 201)
      throw new Error(`creating the fuzz organization answered ${org.status}: ${org.body}`);
    const port = Number(new URL(platform.baseUrl).port);
    const edgePid = platform.pids.edge!;
    const idle = await memoryAfterGc(platform, edgePid);
    const warm = Math.min(10_000, Math.floor(total / 10));
    const tenth = Math.max(1, Math.floor(total / 10));
    const trend: number[] = [];
    let sent = 0;
    const run = async (count: number) => {
      const end = sent + count;
      await Promise.all(
        Array.from({ length: 32 }, async () => {
          while (sent < end) {
            sent++;
            const dice = Math.random();
            const r =
              dice < 0.03
                ? await rawRequest(port)
                : dice < 0.18
                  ? await gatewayRequest(platform.baseUrl, inference.token)
                  : await fuzzedRequest(platform.baseUrl, credentials);
            statuses[r.status] = (statuses[r.status] ?? 0) + 1;
            if (r.status >= 500 && fiveXxSamples.length < 20) fiveXxSamples.push(`${r.status} ${r.what}`);
            if (r.status === UNANSWERED_STATUS) unanswered.push(r.what);
            if (sent % tenth === 0 && trend.length < Math.floor(sent / tenth)) {
              trend.push(mb(rssOf(edgePid)));
              const bad = Object.entries(statuses).filter(([k]) => Number(k) >= 500);
              log(
                `  fuzz: ${sent}/${total}, 5xx so far ${JSON.stringify(Object.fromEntries(bad))}, edge RSS ${trend.at(-1)} MB`,
              );
            }
          }
        }),
      );
    };
    await run(warm);
    const warmed = await memoryAfterGc(platform, edgePid);
    await run(total - warm);
    // the same idle moment as at the start: in-flight buffers released
    await pause(500);
    const end = await memoryAfterGc(platform, edgePid);
    const fiveXx = Object.entries(statuses)
      .filter(([s]) => Number(s) >= 500)
      .reduce((n, [, c]) => n + c, 0);
    return {
      requests: sent,
      statuses,
      fiveXx,
      fiveXxSamples,
      unanswered,
      rssIdleMb: mb(idle.rss),
      rssWarmMb: mb(warmed.rss),
      rssEndMb: mb(end.rss),
      rssGrowthPercent: percent(warmed.rss, end.rss),
      rssGrowthFromIdlePercent: percent(idle.rss, end.rss),
      heapWarmMb: mb(warmed.heapUsed),
      heapEndMb: mb(end.heapUsed),
      rssTrendMb: trend,
    };
  } finally {
    await platform.stop();
    data.remove();
  }
}

// ---------------------------------------------------------------------------------------------------

export interface SlowClientFigures {
  slowClients: number;
  /** slow sockets the edge still held after `heldAfterSeconds` */
  stillOpen: number;
  heldAfterSeconds: number;
  /** whether a normal request was answered while the slow clients held their sockets */
  servedMeanwhile: boolean;
}

/** Clients that trickle their headers, one byte a second: how many sockets they keep, and for how long. */
export async function slowClients(count: number, seconds: number): Promise<SlowClientFigures> {
  const data = tempDir('chaos-slow-');
  const platform = await startPlatformProcesses(data.dir, LOAD_ENV);
  const sockets: net.Socket[] = [];
  let open = 0;
  try {
    const port = Number(new URL(platform.baseUrl).port);
    for (let i = 0; i < count; i++) {
      const socket = net.connect(port, '127.0.0.1');
      socket.on('connect', () => {
        open++;
        socket.write('GET /v2/me HTTP/1.1\r\nHost: x\r\n');
      });
      socket.on('close', () => {
        open--;
      });
      socket.on('error', () => undefined);
      sockets.push(socket);
    }
    const trickle = setInterval(() => {
      for (const s of sockets) if (!s.destroyed) s.write('X');
    }, 1_000);
    await pause(500);
    const served = (await call(`${platform.baseUrl}/oidc/jwks`).catch(() => ({ status: 0 }))).status === 200;
    await pause(seconds * 1_000);
    clearInterval(trickle);
    return { slowClients: count, stillOpen: open, heldAfterSeconds: seconds, servedMeanwhile: served };
  } finally {
    for (const s of sockets) s.destroy();
    await platform.stop();
    data.remove();
  }
}
