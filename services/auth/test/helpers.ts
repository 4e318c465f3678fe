import { createPublicKey } from 'node:crypto';
import { type Bus, createInProcessBus, createNatsBus } from '@platform/bus';
import type { EventPayloads } from '@platform/contracts';
import {
  AppError,
  type Clock,
  type Logger,
  listen,
  loadConfig,
  ManualClock,
  sealPrincipal,
  silentLogger,
  USER_ID_HEADER,
} from '@platform/kernel';
import { createEmbeddedStore, type Store } from '@platform/store';
import { startNatsServer, tempDir, waitFor } from '@platform/testkit';
import jwt from 'jsonwebtoken';
import request from 'supertest';
import { type AuthConfig, authConfigSchema } from '../src';
import type { CredentialToResolve } from '../src/domain/credential-introspection';
import { type AuthServiceUnderTest, createAuthServiceForTests } from '../src/testing';

export const INTERNAL_SECRET = 'test-internal-secret-0123456789abcdefghij';

export interface Reply {
  status: number;
  // biome-ignore lint/suspicious/noExplicitAny: response bodies are asserted field by field
  body: any;
  headers: Record<string, string>;
}

/** Something that can call auth: what the edge would derive from its credential. */
export interface Actor {
  readonly credential: CredentialToResolve;
}

export interface AuthHarness {
  service: AuthServiceUnderTest;
  config: Readonly<AuthConfig>;
  clock: ManualClock;
  store: Store;
  bus: Bus;
  http: ReturnType<typeof request>;
  /** calls a route as the edge would after resolving `actor` (path org taken from /v2/orgs/:orgSlug) */
  call(
    actor: Actor | null,
    method: 'get' | 'post' | 'put' | 'patch' | 'delete',
    path: string,
    body?: unknown,
  ): Promise<Reply>;
  /** a fresh anonymous user with a session */
  newUser(): Promise<UserActor>;
  accessToken(token: string): Actor;
  apiKey(key: string): Actor;
  stop(): Promise<void>;
}

export interface UserActor extends Actor {
  userId: string;
  sessionId: string;
  token: string;
}

export interface HarnessOptions {
  env?: Record<string, string>;
  clock?: ManualClock;
  store?: Store;
  bus?: Bus;
  /** where auth logs (default: nowhere) */
  logger?: Logger;
  /** how often the harness's own store applies its TTL indexes (default the store's, 60 s); it does so by `clock` */
  ttlSweepIntervalMs?: number;
}

/** DATA_DIR of the instances started on a store the test gives: one folder, so that they share one secret. */
let shared: ReturnType<typeof tempDir> | undefined;
const sharedDataDir = () => {
  shared ??= tempDir('auth-shared-');
  return shared.dir;
};
// jest loads this module anew for each test file: the folder goes once the file's tests are done (nothing else
// removes it, and each file left one in the temp folder)
afterAll(() => {
  shared?.remove();
  shared = undefined;
});

/**
 * auth on supertest with a real embedded store in a temp folder. `call` plays the edge: it resolves the
 * credential with auth's own resolver (as POST /internal/principal does), seals the principal with the
 * shared secret and sets the identity headers; an unresolvable credential is the edge's 401.
 */
export async function startAuth(options: HarnessOptions = {}): Promise<AuthHarness> {
  const clock = options.clock ?? new ManualClock('2025-03-01T00:00:00Z');
  const dir = options.store ? null : tempDir('auth-test-');
  // The store removes expired records by the same clock auth dates them with (in production both are the wall clock).
  const store =
    options.store ??
    createEmbeddedStore({
      dataDir: dir!.dir,
      compactionIntervalMs: 0,
      ttlSweepIntervalMs: options.ttlSweepIntervalMs,
      now: () => clock.now().getTime(),
    });
  const bus = options.bus ?? createInProcessBus();
  const config = loadConfig(authConfigSchema, {
    PLATFORM_INTERNAL_SECRET: INTERNAL_SECRET,
    // where the embedded default keeps its signing-key secret: instances sharing a store share it
    DATA_DIR: dir?.dir ?? sharedDataDir(),
    LOG_LEVEL: 'silent',
    JWKS_CHECK_INTERVAL_MS: '50',
    ...options.env,
  });
  const service = await createAuthServiceForTests({
    config,
    clock,
    logger: options.logger ?? silentLogger(),
    store,
    bus,
  });
  await service.start();
  const server = await listen(service.handler, 0, '127.0.0.1');
  const http = request(server.url);

  const call: AuthHarness['call'] = async (actor, method, path, body) => {
    let req = http[method](path);
    if (actor) {
      const orgSlug = /^\/v2\/orgs\/([^/?]+)/.exec(path)?.[1] ?? null;
      try {
        const { principal } = await service.context.introspection.resolve(actor.credential, orgSlug, 'test');
        req = req.set('x-platform-principal', sealPrincipal(principal, INTERNAL_SECRET, clock));
        if (principal.user.id) req = req.set(USER_ID_HEADER, principal.user.id);
      } catch (err) {
        if (err instanceof AppError && err.kind === 'unauthenticated') {
          return { status: 401, body: { error: 'Unauthorized', message: err.message }, headers: {} };
        }
        throw err;
      }
    }
    if (body !== undefined) req = req.send(body as object);
    const res = await req;
    return { status: res.status, body: res.body, headers: res.headers as Record<string, string> };
  };

  return {
    service,
    config,
    clock,
    store,
    bus,
    http,
    call,
    async newUser() {
      const res = await http.post('/v2/login/anonymous').set('x-forwarded-for', randomAddress());
      if (res.status !== 200) throw new Error(`login failed: ${res.status} ${JSON.stringify(res.body)}`);
      const { userId, sessionId, token } = res.body;
      return { userId, sessionId, token, credential: { kind: 'session', userId, sessionId } };
    },
    accessToken: (token) => ({ credential: { kind: 'access_token', token } }),
    apiKey: (key) => ({ credential: { kind: 'api_key', key } }),
    async stop() {
      await server.close(1000);
      await service.stop();
      if (!options.bus) await bus.close();
      if (!options.store) {
        await store.close();
        dir!.remove();
      }
    },
  };
}

