/**
 * The bundling half of the production build: each service's `src/main.ts` (and every worker entry, thread or process,
 * of the code it inlines) into plain JavaScript that `node` runs without tsx.
 *
 * The `@platform/*` workspace packages are TypeScript sources, so they are inlined. Third-party packages
 * stay external (`require('pino')`) and come from node_modules at run time; the build records which
 * workspace package imports each of them, so that deploy.ts can install exactly those and check them.
 */
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { isBuiltin } from 'node:module';
import path from 'node:path';
import { build, type Metafile, type Plugin } from 'esbuild';
import { parse as parseYaml } from 'yaml';

export const REPO_ROOT = path.resolve(__dirname, '..', '..');

/** Services with a production entry (`services/<name>/src/main.ts`), in build order. */
export const SERVICES = ['edge', 'auth', 'llm-quota', 'legacy-agent', 'llm-gateway', 'standalone'] as const;
export type ServiceName = (typeof SERVICES)[number];

/**
 * Third-party packages inlined like the workspace's own, because shipping them whole costs far more than
 * the part the bundle uses. gpt-tokenizer (the gateway's prompt-token count) is 28 MB on disk: four
 * encodings in three builds (cjs, esm, sources) plus raw data; the bundle needs one encoding (o200k_base),
 * about 3 MB. Pure JavaScript with no dependencies of its own, so inlining changes nothing at run time.
 */
export const INLINED_PACKAGES: ReadonlySet<string> = new Set(['gpt-tokenizer']);

/** A worker entry (a worker thread's or a worker process's program): `*-worker.ts` or `*.worker.ts` under a `src/`. */
export const WORKER_ENTRY = /(?:-|\.)worker\.ts$/;

export interface BuildOptions {
  service: string;
  /** where main.js, the worker entries and their source maps go (default services/<svc>/dist) */
  outDir?: string;
  /** print nothing */
  quiet?: boolean;
}

export interface BuildResult {
  service: string;
  outDir: string;
  /** the files written, absolute */
  files: string[];
  /** worker entries bundled beside main.js: source file -> output file */
  workers: Record<string, string>;
  /** third-party packages the bundles import -> the workspace package folders that import them */
  externals: Map<string, Set<string>>;
  /** the workspace source files inlined, absolute */
  inputs: string[];
}

function packageNameOf(specifier: string): string {
  const parts = specifier.split('/');
  return specifier.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0]!;
}

/** The folder holding the nearest package.json above `file`. */
export function packageDirOf(file: string): string {
  let dir = path.dirname(file);
  while (!existsSync(path.join(dir, 'package.json'))) {
    const up = path.dirname(dir);
    if (up === dir) throw new Error(`no package.json above ${file}`);
    dir = up;
  }
  return dir;
}

/**
 * Inline `@platform/*` (workspace TypeScript) and INLINED_PACKAGES, keep every other package external, and remember who
 * imports each external so the deploy step can check it resolves at run time.
 */
function workspaceInliner(externals: Map<string, Set<string>>): Plugin {
  return {
    name: 'platform-workspace-inliner',
    setup(b) {
      b.onResolve({ filter: /^[^./]/ }, (args) => {
        if (isBuiltin(args.path)) return { path: args.path, external: true };
        if (args.path.startsWith('@platform/')) return undefined;
        const name = packageNameOf(args.path);
        if (INLINED_PACKAGES.has(name)) return undefined;
        // `require.resolve(x)` asks where x is: a dependency of the bundle when the importer declares x
        // for production (a data file read from the package), otherwise a probe for a development tool
        // (legacy-agent looks for tsx/cjs inside a try when run from TypeScript)
        if (args.kind === 'require-resolve' && !declaresForProduction(packageDirOf(args.importer), name)) {
          return { path: args.path, external: true };
        }
        const importers = externals.get(name) ?? new Set<string>();
        importers.add(packageDirOf(args.importer));
        externals.set(name, importers);
        return { path: args.path, external: true };
      });
    },
  };
}

