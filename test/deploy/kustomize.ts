/**
 * Just enough of kustomize to check deploy/ without a kustomize binary (none ships on the npm registry):
 * it renders a kustomization (resources, namespace, labels, images, replicas, ConfigMap/Secret generators,
 * and patches: JSON 6902 lists and strategic-merge maps, including `$patch: delete`) and fails on every
 * dangling reference and on any field it does not know, so a new kustomize feature in deploy/ is either
 * taught here or noticed. Generated names carry no content hash. When kubectl is installed, the tests also
 * compare this rendering with `kubectl kustomize`.
 */
import { existsSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { parseAllDocuments } from 'yaml';

export interface K8sObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string>; [key: string]: unknown };
  [key: string]: unknown;
}

interface Target {
  group?: string;
  version?: string;
  kind?: string;
  name?: string;
}

interface Kustomization {
  apiVersion?: string;
  kind?: string;
  namespace?: string;
  resources?: string[];
  labels?: Array<{ pairs: Record<string, string>; includeSelectors?: boolean; includeTemplates?: boolean }>;
  images?: Array<{ name: string; newName?: string; newTag?: string }>;
  replicas?: Array<{ name: string; count: number }>;
  configMapGenerator?: Generator[];
  secretGenerator?: Generator[];
  patches?: Array<{ path?: string; patch?: string; target?: Target }>;
}

interface Generator {
  name: string;
  behavior?: 'create' | 'merge' | 'replace';
  envs?: string[];
  literals?: string[];
  type?: string;
}

const KNOWN_FIELDS = new Set([
  'apiVersion',
  'kind',
  'namespace',
  'resources',
  'labels',
  'images',
  'replicas',
  'configMapGenerator',
  'secretGenerator',
  'patches',
]);

/** Every object of every YAML document in a file (empty documents skipped). */
export function readObjects(file: string): K8sObject[] {
  const docs = parseAllDocuments(readFileSync(file, 'utf8'));
  return docs.flatMap((doc) => {
    if (doc.errors.length > 0) throw new Error(`${file}: ${doc.errors[0]!.message}`);
    const value = doc.toJS() as K8sObject | null;
    return value ? [value] : [];
  });
}

const groupOf = (apiVersion: string) => (apiVersion.includes('/') ? apiVersion.split('/')[0]! : '');
const versionOf = (apiVersion: string) => apiVersion.split('/').at(-1)!;

export function matchesTarget(object: K8sObject, target: Target): boolean {
  return (
    (target.kind === undefined || target.kind === object.kind) &&
    (target.name === undefined || target.name === object.metadata.name) &&
    (target.group === undefined || target.group === groupOf(object.apiVersion)) &&
    (target.version === undefined || target.version === versionOf(object.apiVersion))
  );
}

function readEnvFile(file: string): Record<string, string> {
  const entries: Record<string, string> = {};
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    const trimmed = line.trim();
    if (!trimmed || trimmed.startsWith('#')) continue;
    const eq = trimmed.indexOf('=');
    if (eq <= 0) throw new Error(`${file}: "${line}" is not KEY=value`);
    entries[trimmed.slice(0, eq)] = trimmed.slice(eq + 1);
  }
  return entries;
}

function generate(dir: string, generator: Generator, kind: 'ConfigMap' | 'Secret'): K8sObject {
  const data: Record<string, string> = {};
  for (const env of generator.envs ?? []) {
    const file = path.join(dir, env);
    if (!existsSync(file))
      throw new Error(`${dir}: ${kind} generator ${generator.name}: ${env} does not exist`);
    Object.assign(data, readEnvFile(file));
  }
  for (const literal of generator.literals ?? []) {
    const eq = literal.indexOf('=');
    data[literal.slice(0, eq)] = literal.slice(eq + 1);
  }
  return kind === 'ConfigMap'
    ? { apiVersion: 'v1', kind, metadata: { name: generator.name }, data }
    : {
        apiVersion: 'v1',
        kind,
        metadata: { name: generator.name },
        type: generator.type ?? 'Opaque',
        stringData: data,
      };
}

