/**
 * docker-compose.yml (plus override files) read as Compose reads it, and turned into podman commands, so
 * that the container test runs exactly what compose would: each file interpolated, the files merged, the
 * services of the active profiles started in dependency order. Only the attributes this repository's
 * compose files use are understood; any other one fails the test (so a new attribute cannot be silently
 * dropped by the test while compose applies it).
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parse } from 'yaml';
import { interpolateDocument } from '../deploy/compose-interpolation';

export interface ComposeHealthcheck {
  test: string[];
  interval?: string;
  timeout?: string;
  retries?: number;
  start_period?: string;
}

export interface ComposeService {
  image?: string;
  build?: { context: string; dockerfile?: string; args?: Record<string, string> };
  depends_on?: Record<string, { condition: string; required?: boolean }>;
  environment?: Record<string, string | number | boolean | null>;
  networks?: string[];
  healthcheck?: ComposeHealthcheck;
  cap_drop?: string[];
  init?: boolean;
  read_only?: boolean;
  security_opt?: string[];
  tmpfs?: string[];
  volumes?: string[];
  ports?: string[];
  expose?: string[];
  command?: string[];
  profiles?: string[];
  restart?: string;
  stop_grace_period?: string;
  stop_signal?: string;
  dns_opt?: string[];
  logging?: { driver: string; options?: Record<string, string> };
}

export interface ComposeProject {
  name: string;
  services: Record<string, ComposeService>;
  networks: Record<string, { internal?: boolean }>;
  volumes: Record<string, unknown>;
}

/** The service attributes that `runArgs` translates; anything else in a compose file is refused. */
const KNOWN = new Set([
  'image',
  'build',
  'depends_on',
  'environment',
  'networks',
  'healthcheck',
  'cap_drop',
  'init',
  'read_only',
  'security_opt',
  'tmpfs',
  'volumes',
  'ports',
  'expose',
  'command',
  'profiles',
  'restart',
  'stop_grace_period',
  'stop_signal',
  'logging',
  'dns_opt',
]);

/** Sequences Compose replaces when an override sets them; every other sequence is merged. */
const REPLACED = new Set(['command', 'entrypoint', 'test', 'profiles']);

type Json = unknown;

const isMap = (v: Json): v is Record<string, Json> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/** A volume or tmpfs entry's mount target, the key Compose merges those sequences by. */
const mountTarget = (entry: string) => entry.split(':')[entry.startsWith('/') ? 0 : 1] ?? entry;

function merge(base: Json, over: Json, key = ''): Json {
  if (isMap(base) && isMap(over)) {
    const out: Record<string, Json> = { ...base };
    for (const [k, v] of Object.entries(over)) out[k] = k in base ? merge(base[k], v, k) : v;
    return out;
  }
  if (Array.isArray(base) && Array.isArray(over) && !REPLACED.has(key)) {
    if (key === 'volumes' || key === 'tmpfs') {
      const targets = new Set(over.map((e) => mountTarget(String(e))));
      return [...base.filter((e) => !targets.has(mountTarget(String(e)))), ...over];
    }
    return [...base, ...over.filter((e) => !base.includes(e))];
  }
  return over;
}

/**
 * The project Compose would run from `files` (relative to `root`) with `env` as its environment (.env):
 * each file interpolated, then merged in order; the services whose profiles are all inactive dropped.
 */
export function loadCompose(
  root: string,
  files: string[],
  env: Record<string, string>,
  activeProfiles: string[] = [],
): ComposeProject {
  let doc: Json = {};
  for (const file of files) {
    const parsed = parse(readFileSync(path.join(root, file), 'utf8'), { merge: true }) as Json;
    doc = merge(doc, interpolateDocument(parsed, env));
  }
  const project = doc as {
    name?: string;
    services: Record<string, ComposeService>;
    networks?: Record<string, { internal?: boolean } | null>;
    volumes?: Record<string, unknown>;
  };
  const services: Record<string, ComposeService> = {};
  for (const [name, service] of Object.entries(project.services)) {
    const unknown = Object.keys(service).filter((k) => !k.startsWith('x-') && !KNOWN.has(k));
    if (unknown.length > 0)
      throw new Error(`services.${name}: the container test cannot apply ${unknown.join(', ')}`);
    if (service.profiles && !service.profiles.some((p) => activeProfiles.includes(p))) continue;
    services[name] = service;
  }
  for (const [name, service] of Object.entries(services)) {
    for (const [dep, { required }] of Object.entries(service.depends_on ?? {})) {
      if (services[dep]) continue;
      if (required === false) delete service.depends_on?.[dep];
      else throw new Error(`services.${name} depends on ${dep}, which is not started`);
    }
  }
  const networks = Object.fromEntries(Object.entries(project.networks ?? {}).map(([k, v]) => [k, v ?? {}]));
  return { name: project.name ?? 'project', services, networks, volumes: project.volumes ?? {} };
}

/** The services in an order that starts each after everything it depends on. */
export function startOrder(project: ComposeProject): string[] {
  const order: string[] = [];
  const visit = (name: string, trail: string[]) => {
    if (order.includes(name)) return;
    if (trail.includes(name)) throw new Error(`dependency cycle: ${[...trail, name].join(' -> ')}`);
    for (const dep of Object.keys(project.services[name]?.depends_on ?? {})) visit(dep, [...trail, name]);
    order.push(name);
  };
  for (const name of Object.keys(project.services).sort()) visit(name, []);
  return order;
}