function walk(dir: string, found: string[] = []): string[] {
  if (!existsSync(dir)) return found;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) {
      if (entry.name !== 'node_modules') walk(full, found);
    } else if (WORKER_ENTRY.test(entry.name) && !entry.name.endsWith('.test.ts')) found.push(full);
  }
  return found;
}

/** Worker entries of the workspace packages whose sources a bundle inlined. */
export function findWorkerEntries(packageDirs: Iterable<string>): string[] {
  return [...new Set(packageDirs)].flatMap((dir) => walk(path.join(dir, 'src'))).sort();
}

/** The workspace package folders (under packages/ or services/) that a metafile's inputs come from. */
function inlinedPackageDirs(metafile: Metafile): string[] {
  const dirs = new Set<string>();
  for (const input of Object.keys(metafile.inputs)) {
    const abs = path.resolve(REPO_ROOT, input);
    if (abs.includes(`${path.sep}node_modules${path.sep}`)) continue;
    const dir = packageDirOf(abs);
    if (dir !== REPO_ROOT) dirs.add(dir);
  }
  return [...dirs];
}

const common = {
  bundle: true,
  platform: 'node',
  target: 'node20',
  format: 'cjs',
  sourcemap: true,
  // keep classes' and functions' `.name` (errors report it) when esbuild renames clashing identifiers
  keepNames: true,
  metafile: true,
  logLevel: 'warning',
  absWorkingDir: REPO_ROOT,
} as const;

/**
 * Bundles `services/<svc>/src/main.ts` into `<outDir>/main.js` (default services/<svc>/dist).
 */
export async function buildService(options: BuildOptions): Promise<BuildResult> {
  const serviceDir = path.join(REPO_ROOT, 'services', options.service);
  const entry = path.join(serviceDir, 'src', 'main.ts');
  if (!existsSync(entry)) throw new Error(`unknown service "${options.service}": ${entry} does not exist`);
  const result = await bundleEntry({
    entry,
    outDir: options.outDir ?? path.join(serviceDir, 'dist'),
    quiet: options.quiet,
  });
  return { ...result, service: options.service };
}

/**
 * Bundles `entry` into `<outDir>/main.js`, and each worker entry found in the sources of the entry's
 * package and of the workspace packages it inlines into `<outDir>/<basename>.js`: after bundling,
 * `__dirname` of the code that spawns a worker is `<outDir>`, so
 * `path.join(__dirname, 'train-worker' + path.extname(__filename))` finds it (and the .ts under tsx).
 * The packages' `data/` files go to `<outDir>/data/`.
 */
export async function bundleEntry(options: {
  entry: string;
  outDir: string;
  quiet?: boolean;
}): Promise<BuildResult> {
  const entry = path.resolve(options.entry);
  const outDir = path.resolve(options.outDir);
  rmSync(outDir, { recursive: true, force: true });
  mkdirSync(outDir, { recursive: true });

  const externals = new Map<string, Set<string>>();
  const main = await build({
    ...common,
    entryPoints: { main: entry },
    outdir: outDir,
    plugins: [workspaceInliner(externals)],
  });

  const workerSources = findWorkerEntries([packageDirOf(entry), ...inlinedPackageDirs(main.metafile)]);
  const workers: Record<string, string> = {};
  const entryPoints: Record<string, string> = {};
  for (const source of workerSources) {
    const name = path.basename(source, '.ts');
    if (name === 'main' || entryPoints[name]) {
      throw new Error(`worker entry ${source} would overwrite ${name}.js; give it a unique name`);
    }
    entryPoints[name] = source;
    workers[source] = path.join(outDir, `${name}.js`);
  }
  const outputs: Metafile['outputs'][] = [main.metafile.outputs];
  let workerMetafile: Metafile | undefined;
  if (workerSources.length > 0) {
    const workerBuild = await build({
      ...common,
      entryPoints,
      outdir: outDir,
      plugins: [workspaceInliner(externals)],
    });
    outputs.push(workerBuild.metafile.outputs);
    workerMetafile = workerBuild.metafile;
  }
  const undeclared = undeclaredExternals({ externals });
  if (undeclared.length > 0) {
    throw new Error(`production dependencies missing:\n  ${undeclared.join('\n  ')}`);
  }
  const files = outputs.flatMap((o) => Object.keys(o).map((f) => path.resolve(REPO_ROOT, f)));
  files.push(...copyDataFiles([packageDirOf(entry), ...inlinedPackageDirs(main.metafile)], outDir));
  const inputs = [main.metafile, ...(workerMetafile ? [workerMetafile] : [])]
    .flatMap((m) => Object.keys(m.inputs).map((f) => path.resolve(REPO_ROOT, f)))
    .filter((f) => !f.includes(`${path.sep}node_modules${path.sep}`));
  if (!options.quiet) {
    for (const o of outputs) {
      for (const [file, info] of Object.entries(o)) {
        if (!file.endsWith('.js')) continue;
        console.log(
          `  ${path.relative(process.cwd(), path.resolve(REPO_ROOT, file))}  ${(info.bytes / 1024).toFixed(0)} KiB`,
        );
      }
    }
  }
  return {
    service: path.basename(packageDirOf(entry)),
    outDir,
    files,
    workers,
    externals,
    inputs: [...new Set(inputs)].sort(),
  };
}