function pointer(path6902: string): string[] {
  return path6902
    .split('/')
    .slice(1)
    .map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'));
}

function applyJson6902(
  object: K8sObject,
  ops: Array<{ op: string; path: string; value?: unknown }>,
  where: string,
) {
  for (const op of ops) {
    const keys = pointer(op.path);
    const last = keys.pop()!;
    let parent: Record<string, unknown> | unknown[] = object;
    for (const key of keys) {
      const next: unknown = Array.isArray(parent) ? parent[Number(key)] : parent[key];
      if (next === undefined || next === null || typeof next !== 'object') {
        throw new Error(`${where}: ${op.op} ${op.path}: ${key} does not exist`);
      }
      parent = next as Record<string, unknown> | unknown[];
    }
    const exists = Array.isArray(parent) ? Number(last) < parent.length : last in parent;
    if ((op.op === 'replace' || op.op === 'remove') && !exists) {
      throw new Error(`${where}: ${op.op} ${op.path}: nothing there`);
    }
    if (op.op === 'replace' || op.op === 'add') {
      if (Array.isArray(parent)) {
        if (op.op === 'add') parent.splice(last === '-' ? parent.length : Number(last), 0, op.value);
        else parent[Number(last)] = op.value;
      } else parent[last] = op.value;
    } else if (op.op === 'remove') {
      if (Array.isArray(parent)) parent.splice(Number(last), 1);
      else delete parent[last];
    } else throw new Error(`${where}: unsupported JSON patch op ${op.op}`);
  }
}

/** Strategic merge, as far as deploy/ needs it: maps merge, lists of named items merge by name. */
function strategicMerge(base: unknown, patch: unknown): unknown {
  if (Array.isArray(base) && Array.isArray(patch)) {
    const named = (items: unknown[]) => items.every((i) => i && typeof i === 'object' && 'name' in i);
    if (!named(base) || !named(patch)) return patch;
    const result = [...base] as Array<{ name: string }>;
    for (const item of patch as Array<{ name: string }>) {
      const at = result.findIndex((r) => r.name === item.name);
      if (at >= 0) result[at] = strategicMerge(result[at], item) as { name: string };
      else result.push(item);
    }
    return result;
  }
  if (base && patch && typeof base === 'object' && typeof patch === 'object' && !Array.isArray(patch)) {
    const result: Record<string, unknown> = { ...(base as Record<string, unknown>) };
    for (const [key, value] of Object.entries(patch)) {
      if (value === null) delete result[key];
      else result[key] = strategicMerge(result[key], value);
    }
    return result;
  }
  return patch;
}

function podTemplateOf(
  object: K8sObject,
): { metadata?: { labels?: Record<string, string> }; spec?: unknown } | undefined {
  const spec = object.spec as { template?: { metadata?: { labels?: Record<string, string> } } } | undefined;
  return spec?.template;
}

function containersOf(object: K8sObject): Array<{ name: string; image?: string }> {
  const template = podTemplateOf(object) as
    | {
        spec?: {
          containers?: Array<{ name: string; image?: string }>;
          initContainers?: Array<{ name: string; image?: string }>;
        };
      }
    | undefined;
  return [...(template?.spec?.containers ?? []), ...(template?.spec?.initContainers ?? [])];
}

const imageName = (image: string) => image.replace(/@.*$/, '').replace(/:[^/:]+$/, '');

