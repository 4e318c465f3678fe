import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { ConfigError, compileTrustProxy, loadConfig } from '@platform/kernel';
import { parseAllDocuments } from 'yaml';
import { type K8sObject, kustomize, readObjects } from '../deploy/kustomize';
import { connectionAllowed, type Endpoint, selects } from '../deploy/network-policy';
import {
  DEPLOYED_SERVICES,
  REPO_ROOT,
  schemaKeys,
  TEST_INTERNAL_SECRET,
  VARIABLES_OUTSIDE_SCHEMAS,
} from '../deploy/services';

const DEPLOY = path.join(REPO_ROOT, 'deploy');
const BASE = path.join(DEPLOY, 'base');
const OVERLAY = path.join(DEPLOY, 'overlays', 'example');

interface Probe {
  httpGet?: { path: string; port: string | number };
}
interface Container {
  name: string;
  image: string;
  ports?: Array<{ name?: string; containerPort: number }>;
  env?: Array<{
    name: string;
    value?: string;
    valueFrom?: {
      secretKeyRef?: { name: string; key: string; optional?: boolean };
      configMapKeyRef?: { name: string; key: string };
    };
  }>;
  envFrom?: Array<{ configMapRef?: { name: string }; secretRef?: { name: string } }>;
  readinessProbe?: Probe;
  livenessProbe?: Probe;
  startupProbe?: Probe;
  resources?: { requests?: Record<string, string>; limits?: Record<string, string> };
  securityContext?: {
    runAsNonRoot?: boolean;
    readOnlyRootFilesystem?: boolean;
    allowPrivilegeEscalation?: boolean;
    capabilities?: { drop?: string[] };
  };
}
interface PodSpec {
  containers: Container[];
  securityContext?: { runAsNonRoot?: boolean; runAsUser?: number; seccompProfile?: { type: string } };
  automountServiceAccountToken?: boolean;
}
interface DeploymentSpec {
  replicas?: number;
  selector: { matchLabels: Record<string, string> };
  template: { metadata: { labels: Record<string, string> }; spec: PodSpec };
}

/** Every YAML file under deploy/ except kustomization files, with its objects. */
function manifestFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((entry) => {
    const full = path.join(dir, entry);
    if (statSync(full).isDirectory()) return manifestFiles(full);
    return /\.ya?ml$/.test(entry) && entry !== 'kustomization.yaml' ? [full] : [];
  });
}

/** kubernetes-models' class for an object's apiVersion and kind (one module per kind). */
function validateWithModels(object: K8sObject): string | undefined {
  let Model: new (data: unknown) => { validate(): void };
  try {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const mod = require(`kubernetes-models/${object.apiVersion}/${object.kind}`) as Record<
      string,
      typeof Model
    >;
    Model = mod[object.kind]!;
  } catch {
    return `${object.kind}/${object.metadata?.name}: no model for ${object.apiVersion} ${object.kind}`;
  }
  try {
    new Model(object).validate();
    return undefined;
  } catch (err) {
    return `${object.kind}/${object.metadata?.name}: ${(err as Error).message}`;
  }
}

const ofKind = <T = unknown>(objects: K8sObject[], kind: string) =>
  objects.filter((o) => o.kind === kind) as Array<K8sObject & { spec: T; data?: Record<string, string> }>;
const deploymentsOf = (objects: K8sObject[]) => ofKind<DeploymentSpec>(objects, 'Deployment');
const deployment = (objects: K8sObject[], name: string) =>
  deploymentsOf(objects).find((d) => d.metadata.name === name)!;