/** A Compose duration (`10s`, `1m30s`, `500ms`) in milliseconds. */
export function durationMs(text: string | undefined, fallbackMs: number): number {
  if (!text) return fallbackMs;
  let total = 0;
  const re = /(\d+(?:\.\d+)?)(ms|h|m|s)/g;
  let matched = '';
  for (const m of text.matchAll(re)) {
    matched += m[0];
    total += Number(m[1]) * { ms: 1, s: 1000, m: 60_000, h: 3_600_000 }[m[2] as 'ms' | 's' | 'm' | 'h'];
  }
  if (matched !== text) throw new Error(`not a duration: ${text}`);
  return total;
}

/** Names of the podman objects of a project: Compose's `<project>_<name>` and `<project>-<service>`. */
export const objectName = {
  network: (project: ComposeProject, name: string) => `${project.name}_${name}`,
  volume: (project: ComposeProject, name: string) => `${project.name}_${name}`,
  container: (project: ComposeProject, service: string) => `${project.name}-${service}`,
};

/** The image a service runs: compose's `image:` (built from `build:` when it has one). */
export const imageOf = (project: ComposeProject, service: string): string => {
  const image = project.services[service]?.image;
  if (!image) throw new Error(`services.${service} names no image`);
  return image;
};

/** `podman build` arguments for a service with a `build:` section. */
export function buildArgs(project: ComposeProject, service: string, root: string): string[] {
  const build = project.services[service]?.build;
  if (!build) throw new Error(`services.${service} has no build section`);
  const context = path.resolve(root, build.context);
  return [
    'build',
    // Docker's image format: the OCI format has no HEALTHCHECK
    '--format',
    'docker',
    '--network',
    'host',
    '--pull=never',
    '--file',
    path.resolve(context, build.dockerfile ?? 'Dockerfile'),
    ...Object.entries(build.args ?? {}).flatMap(([k, v]) => ['--build-arg', `${k}=${v}`]),
    '--tag',
    imageOf(project, service),
    context,
  ];
}

/**
 * `podman run` arguments equivalent to what Compose creates for a service. Differences, all outside
 * the service's own process: the health check is run by the test (`podman healthcheck run`), since
 * podman schedules checks through systemd, which these machines lack; logs use podman's own file
 * driver with the same size cap.
 */
export function runArgs(project: ComposeProject, service: string, root: string): string[] {
  const s = project.services[service];
  if (!s) throw new Error(`no service ${service}`);
  const args = ['run', '--detach', '--name', objectName.container(project, service)];
  const networks = s.networks ?? ['default'];
  for (const network of networks) args.push('--network', objectName.network(project, network));
  args.push('--network-alias', service);
  for (const [k, v] of Object.entries(s.environment ?? {})) args.push('--env', `${k}=${v ?? ''}`);
  // podman's --read-only also mounts tmpfs on /tmp, /run and /var/tmp; Docker's does not
  if (s.read_only) args.push('--read-only', '--read-only-tmpfs=false');
  for (const t of s.tmpfs ?? []) args.push('--tmpfs', t);
  for (const cap of s.cap_drop ?? []) args.push('--cap-drop', cap);
  for (const opt of s.security_opt ?? []) {
    args.push('--security-opt', opt === 'no-new-privileges:true' ? 'no-new-privileges' : opt);
  }
  if (s.init) args.push('--init');
  for (const v of s.volumes ?? []) {
    const [source = '', ...rest] = v.split(':');
    // a named volume of the project, or a bind mount of a path relative to the compose file
    const named = !source.startsWith('/') && !source.startsWith('.');
    const resolved = named ? objectName.volume(project, source) : path.resolve(root, source);
    args.push('--volume', [resolved, ...rest].join(':'));
  }
  for (const p of s.ports ?? []) args.push('--publish', p);
  for (const e of s.expose ?? []) args.push('--expose', e);
  if (s.restart) args.push('--restart', s.restart);
  if (s.stop_signal) args.push('--stop-signal', s.stop_signal);
  for (const o of s.dns_opt ?? []) args.push('--dns-option', o);
  if (s.logging?.options?.['max-size']) args.push('--log-opt', `max-size=${s.logging.options['max-size']}`);
  const hc = s.healthcheck;
  if (hc) {
    const [kind, ...command] = hc.test;
    if (kind === 'CMD') args.push('--health-cmd', JSON.stringify(command));
    else if (kind === 'CMD-SHELL') args.push('--health-cmd', command.join(' '));
    else if (kind === 'NONE') args.push('--no-healthcheck');
    else throw new Error(`services.${service}.healthcheck.test: unknown form ${kind}`);
    args.push('--health-interval', 'disable');
    if (hc.timeout) args.push('--health-timeout', hc.timeout);
    if (hc.retries !== undefined) args.push('--health-retries', String(hc.retries));
    if (hc.start_period) args.push('--health-start-period', hc.start_period);
  }
  args.push(imageOf(project, service), ...(s.command ?? []));
  return args;
}
