/**
 * Production build: bundles each service's `src/main.ts` (and any worker-thread entry) with esbuild into
 * plain JavaScript that `node` runs without tsx.
 *
 *   pnpm build                          every service into services/<svc>/dist/
 *   pnpm build auth edge                only these
 *   pnpm build auth --out-dir /tmp/out  into /tmp/out/auth/ instead
 *   pnpm build auth --deploy /deploy    a self-contained folder: dist/, package.json and the service's
 *                                       production node_modules (flat, from the frozen lockfile);
 *                                       `cd /deploy && node dist/main.js` runs it. The Dockerfiles use this.
 *
 * The `@platform/*` workspace packages are TypeScript sources, so they are inlined. Third-party packages
 * stay external (`require('pino')`) and come from node_modules at run time: a bundle whose inlined code
 * imports a package needs that package where Node looks from `dist/`. pnpm's isolated layout keeps each
 * workspace package's dependencies in its own folder, so `--deploy` installs a hoisted (flat) copy of
 * exactly the service's production closure and then checks that every external the bundle needs resolves
 * there to the very version the workspace resolved at build time.
 */
import { spawnSync } from 'node:child_process';
import {
  cpSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { isBuiltin } from 'node:module';
import path from 'node:path';
import { build, type Metafile, type Plugin } from 'esbuild';
import { parse as parseYaml } from 'yaml';

export const REPO_ROOT = path.resolve(__dirname, '..');

/** Services with a production entry (`services/<name>/src/main.ts`), in build order. */
export const SERVICES = ['edge', 'auth', 'llm-quota', 'legacy-agent', 'standalone'] as const;
export type ServiceName = (typeof SERVICES)[number];

/** A worker-thread entry: `*-worker.ts` or `*.worker.ts` anywhere under a package's `src/`. */
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
function packageDirOf(file: string): string {
  let dir = path.dirname(file);
  while (!existsSync(path.join(dir, 'package.json'))) {
    const up = path.dirname(dir);
    if (up === dir) throw new Error(`no package.json above ${file}`);
    dir = up;
  }
  return dir;
}

/**
 * Inline `@platform/*` (workspace TypeScript), keep every other package external, and remember who
 * imports each external so the deploy step can check it resolves at run time.
 */
function workspaceInliner(externals: Map<string, Set<string>>): Plugin {
  return {
    name: 'platform-workspace-inliner',
    setup(b) {
      b.onResolve({ filter: /^[^./]/ }, (args) => {
        if (isBuiltin(args.path)) return { path: args.path, external: true };
        if (args.path.startsWith('@platform/')) return undefined;
        // `require.resolve(x)` only asks where x is (e.g. legacy-agent looks for tsx/cjs when run from
        // TypeScript, inside a try): not a dependency of the bundle
        if (args.kind === 'require-resolve') return { path: args.path, external: true };
        const name = packageNameOf(args.path);
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

function readJson<T = Record<string, unknown>>(file: string): T {
  return JSON.parse(readFileSync(file, 'utf8')) as T;
}

/**
 * Externals that the importing package does not declare in `dependencies` (or optional/peer ones): a
 * production install (`--prod`) would leave them out, so the bundle would fail at run time.
 */
export function undeclaredExternals(result: Pick<BuildResult, 'externals'>): string[] {
  const problems: string[] = [];
  for (const [name, importers] of result.externals) {
    for (const importer of importers) {
      const pkg = readJson<Record<string, Record<string, string> | undefined>>(
        path.join(importer, 'package.json'),
      );
      const declared = [pkg.dependencies, pkg.optionalDependencies, pkg.peerDependencies].some(
        (d) => d && name in d,
      );
      if (!declared) {
        const where = path.relative(REPO_ROOT, importer) || '.';
        problems.push(`${name} is imported by ${where} but is not in its dependencies`);
      }
    }
  }
  return problems.sort();
}

/** Where Node would find `name` from `fromDir` (node_modules lookup upwards), as its package folder. */
export function locatePackage(name: string, fromDir: string): string | undefined {
  let dir = fromDir;
  for (;;) {
    const candidate = path.join(dir, 'node_modules', name, 'package.json');
    if (existsSync(candidate)) return path.dirname(candidate);
    const up = path.dirname(dir);
    if (up === dir) return undefined;
    dir = up;
  }
}

/**
 * Every external of the bundle must resolve from `runDir` to the version that its importers resolve
 * in the workspace. Returns the problems (empty when all is well).
 */
export function checkExternals(result: BuildResult, runDir: string): string[] {
  const problems: string[] = [];
  for (const [name, importers] of [...result.externals].sort(([a], [b]) => a.localeCompare(b))) {
    const atRun = locatePackage(name, runDir);
    const runVersion = atRun && readJson<{ version: string }>(path.join(atRun, 'package.json')).version;
    for (const importer of importers) {
      const inWorkspace = locatePackage(name, importer);
      const where = path.relative(REPO_ROOT, importer) || '.';
      if (!inWorkspace) {
        problems.push(`${name}: imported by ${where} but not installed for it (a missing dependency?)`);
        continue;
      }
      const version = readJson<{ version: string }>(path.join(inWorkspace, 'package.json')).version;
      if (!runVersion) problems.push(`${name}@${version} (imported by ${where}) is missing at run time`);
      else if (runVersion !== version) {
        problems.push(`${name}: ${where} was built against ${version} but ${runVersion} would be loaded`);
      }
    }
  }
  return problems;
}

function run(command: string, args: string[], cwd: string, quiet: boolean) {
  const child = spawnSync(command, args, { cwd, stdio: quiet ? 'pipe' : 'inherit', encoding: 'utf8' });
  if (child.error) throw new Error(`${command} ${args.join(' ')}: ${child.error.message}`);
  if (child.status !== 0) {
    throw new Error(
      `${command} ${args.join(' ')} exited with ${child.status}\n${child.stdout ?? ''}${child.stderr ?? ''}`,
    );
  }
}

export interface DeployOptions {
  service: string;
  /** the folder to create: dist/, package.json, node_modules/ */
  dir: string;
  quiet?: boolean;
}

/**
 * A self-contained, runnable folder for one service: the bundle in `dir/dist`, and in `dir/node_modules`
 * the production dependencies of the service and of the workspace packages it inlines, installed by
 * pnpm from the frozen lockfile with the hoisted (npm-style, flat) layout so that `dist/main.js` finds
 * them. Nothing of the workspace's own packages is installed: they are inside the bundle.
 */
export async function deployService(options: DeployOptions): Promise<BuildResult> {
  const dir = path.resolve(options.dir);
  const quiet = options.quiet ?? false;
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const result = await buildService({ service: options.service, outDir: path.join(dir, 'dist'), quiet });

  // pnpm installs one workspace project's closure from the manifests and the lockfile alone.
  const staging = path.join(dir, '.install');
  for (const file of ['package.json', 'pnpm-lock.yaml', 'pnpm-workspace.yaml', '.npmrc']) {
    if (existsSync(path.join(REPO_ROOT, file))) cpSync(path.join(REPO_ROOT, file), path.join(staging, file));
  }
  for (const pkgDir of workspacePackageDirs()) {
    const rel = path.relative(REPO_ROOT, pkgDir);
    cpSync(path.join(pkgDir, 'package.json'), path.join(staging, rel, 'package.json'));
  }
  const pkg = readJson<{ name: string; version: string }>(
    path.join(REPO_ROOT, 'services', options.service, 'package.json'),
  );
  run(
    'pnpm',
    [
      'install',
      '--prod',
      '--frozen-lockfile',
      '--prefer-offline',
      '--config.node-linker=hoisted',
      `--filter=${pkg.name}...`,
    ],
    staging,
    quiet,
  );
  renameSync(path.join(staging, 'node_modules'), path.join(dir, 'node_modules'));
  rmSync(staging, { recursive: true, force: true });
  writeFileSync(
    path.join(dir, 'package.json'),
    `${JSON.stringify({ name: pkg.name, version: pkg.version, private: true, main: 'dist/main.js' }, null, 2)}\n`,
  );

  const problems = checkExternals(result, path.join(dir, 'dist'));
  if (problems.length > 0) {
    throw new Error(
      `the deployed ${options.service} would not load its dependencies:\n  ${problems.join('\n  ')}`,
    );
  }
  return result;
}

function parseArgs(argv: string[]) {
  const services: string[] = [];
  let outDir: string | undefined;
  let deploy: string | undefined;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === '--out-dir') outDir = argv[++i];
    else if (arg === '--deploy') deploy = argv[++i];
    else if (arg === '--help' || arg === '-h') {
      console.log('usage: pnpm build [service...] [--out-dir DIR | --deploy DIR]');
      process.exit(0);
    } else if (arg.startsWith('-')) throw new Error(`unknown option ${arg}`);
    else services.push(arg);
  }
  if (deploy && services.length !== 1) throw new Error('--deploy takes exactly one service');
  if (outDir === '' || deploy === '') throw new Error('--out-dir and --deploy need a folder');
  return { services: services.length > 0 ? services : [...SERVICES], outDir, deploy };
}

async function main() {
  const { services, outDir, deploy } = parseArgs(process.argv.slice(2));
  for (const service of services) {
    console.log(`${service}:`);
    if (deploy) await deployService({ service, dir: deploy });
    else await buildService({ service, outDir: outDir && path.join(outDir, service) });
  }
}

if (require.main === module) {
  main().catch((err: Error) => {
    console.error(`build failed: ${err.message}`);
    process.exit(1);
  });
}