/** The environment a container starts with: envFrom ConfigMaps, then env (Secrets from `secrets`). */
function containerEnv(
  objects: K8sObject[],
  container: Container,
  secrets: Record<string, Record<string, string>>,
) {
  const env: Record<string, string> = {};
  const configMap = (name: string) => {
    const found = ofKind(objects, 'ConfigMap').find((c) => c.metadata.name === name);
    if (!found) throw new Error(`container ${container.name}: ConfigMap ${name} does not exist`);
    return found.data ?? {};
  };
  const secret = (name: string, key: string, optional = false) => {
    const value = secrets[name]?.[key];
    if (value === undefined && !optional)
      throw new Error(`container ${container.name}: Secret ${name} has no ${key}`);
    return value;
  };
  for (const from of container.envFrom ?? []) {
    if (from.configMapRef) Object.assign(env, configMap(from.configMapRef.name));
    if (from.secretRef) Object.assign(env, secrets[from.secretRef.name]);
  }
  for (const variable of container.env ?? []) {
    if (variable.value !== undefined) env[variable.name] = variable.value;
    else if (variable.valueFrom?.secretKeyRef) {
      const { name, key, optional } = variable.valueFrom.secretKeyRef;
      const value = secret(name, key, optional);
      if (value !== undefined) env[variable.name] = value;
    } else if (variable.valueFrom?.configMapKeyRef) {
      const { name, key } = variable.valueFrom.configMapKeyRef;
      env[variable.name] = configMap(name)[key]!;
    }
  }
  return env;
}

const configProblems = (
  schema: (typeof DEPLOYED_SERVICES)[number]['schema'],
  env: Record<string, string>,
) => {
  try {
    loadConfig(schema, env);
    return [];
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    return err.issues.map((i) => `${i.key}: ${i.message}`);
  }
};

const baseSecret = readObjects(path.join(BASE, 'secret.yaml'))[0] as K8sObject & {
  stringData: Record<string, string>;
};
/** What an operator puts in platform-secrets: the base Secret's keys with real values. */
const realSecrets = {
  'platform-secrets': Object.fromEntries(
    Object.entries(baseSecret.stringData).map(([key, value]) => [
      key,
      key === 'PLATFORM_INTERNAL_SECRET'
        ? TEST_INTERNAL_SECRET
        : key === 'LEGACY_TOKEN_ENCRYPTION_KEY'
          ? randomBytes(32).toString('base64')
          : value.replace(/CHANGE-ME/g, 'real'),
    ]),
  ),
};

/**
 * Settings whose values are secrets: they come from a Secret, never from a ConfigMap or a literal. The
 * encryption keys among them are needed in production: unset, auth does not start on MongoDB, and the other
 * services store what they protect under a key derived from PLATFORM_INTERNAL_SECRET, which then can never be
 * rotated without losing the data.
 */
const SECRET_SETTINGS = [
  'PLATFORM_INTERNAL_SECRET',
  'MONGO_URL',
  'NATS_URL',
  'SMTP_URL',
  'SIGNING_KEYS_ENCRYPTION_KEY',
  'LEGACY_TOKEN_ENCRYPTION_KEY',
  'LLM_GATEWAY_ENCRYPTION_KEY',
];
const isEncryptionKey = (key: string) => key.endsWith('_ENCRYPTION_KEY');

