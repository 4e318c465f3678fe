import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { ConfigError, compileTrustProxy, loadConfig } from '@platform/kernel';
import { DCLinter } from 'dclint';
import { parse } from 'yaml';
import { loadCompose } from '../containers/compose';
import { interpolate, interpolateDocument } from '../deploy/compose-interpolation';
import {
  DEPLOYED_SERVICES,
  REPO_ROOT,
  schemaKeys,
  TEST_INTERNAL_SECRET,
  VARIABLES_OUTSIDE_SCHEMAS,
} from '../deploy/services';

interface ComposeService {
  image?: string;
  build?: { context: string; dockerfile: string; args?: Record<string, string> };
  environment?: Record<string, string | number | boolean | null>;
  depends_on?: Record<string, { condition: string }>;
  healthcheck?: { test: string[]; interval?: string };
  ports?: string[];
  expose?: string[];
  networks?: string[];
}
interface ComposeFile {
  services: Record<string, ComposeService>;
  networks?: Record<string, { internal?: boolean }>;
  volumes?: Record<string, unknown>;
}

const COMPOSE_PATH = path.join(REPO_ROOT, 'docker-compose.yml');
const source = readFileSync(COMPOSE_PATH, 'utf8');
/** The .env variable holding a service's NATS password (`llm-quota` → LLM_QUOTA_NATS_PASSWORD). */
const natsPasswordOf = (service: string) => `${service.toUpperCase().replace(/-/g, '_')}_NATS_PASSWORD`;
/** What an operator provides (.env): the required secrets; everything else has a default. */
const operatorEnv: Record<string, string> = {
  PLATFORM_INTERNAL_SECRET: TEST_INTERNAL_SECRET,
  MONGO_PASSWORD: 'test-only-password',
  SIGNING_KEYS_ENCRYPTION_KEY: 'test-only-signing-keys-secret-0123456789abcdef',
  ...Object.fromEntries(DEPLOYED_SERVICES.map(({ name }) => [natsPasswordOf(name), `12e5-${name}-password`])),
};
const raw = parse(source, { merge: true }) as ComposeFile;
const compose = interpolateDocument(raw, operatorEnv);
const services = compose.services;

const envOf = (name: string): Record<string, string> =>
  Object.fromEntries(Object.entries(services[name]?.environment ?? {}).map(([k, v]) => [k, String(v ?? '')]));
const portOf = (name: string) => Number(envOf(name).PORT);