let addressCounter = 0;
/** A distinct public client address per login, so the per-address rate limit stays out of the way. */
export const randomAddress = (): string => {
  addressCounter++;
  return `203.0.${Math.floor(addressCounter / 250) % 250}.${(addressCounter % 250) + 1}`;
};

/** Verifies a session JWT with jsonwebtoken against a JWKS document, at the given clock's time. */
export function verifyWithJwks(
  token: string,
  jwks: { keys: Array<Record<string, string>> },
  config: Pick<AuthConfig, 'JWT_ISSUER' | 'JWT_AUDIENCE'>,
  clock: Clock,
): jwt.JwtPayload {
  const decoded = jwt.decode(token, { complete: true });
  if (!decoded) throw new Error('not a JWT');
  const jwk = jwks.keys.find((k) => k.kid === decoded.header.kid);
  if (!jwk) throw new Error(`kid ${decoded.header.kid} is not in the JWKS`);
  const key = createPublicKey({ key: jwk as never, format: 'jwk' });
  return jwt.verify(token, key, {
    algorithms: [jwk.alg as jwt.Algorithm],
    issuer: config.JWT_ISSUER,
    audience: config.JWT_AUDIENCE,
    clockTimestamp: Math.floor(clock.now().getTime() / 1000),
  }) as jwt.JwtPayload;
}

export const kidOf = (token: string): string =>
  (jwt.decode(token, { complete: true })?.header.kid as string) ?? '';

/** Collects every event published on some subjects, for assertions. */
export function recordEvents<S extends keyof EventPayloads>(bus: Bus, subjects: S[]) {
  const seen: Array<{ subject: S; payload: EventPayloads[S] }> = [];
  const stops = subjects.map((subject) =>
    bus.subscribe(subject, (payload) => {
      seen.push({ subject, payload: payload as EventPayloads[S] });
    }),
  );
  return {
    seen,
    stop: () => {
      for (const stop of stops) stop();
    },
  };
}

/** The kids auth's JWKS publishes, in its order. */
export const publishedKids = async (h: AuthHarness): Promise<string[]> =>
  (await h.http.get('/oidc/jwks')).body.keys.map((k: { kid: string }) => k.kid);

/** Lets the instances run a few more key checks, so "exactly one" is not just "not yet two". */
export async function severalMoreKeyChecks(...instances: AuthHarness[]) {
  const marks = instances.map((h) => h.service.context.keys.ticks);
  await waitFor(() => instances.every((h, i) => h.service.context.keys.ticks >= marks[i]! + 4), {
    what: 'more rotation checks',
  });
}

/**
 * Two auth instances, `a` and `b`, over one store on disk and one NATS server, started at once (so both may try
 * to create the first key), and the events on `subjects` as a third connection to NATS sees them.
 */
export async function startAuthPair<S extends keyof EventPayloads>(options: {
  clock: ManualClock;
  env: Record<string, string>;
  subjects: S[];
}) {
  const nats = await startNatsServer();
  const data = tempDir('auth-pair-');
  const store = createEmbeddedStore({ dataDir: data.dir, compactionIntervalMs: 0 });
  const buses: Bus[] = [];
  for (const name of ['auth-a', 'auth-b', 'observer'])
    buses.push(await createNatsBus({ url: nats.url, name }));
  const events = recordEvents(buses[2]!, options.subjects);
  await buses[2]!.ping();
  const { clock, env } = options;
  const [a, b] = await Promise.all([
    startAuth({ store, bus: buses[0], clock, env }),
    startAuth({ store, bus: buses[1], clock, env }),
  ]);
  return {
    a,
    b,
    events,
    async stop() {
      await a.stop();
      await b.stop();
      for (const bus of buses) await bus.close();
      await store.close();
      await nats.dispose();
      data.remove();
    },
  };
}