describe('Kubernetes manifests (deploy/)', () => {
  it('parse, and every object is valid for its Kubernetes API schema (kubernetes-models)', () => {
    const problems: string[] = [];
    // compose files and the alerting rules (Prometheus's formats, checked by monitoring-rules.test.ts) are no manifests
    const files = manifestFiles(DEPLOY).filter(
      (f) => !f.includes(`${path.sep}compose${path.sep}`) && !f.includes(`${path.sep}monitoring${path.sep}`),
    );
    expect(files.length).toBeGreaterThan(5);
    for (const file of files) {
      for (const doc of parseAllDocuments(readFileSync(file, 'utf8'))) {
        if (doc.errors.length > 0) problems.push(`${file}: ${doc.errors[0]!.message}`);
      }
      for (const object of readObjects(file)) {
        const problem = validateWithModels(object);
        if (problem) problems.push(`${path.relative(REPO_ROOT, file)}: ${problem}`);
      }
    }
    expect(problems).toEqual([]);
  });

  it('gives operators, in deploy/README.md, the NATS authorization block of deploy/nats/authorization.conf', () => {
    const readme = readFileSync(path.join(DEPLOY, 'README.md'), 'utf8');
    const conf = readFileSync(path.join(DEPLOY, 'nats', 'authorization.conf'), 'utf8');
    const block = /```conf\n(authorization \{[\s\S]*?\n\})\n```/.exec(readme)?.[1];
    expect(block).toBe(conf.slice(conf.indexOf('authorization {')).trimEnd());
  });

  it('kustomize references resolve, and base and overlay render to valid objects', () => {
    for (const dir of [BASE, OVERLAY]) {
      const problems = kustomize(dir)
        .map(validateWithModels)
        .filter((p) => p !== undefined);
      expect({ dir, problems }).toEqual({ dir, problems: [] });
    }
  });

  describe.each([
    ['base', BASE],
    ['overlays/example', OVERLAY],
  ])('rendered %s', (_label, dir) => {
    const objects = kustomize(dir);
    const pods = (name: string) => deployment(objects, name).spec.template.metadata.labels;

    it('has a Deployment, a Service and a PodDisruptionBudget per service', () => {
      for (const { name } of DEPLOYED_SERVICES) {
        for (const kind of ['Deployment', 'Service', 'PodDisruptionBudget']) {
          expect({ kind, name, found: ofKind(objects, kind).some((o) => o.metadata.name === name) }).toEqual({
            kind,
            name,
            found: true,
          });
        }
      }
    });

    it('selects its own pods: Deployment selectors, Services and PDBs match pod labels', () => {
      for (const d of deploymentsOf(objects)) {
        expect(selects(d.spec.selector, d.spec.template.metadata.labels)).toBe(true);
      }
      for (const kind of ['Service', 'PodDisruptionBudget']) {
        for (const o of ofKind<{
          selector: { matchLabels?: Record<string, string> } | Record<string, string>;
        }>(objects, kind)) {
          const selector = (kind === 'Service' ? { matchLabels: o.spec.selector } : o.spec.selector) as {
            matchLabels: Record<string, string>;
          };
          const matched = deploymentsOf(objects).filter((d) =>
            selects(selector, d.spec.template.metadata.labels),
          );
          expect({ kind, name: o.metadata.name, matched: matched.map((d) => d.metadata.name) }).toEqual({
            kind,
            name: o.metadata.name,
            matched: [o.metadata.name],
          });
        }
      }
    });

    it("listens on each service's default port; Services and probes target ports the container has", () => {
      for (const { name, defaultPort } of DEPLOYED_SERVICES) {
        const d = deployment(objects, name);
        const [container] = d.spec.template.spec.containers;
        const ports = container!.ports ?? [];
        expect(ports.map((p) => p.containerPort)).toEqual([defaultPort, 9464]);
        expect(container!.env?.find((e) => e.name === 'PORT')?.value).toBe(String(defaultPort));
        const resolves = (port: string | number) =>
          ports.some((p) => p.name === port || p.containerPort === port);
        expect(container!.readinessProbe?.httpGet?.path).toBe('/readyz');
        expect(container!.livenessProbe?.httpGet?.path).toBe('/healthz');
        for (const probe of [container!.readinessProbe, container!.livenessProbe, container!.startupProbe]) {
          if (probe) expect(resolves(probe.httpGet!.port)).toBe(true);
        }
        const service = ofKind<{ ports: Array<{ port: number; targetPort: string | number }> }>(
          objects,
          'Service',
        ).find((s) => s.metadata.name === name)!;
        for (const port of service.spec.ports) {
          expect(resolves(port.targetPort)).toBe(true);
          // Service port = container port, so http://<service>:<port> reads the same as in docker-compose.yml
          expect(port.port).toBe(defaultPort);
        }
      }
    });

    it('runs non-root on a read-only root filesystem, with resources and no service-account token', () => {
      for (const d of deploymentsOf(objects)) {
        const pod = d.spec.template.spec;
        expect(pod.securityContext?.runAsNonRoot).toBe(true);
        expect(pod.securityContext?.seccompProfile?.type).toBe('RuntimeDefault');
        expect(pod.automountServiceAccountToken).toBe(false);
        for (const c of pod.containers) {
          expect(c.securityContext).toMatchObject({
            readOnlyRootFilesystem: true,
            allowPrivilegeEscalation: false,
            capabilities: { drop: ['ALL'] },
          });
          expect(c.resources?.requests?.cpu).toBeDefined();
          expect(c.resources?.requests?.memory).toBeDefined();
          expect(c.resources?.limits?.memory).toBeDefined();
        }
      }
    });

    it('autoscales the edge, llm-quota and llm-gateway, whose Deployments leave replicas to the autoscaler', () => {
      const hpas = ofKind<{
        scaleTargetRef: { kind: string; name: string };
        minReplicas: number;
        maxReplicas: number;
      }>(objects, 'HorizontalPodAutoscaler');
      expect(hpas.map((h) => h.spec.scaleTargetRef.name).sort()).toEqual([
        'edge',
        'llm-gateway',
        'llm-quota',
      ]);
      for (const hpa of hpas) {
        const target = deployment(objects, hpa.spec.scaleTargetRef.name);
        expect(hpa.spec.scaleTargetRef.kind).toBe('Deployment');
        expect(target.spec.replicas).toBeUndefined();
        expect(hpa.spec.minReplicas).toBeGreaterThanOrEqual(2);
        expect(hpa.spec.maxReplicas).toBeGreaterThan(hpa.spec.minReplicas);
      }
    });

    it("starts each service with an environment that passes the service's own configuration schema", () => {
      const found = DEPLOYED_SERVICES.map(({ name, schema, database }) => {
        const [container] = deployment(objects, name).spec.template.spec.containers;
        const env = containerEnv(objects, container!, realSecrets);
        const known = schemaKeys(schema);
        return {
          name,
          problems: configProblems(schema, env),
          // a variable no schema reads is a typo or a leftover
          unknown: Object.keys(env).filter((k) => !known.has(k) && !VARIABLES_OUTSIDE_SCHEMAS.has(k)),
          database: new URL(env.MONGO_URL!).pathname.slice(1) === database,
        };
      });
      expect(found).toEqual(
        DEPLOYED_SERVICES.map(({ name }) => ({ name, problems: [], unknown: [], database: true })),
      );
    });

    it('connects each service to NATS as its own user, from a Secret key of its own', () => {
      const found = DEPLOYED_SERVICES.map(({ name }) => {
        const [container] = deployment(objects, name).spec.template.spec.containers;
        const ref = container!.env?.find((e) => e.name === 'NATS_URL')?.valueFrom?.secretKeyRef;
        const url = new URL(containerEnv(objects, container!, realSecrets).NATS_URL!);
        return { name, key: ref?.key, user: url.username };
      });
      expect(found).toEqual(
        DEPLOYED_SERVICES.map(({ name }) => ({
          name,
          key: `${name.toUpperCase().replace(/-/g, '_')}_NATS_URL`,
          user: name,
        })),
      );
    });

    it("points the edge at the services' Service names and ports; auth and the edge agree on JWT iss/aud", () => {
      const envOf = (name: string) =>
        containerEnv(objects, deployment(objects, name).spec.template.spec.containers[0]!, realSecrets);
      const edge = envOf('edge');
      for (const [key, target] of Object.entries({
        AUTH_URL: 'auth',
        LLM_QUOTA_URL: 'llm-quota',
        LLM_GATEWAY_URL: 'llm-gateway',
        LEGACY_AGENT_URL: 'legacy-agent',
      })) {
        const url = new URL(edge[key]!);
        const service = ofKind<{ ports: Array<{ port: number }> }>(objects, 'Service').find(
          (s) => s.metadata.name === url.hostname,
        );
        expect({ key, service: service?.metadata.name, port: Number(url.port) }).toEqual({
          key,
          service: target,
          port: service?.spec.ports[0]?.port,
        });
      }
      expect(envOf('auth').JWT_ISSUER).toBe(edge.JWT_ISSUER);
      expect(envOf('auth').JWT_AUDIENCE).toBe(edge.JWT_AUDIENCE);
    });

    it('takes every secret setting from a Secret, and sets each encryption key a service reads', () => {
      for (const configMap of ofKind(objects, 'ConfigMap')) {
        const leaked = Object.keys(configMap.data ?? {}).filter((k) => SECRET_SETTINGS.includes(k));
        expect({ configMap: configMap.metadata.name, leaked }).toEqual({
          configMap: configMap.metadata.name,
          leaked: [],
        });
      }
      const found = DEPLOYED_SERVICES.map(({ name, schema }) => {
        const [container] = deployment(objects, name).spec.template.spec.containers;
        const fromSecret = new Set(
          (container!.env ?? []).filter((e) => e.valueFrom?.secretKeyRef).map((e) => e.name),
        );
        const read = [...schemaKeys(schema)].filter((k) => SECRET_SETTINGS.includes(k));
        return {
          name,
          notFromSecret: read.filter(
            (k) => (container!.env ?? []).some((e) => e.name === k) && !fromSecret.has(k),
          ),
          unsetEncryptionKeys: read.filter((k) => isEncryptionKey(k) && !fromSecret.has(k)),
        };
      });
      expect(found).toEqual(
        DEPLOYED_SERVICES.map(({ name }) => ({ name, notFromSecret: [], unsetEncryptionKeys: [] })),
      );
    });

    it("lets a slow completion finish: the edge waits longer than llm-gateway's model, one failover and a retry wait", () => {
      const configOf = (name: string) => {
        const service = DEPLOYED_SERVICES.find((s) => s.name === name)!;
        const env = containerEnv(
          objects,
          deployment(objects, name).spec.template.spec.containers[0]!,
          realSecrets,
        );
        return loadConfig(service.schema, env) as Record<string, unknown>;
      };
      const edge = configOf('edge');
      const gateway = configOf('llm-gateway');
      expect(edge.GATEWAY_UPSTREAM_TIMEOUT_MS as number).toBeGreaterThan(
        2 * (gateway.LLM_GATEWAY_DEFAULT_TIMEOUT_MS as number) +
          (gateway.LLM_GATEWAY_RETRY_MAX_WAIT_MS as number),
      );
      for (const ingress of ofKind(objects, 'Ingress')) {
        const annotations = (ingress.metadata as { annotations?: Record<string, string> }).annotations ?? {};
        for (const key of ['proxy-read-timeout', 'proxy-send-timeout']) {
          // ingress-nginx waits 60 s by default
          const seconds = Number(annotations[`nginx.ingress.kubernetes.io/${key}`] ?? 60);
          expect({ key, ms: seconds * 1000 >= (edge.GATEWAY_UPSTREAM_TIMEOUT_MS as number) }).toEqual({
            key,
            ms: true,
          });
        }
      }
    });

    it('gives each pod the time to drain on SIGTERM: preStop pause, SHUTDOWN_DRAIN_SECONDS and the stop, within the grace period', () => {
      for (const service of DEPLOYED_SERVICES) {
        const spec = deployment(objects, service.name).spec.template.spec;
        const container = spec.containers[0]!;
        const config = loadConfig(service.schema, containerEnv(objects, container, realSecrets)) as {
          SHUTDOWN_DRAIN_SECONDS: number;
        };
        const preStop = (
          container as { lifecycle?: { preStop?: { exec?: { command?: string[] } } } }
        ).lifecycle?.preStop?.exec?.command?.join(' ');
        const pauseSeconds = Number(/setTimeout\(\(\) => \{\}, (\d+)\)/.exec(preStop ?? '')?.[1] ?? 0) / 1000;
        const grace =
          (spec as { terminationGracePeriodSeconds?: number }).terminationGracePeriodSeconds ?? 30;
        expect({
          name: service.name,
          fits: grace >= pauseSeconds + config.SHUTDOWN_DRAIN_SECONDS + 10,
        }).toEqual({
          name: service.name,
          fits: true,
        });
      }
      // the services that carry streamed completions let them run two minutes
      for (const name of ['edge', 'llm-gateway']) {
        const container = deployment(objects, name).spec.template.spec.containers[0]!;
        expect(containerEnv(objects, container, realSecrets).SHUTDOWN_DRAIN_SECONDS).toBe('120');
      }
    });

    it('lets only the edge reach the services (and llm-gateway llm-quota), every pod DNS, MongoDB and NATS, only llm-gateway and auth the internet', () => {
      const policies = ofKind(objects, 'NetworkPolicy');
      const pod = (name: string): Endpoint => ({ pod: pods(name) });
      const stranger: Endpoint = { pod: { app: 'something-else' } };
      const outside: Endpoint = { external: 'a client or the ingress controller' };
      const upstreams = DEPLOYED_SERVICES.filter((s) => s.name !== 'edge');

      expect(connectionAllowed(policies, outside, pod('edge'), 8080)).toBe(true);
      expect(connectionAllowed(policies, stranger, pod('edge'), 8080)).toBe(true);
      for (const { name, defaultPort } of upstreams) {
        expect({ name, fromEdge: connectionAllowed(policies, pod('edge'), pod(name), defaultPort) }).toEqual({
          name,
          fromEdge: true,
        });
        expect(connectionAllowed(policies, stranger, pod(name), defaultPort)).toBe(false);
        expect(connectionAllowed(policies, outside, pod(name), defaultPort)).toBe(false);
        for (const other of upstreams.filter((s) => s.name !== name)) {
          expect({
            from: other.name,
            to: name,
            allowed: connectionAllowed(policies, pod(other.name), pod(name), defaultPort),
          }).toEqual({
            from: other.name,
            to: name,
            // the one service-to-service call: the gateway reads quota settings and budgets
            allowed: other.name === 'llm-gateway' && name === 'llm-quota',
          });
        }
      }
      const infrastructure = { external: 'MongoDB, NATS, DNS' } as const;
      for (const { name } of DEPLOYED_SERVICES) {
        for (const [port, protocol] of [
          [27017, 'TCP'],
          [4222, 'TCP'],
          [53, 'UDP'],
          [53, 'TCP'],
        ] as const) {
          expect({
            name,
            port,
            protocol,
            allowed: connectionAllowed(policies, pod(name), infrastructure, port, protocol),
          }).toEqual({
            name,
            port,
            protocol,
            allowed: true,
          });
        }
        // only the gateway (the model providers) and auth (identity providers, its mail server) call out
        const internet = { external: 'the internet' } as const;
        expect({
          name,
          https: connectionAllowed(policies, pod(name), internet, 443),
          smtp: [587, 465].map((port) => connectionAllowed(policies, pod(name), internet, port)),
        }).toEqual({
          name,
          https: name === 'llm-gateway' || name === 'auth',
          smtp: name === 'auth' ? [true, true] : [false, false],
        });
        expect(connectionAllowed(policies, pod(name), internet, 80)).toBe(false);
        expect(connectionAllowed(policies, pod(name), internet, 25)).toBe(false);
      }
    });
  });

  it('base: the placeholder Secret is refused by every service, so it can never go live', () => {
    const objects = kustomize(BASE);
    const placeholder = { 'platform-secrets': baseSecret.stringData };
    for (const { name, schema } of DEPLOYED_SERVICES) {
      const env = containerEnv(
        objects,
        deployment(objects, name).spec.template.spec.containers[0]!,
        placeholder,
      );
      expect(configProblems(schema, env).some((p) => p.startsWith('PLATFORM_INTERNAL_SECRET:'))).toBe(true);
    }
  });

  it('overlays/example: its namespace, release images, more replicas, an Ingress to the edge, no Secret', () => {
    const objects = kustomize(OVERLAY);
    expect(
      objects.filter((o) => o.kind !== 'Namespace').every((o) => o.metadata.namespace === 'ai-platform'),
    ).toBe(true);
    for (const { name } of DEPLOYED_SERVICES) {
      expect(deployment(objects, name).spec.template.spec.containers[0]!.image).toBe(
        `registry.example.com/ai-platform/${name}:1.0.0`,
      );
    }
    expect(deployment(objects, 'auth').spec.replicas).toBe(3);
    expect(ofKind(objects, 'Secret')).toEqual([]);
    const [ingress] = ofKind<{
      rules: Array<{
        http: { paths: Array<{ backend: { service: { name: string; port: { name: string } } } }> };
      }>;
    }>(objects, 'Ingress');
    const backend = ingress!.spec.rules[0]!.http.paths[0]!.backend.service;
    const service = ofKind<{ ports: Array<{ name: string }> }>(objects, 'Service').find(
      (s) => s.metadata.name === backend.name,
    );
    expect(service?.spec.ports.map((p) => p.name)).toContain(backend.port.name);
    expect(backend.name).toBe('edge');
  });

  it("overlays/example: the edge believes the ingress controller's forwarding headers; auth's links use the Ingress host", () => {
    const objects = kustomize(OVERLAY);
    const envOf = (name: string) =>
      containerEnv(objects, deployment(objects, name).spec.template.spec.containers[0]!, realSecrets);
    // the controller's pods have cluster (private) addresses; a client's public address is never believed
    const trust = compileTrustProxy(envOf('edge').TRUST_PROXY ?? 'false');
    expect(trust('10.244.3.17', 0)).toBe(true);
    expect(trust('203.0.113.9', 0)).toBe(false);
    const [ingress] = ofKind<{ tls: Array<{ hosts: string[] }>; rules: Array<{ host: string }> }>(
      objects,
      'Ingress',
    );
    const host = ingress!.spec.rules[0]!.host;
    expect(ingress!.spec.tls[0]!.hosts).toContain(host);
    const auth = envOf('auth');
    // mailed links, SSO callbacks and Secure cookies are built on it (services/auth/src/accounts/public-url.ts)
    expect(auth.PUBLIC_BASE_URL ?? auth.JWT_ISSUER).toBe(`https://${host}`);
    expect(envOf('edge').JWT_ISSUER).toBe(auth.JWT_ISSUER);
  });

  const kubectl = spawnSync('kubectl', ['version', '--client'], { stdio: 'ignore' }).status === 0;
  (kubectl ? it : it.skip)('renders as kubectl kustomize does (checked where kubectl is installed)', () => {
    const strip = (name: string) => name.replace(/-[a-z0-9]{10}$/, '');
    const summary = (objects: K8sObject[]) =>
      objects
        .map((o) => {
          const spec = o.spec as { replicas?: number; template?: { spec: PodSpec } } | undefined;
          const images = spec?.template?.spec.containers.map((c) => c.image).join(',') ?? '';
          return `${o.kind}/${o.metadata.namespace ?? ''}/${o.kind === 'ConfigMap' ? strip(o.metadata.name) : o.metadata.name} ${images} ${spec?.replicas ?? ''}`;
        })
        .sort();
    for (const dir of [BASE, OVERLAY]) {
      const rendered = spawnSync('kubectl', ['kustomize', dir], { encoding: 'utf8' });
      expect(rendered.status).toBe(0);
      const theirs = parseAllDocuments(rendered.stdout).map((d) => d.toJS() as K8sObject);
      expect(summary(kustomize(dir))).toEqual(summary(theirs));
    }
  });
});