describe('docker-compose.yml', () => {
  it('is valid under the Compose Specification and clean for dclint', () => {
    const linter = new DCLinter({
      rules: {
        // image + build is how compose tags what it builds (`docker compose build && docker compose push`)
        'no-build-and-image': 0,
        // the edge's host interface is interpolated (default 127.0.0.1), which dclint cannot read; checked below
        'no-unbound-port-interfaces': 0,
        'require-quotes-in-ports': [2, { quoteType: 'double' }],
      },
      quiet: true,
      debug: false,
      exclude: [],
    });
    const [result] = linter.lintFiles([COMPOSE_PATH], false);
    const messages = result!.messages.map((m) => `${m.line}: ${m.rule}: ${m.message}`);
    expect(messages).toEqual([]);
  });

  it("refuses to start without the internal secret, the MongoDB password, the signing keys secret and each service's NATS password", () => {
    expect(() => interpolateDocument(raw, {})).toThrow(/MONGO_PASSWORD[\s\S]*PLATFORM_INTERNAL_SECRET/);
    for (const key of Object.keys(operatorEnv)) {
      expect(() => interpolateDocument(raw, { ...operatorEnv, [key]: '' })).toThrow(new RegExp(key));
    }
  });

  it('passes every encryption key a service reads from .env, so nothing is stored in plain text or under a derived key', () => {
    const keys = {
      SIGNING_KEYS_ENCRYPTION_KEY: 'auth',
      LEGACY_TOKEN_ENCRYPTION_KEY: 'legacy-agent',
      LLM_GATEWAY_ENCRYPTION_KEY: 'llm-gateway',
    };
    for (const { name, schema } of DEPLOYED_SERVICES) {
      for (const key of [...schemaKeys(schema)].filter((k) => k.endsWith('_ENCRYPTION_KEY'))) {
        expect({ key, service: keys[key as keyof typeof keys] }).toEqual({ key, service: name });
        expect({ key, fromEnv: String(raw.services[name]!.environment?.[key]) }).toEqual({
          key,
          fromEnv: expect.stringMatching(new RegExp(`^\\$\\{${key}:`)),
        });
      }
    }
    const legacyKey = Buffer.alloc(32, 7).toString('base64');
    const withKeys = interpolateDocument(raw, { ...operatorEnv, LEGACY_TOKEN_ENCRYPTION_KEY: legacyKey });
    expect(withKeys.services['legacy-agent']!.environment!.LEGACY_TOKEN_ENCRYPTION_KEY).toBe(legacyKey);
    expect(envOf('auth').SIGNING_KEYS_ENCRYPTION_KEY).toBe(operatorEnv.SIGNING_KEYS_ENCRYPTION_KEY);
  });

  it("believes the forwarding headers of the proxy on this host (the network's gateway), unless told not to", () => {
    // a client of the published port reaches the container from its network's gateway: 10.89.0.1 under
    // podman (measured), 172.18.0.1 under Docker
    const trust = compileTrustProxy(envOf('edge').TRUST_PROXY!);
    for (const gateway of ['10.89.0.1', '172.18.0.1', '127.0.0.1']) expect(trust(gateway, 0)).toBe(true);
    expect(trust('203.0.113.9', 0)).toBe(false);
    const direct = interpolateDocument(raw, { ...operatorEnv, EDGE_TRUST_PROXY: 'false' });
    expect(compileTrustProxy(String(direct.services.edge!.environment!.TRUST_PROXY))('10.89.0.1', 0)).toBe(
      false,
    );
  });

  it("lets a slow completion finish: the edge waits longer than llm-gateway's model, one failover and a retry wait", () => {
    const edge = loadConfig(DEPLOYED_SERVICES.find((s) => s.name === 'edge')!.schema, envOf('edge'));
    const gateway = loadConfig(
      DEPLOYED_SERVICES.find((s) => s.name === 'llm-gateway')!.schema,
      envOf('llm-gateway'),
    );
    expect(edge.GATEWAY_UPSTREAM_TIMEOUT_MS as number).toBeGreaterThan(
      2 * (gateway.LLM_GATEWAY_DEFAULT_TIMEOUT_MS as number) +
        (gateway.LLM_GATEWAY_RETRY_MAX_WAIT_MS as number),
    );
  });

  it('gives each service the time to drain on SIGTERM (compose kills after 10 s unless told otherwise)', () => {
    const seconds = (period: string | undefined) => {
      const m = /^(\d+)s$/.exec(period ?? '10s');
      if (!m) throw new Error(`stop_grace_period ${period}: write it in seconds`);
      return Number(m[1]);
    };
    for (const service of DEPLOYED_SERVICES) {
      const config = loadConfig(service.schema, envOf(service.name)) as { SHUTDOWN_DRAIN_SECONDS: number };
      const grace = seconds((services[service.name] as { stop_grace_period?: string }).stop_grace_period);
      expect({ name: service.name, fits: grace >= config.SHUTDOWN_DRAIN_SECONDS + 10 }).toEqual({
        name: service.name,
        fits: true,
      });
    }
    expect([envOf('edge').SHUTDOWN_DRAIN_SECONDS, envOf('llm-gateway').SHUTDOWN_DRAIN_SECONDS]).toEqual([
      '120',
      '120',
    ]);
  });

  it('runs MongoDB 7, NATS with JetStream on a volume, and every service', () => {
    expect(services.mongo?.image).toBe('mongo:7');
    expect(services.nats?.image).toMatch(/^nats:2\.10(-alpine)?$/);
    const nats = raw.services.nats as ComposeService & { command: string[]; volumes: string[] };
    expect(nats.command.join(' ')).toContain('-js -sd /data');
    expect(nats.volumes).toContain('nats-data:/data');
    for (const { name } of DEPLOYED_SERVICES) {
      expect(services[name]).toBeDefined();
      // one Dockerfile for every service: SERVICE names it, PORT is its listening port
      expect(services[name]!.build).toEqual({
        context: '.',
        dockerfile: 'Dockerfile',
        args: { SERVICE: name, PORT: String(portOf(name)) },
      });
      expect(existsSync(path.join(REPO_ROOT, 'services', name, 'src', 'main.ts'))).toBe(true);
    }
    expect(existsSync(path.join(REPO_ROOT, 'Dockerfile'))).toBe(true);
  });

  it('gives every container a health check, and starts each after what it needs is healthy', () => {
    for (const [name, service] of Object.entries(services)) {
      expect({ name, test: service.healthcheck?.test?.[0] }).toEqual({ name, test: 'CMD' });
      for (const [dependency, { condition }] of Object.entries(service.depends_on ?? {})) {
        expect({ name, dependency, exists: dependency in services }).toEqual({
          name,
          dependency,
          exists: true,
        });
        expect({ name, dependency, condition }).toEqual({ name, dependency, condition: 'service_healthy' });
      }
    }
    for (const { name } of DEPLOYED_SERVICES) {
      expect(Object.keys(services[name]!.depends_on ?? {})).toEqual(
        expect.arrayContaining(['mongo', 'nats']),
      );
    }
    const upstreams = DEPLOYED_SERVICES.filter((s) => s.name !== 'edge').map((s) => s.name);
    expect(Object.keys(services.edge!.depends_on ?? {})).toEqual(expect.arrayContaining(upstreams));
  });

  it('health-checks each service on its admin port, /readyz', () => {
    for (const { name } of DEPLOYED_SERVICES) {
      const check = services[name]!.healthcheck!.test.join(' ');
      expect(check).toContain('http://127.0.0.1:9464/readyz');
    }
  });

  it('publishes only the edge, on loopback unless told otherwise', () => {
    const publishing = Object.entries(services).filter(([, s]) => (s.ports ?? []).length > 0);
    expect(publishing.map(([name]) => name)).toEqual(['edge']);
    expect(services.edge!.ports).toEqual([`127.0.0.1:8080:${portOf('edge')}`]);
    expect(
      interpolate(raw.services.edge!.ports![0]!, { EDGE_BIND_ADDRESS: '0.0.0.0', EDGE_PORT: '80' }),
    ).toBe(`0.0.0.0:80:${portOf('edge')}`);
    // only the edge is on a network with a route off the host
    expect(compose.networks?.backend?.internal).toBe(true);
    for (const [name, service] of Object.entries(services)) {
      if (name !== 'edge')
        expect({ name, networks: service.networks }).toEqual({ name, networks: ['backend'] });
    }
  });

  it("points the edge's upstream URLs at existing services and the ports they listen on", () => {
    const edge = envOf('edge');
    const upstreams = {
      AUTH_URL: 'auth',
      LLM_QUOTA_URL: 'llm-quota',
      LLM_GATEWAY_URL: 'llm-gateway',
      LEGACY_AGENT_URL: 'legacy-agent',
    };
    for (const [key, target] of Object.entries(upstreams)) {
      const url = new URL(edge[key]!);
      expect({ key, host: url.hostname }).toEqual({ key, host: target });
      expect({ key, port: Number(url.port) }).toEqual({ key, port: portOf(target) });
      expect(services[target]!.expose).toContain(String(portOf(target)));
    }
  });

  it("listens on each service's own default port", () => {
    for (const { name, defaultPort } of DEPLOYED_SERVICES) {
      expect({ name, port: portOf(name) }).toEqual({ name, port: defaultPort });
    }
  });

  it("passes each service's environment through that service's own configuration schema", () => {
    for (const { name, schema } of DEPLOYED_SERVICES) {
      const env = envOf(name);
      let problems: string[] = [];
      try {
        loadConfig(schema, env);
      } catch (err) {
        if (!(err instanceof ConfigError)) throw err;
        problems = err.issues.map((i) => `${i.key}: ${i.message}`);
      }
      expect({ name, problems }).toEqual({ name, problems: [] });
    }
  });

  it('sets no variable that the service does not read (a typo would go unnoticed)', () => {
    for (const { name, schema } of DEPLOYED_SERVICES) {
      const known = schemaKeys(schema);
      const unknown = Object.keys(envOf(name)).filter(
        (k) => !known.has(k) && !VARIABLES_OUTSIDE_SCHEMAS.has(k),
      );
      expect({ name, unknown }).toEqual({ name, unknown: [] });
    }
  });

  it('gives every instance the same secret and JWT issuer and audience, and each service its own database', () => {
    const envs = DEPLOYED_SERVICES.map((s) => envOf(s.name));
    expect(new Set(envs.map((e) => e.PLATFORM_INTERNAL_SECRET))).toEqual(new Set([TEST_INTERNAL_SECRET]));
    expect(envOf('auth').JWT_ISSUER).toBe(envOf('edge').JWT_ISSUER);
    expect(envOf('auth').JWT_AUDIENCE).toBe(envOf('edge').JWT_AUDIENCE);
    for (const { name, database } of DEPLOYED_SERVICES) {
      const url = new URL(envOf(name).MONGO_URL!);
      expect({ name, host: url.host, database: url.pathname.slice(1) }).toEqual({
        name,
        host: 'mongo:27017',
        database,
      });
      expect(url.password).toBe(operatorEnv.MONGO_PASSWORD);
    }
    expect(envOf('edge').RATE_LIMIT_MONGO_DB).toBe('platform_edge');
  });

  it('connects each service to NATS as its own user, which the nats service knows from the same .env password', () => {
    const nats = services.nats as ComposeService & { command: string[]; volumes: string[] };
    // the permissions file the tests run the platform against (test/e2e/nats-permissions.test.ts)
    expect(nats.volumes).toContain('./deploy/nats/authorization.conf:/etc/nats/authorization.conf:ro');
    expect(nats.command.join(' ')).toContain('-c /etc/nats/authorization.conf');
    const conf = readFileSync(path.join(REPO_ROOT, 'deploy/nats/authorization.conf'), 'utf8');
    expect([...conf.matchAll(/^\s*user: "([^"]+)"/gm)].map((m) => m[1]).sort()).toEqual(
      DEPLOYED_SERVICES.map((s) => s.name).sort(),
    );
    for (const { name } of DEPLOYED_SERVICES) {
      const url = new URL(envOf(name).NATS_URL!);
      const password = operatorEnv[natsPasswordOf(name)]!;
      expect({ name, host: url.host, user: url.username, password: url.password }).toEqual({
        name,
        host: 'nats:4222',
        user: name,
        password,
      });
      expect(conf).toContain(`user: "${name}"\n      password: $${natsPasswordOf(name)}\n`);
      // quoted: nats-server parses the variable's value, and 12e5... unquoted is not a string
      expect(nats.environment?.[natsPasswordOf(name)]).toBe(`"${password}"`);
    }
  });

  it('points llm-gateway at llm-quota, and takes its provider-key encryption secret from .env', () => {
    const gateway = envOf('llm-gateway');
    expect(new URL(gateway.LLM_QUOTA_URL!).host).toBe(`llm-quota:${portOf('llm-quota')}`);
    expect(Object.keys(services['llm-gateway']!.depends_on ?? {})).toContain('llm-quota');
    // unset: the service derives one from PLATFORM_INTERNAL_SECRET (empty means unset to loadConfig)
    expect(gateway.LLM_GATEWAY_ENCRYPTION_KEY).toBe('');
    const key = 'k'.repeat(48);
    const withKey = interpolateDocument(raw, { ...operatorEnv, LLM_GATEWAY_ENCRYPTION_KEY: key });
    expect(withKey.services['llm-gateway']!.environment!.LLM_GATEWAY_ENCRYPTION_KEY).toBe(key);
    // without LLM_GATEWAY_CONFIG the gateway serves the built-in mock models
    expect(gateway.LLM_GATEWAY_CONFIG).toBeUndefined();
  });

  it('documents every variable it reads in deploy/compose/env.example', () => {
    const example = readFileSync(path.join(REPO_ROOT, 'deploy/compose/env.example'), 'utf8');
    const documented = new Set([...example.matchAll(/^([A-Z_]+)=/gm)].map((m) => m[1]));
    const used = new Set([...source.matchAll(/\$\{([A-Z_]+)/g)].map((m) => m[1]));
    expect([...used].filter((v) => !documented.has(v))).toEqual([]);
    // the example never carries a usable secret
    expect(example).toMatch(/^PLATFORM_INTERNAL_SECRET=$/m);
    expect(example).toMatch(/^MONGO_PASSWORD=$/m);
    expect(example).toMatch(/^SIGNING_KEYS_ENCRYPTION_KEY=$/m);
    for (const { name } of DEPLOYED_SERVICES) {
      expect(example).toMatch(new RegExp(`^${natsPasswordOf(name)}=$`, 'm'));
    }
  });
});

describe('deploy/compose/embedded-store.yml (compose without MongoDB)', () => {
  const project = loadCompose(
    REPO_ROOT,
    ['docker-compose.yml', 'deploy/compose/embedded-store.yml'],
    operatorEnv,
  );
  const envWith = (name: string): Record<string, string> =>
    Object.fromEntries(
      Object.entries(project.services[name]?.environment ?? {}).map(([k, v]) => [k, String(v ?? '')]),
    );

  it('leaves MongoDB out: mongo is not started and nothing waits for it', () => {
    expect(Object.keys(project.services).sort()).toEqual([
      'auth',
      'edge',
      'legacy-agent',
      'llm-gateway',
      'llm-quota',
      'nats',
    ]);
    for (const { name } of DEPLOYED_SERVICES) {
      expect({ name, mongoUrl: envWith(name).MONGO_URL }).toEqual({ name, mongoUrl: '' });
      expect(Object.keys(project.services[name]!.depends_on ?? {})).not.toContain('mongo');
    }
  });

  it("keeps each stateful service's embedded store on a volume of its own, and passes every schema", () => {
    for (const { name, schema } of DEPLOYED_SERVICES) {
      const env = envWith(name);
      expect(() => loadConfig(schema, env)).not.toThrow();
      if (name === 'edge') continue;
      expect({ name, dataDir: env.DATA_DIR }).toEqual({ name, dataDir: '/data' });
      expect(project.services[name]!.volumes).toEqual([`${name}-data:/data`]);
      expect(project.volumes).toHaveProperty(`${name}-data`);
    }
  });
});