/**
 * The `data/` files of the bundled workspace packages (e.g. @platform/nlu's word-vector table), copied into
 * `<outDir>/data/`, where the inlined code looks for them (`path.join(__dirname, 'data')`).
 */
function copyDataFiles(packageDirs: string[], outDir: string): string[] {
  const copied: string[] = [];
  for (const dir of new Set(packageDirs)) {
    const data = path.join(dir, 'data');
    if (!existsSync(data)) continue;
    for (const entry of readdirSync(data, { withFileTypes: true })) {
      if (!entry.isFile()) continue;
      const target = path.join(outDir, 'data', entry.name);
      if (copied.includes(target)) throw new Error(`data file ${entry.name} is shipped by two packages`);
      mkdirSync(path.dirname(target), { recursive: true });
      cpSync(path.join(data, entry.name), target);
      copied.push(target);
    }
  }
  return copied;
}

/** The workspace's package folders, as pnpm-workspace.yaml lists them (only `dir/*` patterns). */
export function workspacePackageDirs(root = REPO_ROOT): string[] {
  const workspace = parseYaml(readFileSync(path.join(root, 'pnpm-workspace.yaml'), 'utf8')) as {
    packages: string[];
  };
  return workspace.packages.flatMap((pattern) => {
    if (!pattern.endsWith('/*')) throw new Error(`unsupported workspace pattern ${pattern}`);
    const parent = path.join(root, pattern.slice(0, -2));
    return readdirSync(parent, { withFileTypes: true })
      .filter((d) => d.isDirectory() && existsSync(path.join(parent, d.name, 'package.json')))
      .map((d) => path.join(parent, d.name));
  });
}

export function readJson<T = Record<string, unknown>>(file: string): T {
  return JSON.parse(readFileSync(file, 'utf8')) as T;
}

/** Whether the package in `packageDir` lists `name` in its dependencies (or optional or peer ones). */
function declaresForProduction(packageDir: string, name: string): boolean {
  const pkg = readJson<Record<string, Record<string, string> | undefined>>(
    path.join(packageDir, 'package.json'),
  );
  return [pkg.dependencies, pkg.optionalDependencies, pkg.peerDependencies].some((d) => d && name in d);
}

/**
 * Externals that the importing package does not declare in `dependencies` (or optional/peer ones): a
 * production install (`--prod`) would leave them out, so the bundle would fail at run time.
 */
export function undeclaredExternals(result: Pick<BuildResult, 'externals'>): string[] {
  const problems: string[] = [];
  for (const [name, importers] of result.externals) {
    for (const importer of importers) {
      if (!declaresForProduction(importer, name)) {
        const where = path.relative(REPO_ROOT, importer) || '.';
        problems.push(`${name} is imported by ${where} but is not in its dependencies`);
      }
    }
  }
  return problems.sort();
}