/** Renders the kustomization in `dir` (a folder holding kustomization.yaml). */
export function kustomize(dir: string): K8sObject[] {
  const file = path.join(dir, 'kustomization.yaml');
  if (!existsSync(file)) throw new Error(`${dir}: no kustomization.yaml`);
  const k = readObjects(file)[0] as unknown as Kustomization;
  const unknownFields = Object.keys(k).filter((f) => !KNOWN_FIELDS.has(f));
  if (unknownFields.length > 0)
    throw new Error(`${file}: fields this checker does not know: ${unknownFields.join(', ')}`);
  if (k.kind !== 'Kustomization') throw new Error(`${file}: kind is ${k.kind}`);

  let objects: K8sObject[] = [];
  for (const resource of k.resources ?? []) {
    const target = path.join(dir, resource);
    if (!existsSync(target)) throw new Error(`${file}: resource ${resource} does not exist`);
    objects.push(...(statSync(target).isDirectory() ? kustomize(target) : readObjects(target)));
  }

  for (const [generators, kind] of [
    [k.configMapGenerator, 'ConfigMap'],
    [k.secretGenerator, 'Secret'],
  ] as const) {
    for (const generator of generators ?? []) {
      const generated = generate(dir, generator, kind);
      const existing = objects.find((o) => o.kind === kind && o.metadata.name === generator.name);
      const behavior = generator.behavior ?? 'create';
      if (behavior === 'create') {
        if (existing) throw new Error(`${file}: ${kind} ${generator.name} already exists (behavior: create)`);
        objects.push(generated);
      } else {
        if (!existing) throw new Error(`${file}: ${kind} ${generator.name} to ${behavior} does not exist`);
        const field = kind === 'ConfigMap' ? 'data' : 'stringData';
        existing[field] =
          behavior === 'merge'
            ? {
                ...(existing[field] as Record<string, string>),
                ...(generated[field] as Record<string, string>),
              }
            : generated[field];
      }
    }
  }

  for (const patch of k.patches ?? []) {
    const text = patch.path ? readFileSync(path.join(dir, patch.path), 'utf8') : patch.patch;
    if (patch.path && !existsSync(path.join(dir, patch.path)))
      throw new Error(`${file}: patch ${patch.path} missing`);
    if (!text) throw new Error(`${file}: a patch with neither path nor patch`);
    const body = parseAllDocuments(text)[0]!.toJS() as unknown;
    const target: Target =
      patch.target ??
      (Array.isArray(body)
        ? {}
        : { kind: (body as K8sObject).kind, name: (body as K8sObject).metadata?.name });
    const where = `${file}: patch on ${target.kind}/${target.name}`;
    const matched = objects.filter((o) => matchesTarget(o, target));
    if (matched.length === 0) throw new Error(`${where}: matches no object`);
    if (Array.isArray(body)) {
      for (const object of matched) applyJson6902(object, body as Array<{ op: string; path: string }>, where);
    } else if ((body as { $patch?: string }).$patch === 'delete') {
      objects = objects.filter((o) => !matched.includes(o));
    } else {
      objects = objects.map((o) => (matched.includes(o) ? (strategicMerge(o, body) as K8sObject) : o));
    }
  }

  for (const image of k.images ?? []) {
    let used = false;
    for (const object of objects) {
      for (const container of containersOf(object)) {
        if (container.image && imageName(container.image) === image.name) {
          used = true;
          const tag = image.newTag ?? container.image.slice(imageName(container.image).length + 1);
          container.image = `${image.newName ?? image.name}${tag ? `:${tag}` : ''}`;
        }
      }
    }
    if (!used) throw new Error(`${file}: image ${image.name} is used by no container`);
  }

  for (const replicas of k.replicas ?? []) {
    const target = objects.find(
      (o) =>
        ['Deployment', 'StatefulSet', 'ReplicaSet'].includes(o.kind) && o.metadata.name === replicas.name,
    );
    if (!target) throw new Error(`${file}: replicas for ${replicas.name}, which is no workload`);
    (target.spec as { replicas?: number }).replicas = replicas.count;
  }

  for (const label of k.labels ?? []) {
    if (label.includeSelectors)
      throw new Error(`${file}: labels with includeSelectors are not supported here`);
    for (const object of objects) {
      object.metadata.labels = { ...object.metadata.labels, ...label.pairs };
      const template = podTemplateOf(object);
      if (label.includeTemplates && template) {
        template.metadata = {
          ...template.metadata,
          labels: { ...template.metadata?.labels, ...label.pairs },
        };
      }
    }
  }

  if (k.namespace) {
    for (const object of objects) {
      if (object.kind === 'Namespace') object.metadata.name = k.namespace;
      else object.metadata.namespace = k.namespace;
    }
  }
  return objects;
}
