/**
 * The deploy half of the production build: a self-contained, runnable folder for one service, holding
 * the bundle and exactly the third-party packages the bundle loads, at the lockfile's versions.
 *
 *   <dir>/dist/main.js                  the bundle (see bundle.ts), worker entries, source maps
 *   <dir>/node_modules/<name>           one link per package the bundle requires ...
 *   <dir>/node_modules/.pnpm/<entry>/   ... into pnpm's virtual store, cut down to what those links reach
 *   <dir>/package.json                  name, version, main
 *
 * pnpm installs the service's production closure from copies of the manifests and the frozen lockfile,
 * in its isolated layout (the only layout in which `--filter` limits what is installed: a hoisted install
 * lays out every workspace project's dependencies, and so put the legacy agent's word vectors into the
 * edge). Then only the virtual-store entries reachable from the bundle's externals are kept: a package
 * that a workspace package declares but whose importing code the bundle left out is not shipped.
 */
import { spawnSync } from 'node:child_process';
import {
  cpSync,
  existsSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readlinkSync,
  realpathSync,
  renameSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import path from 'node:path';
import { type BuildResult, buildService, REPO_ROOT, readJson, workspacePackageDirs } from './bundle';

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

const versionAt = (packageDir: string) =>
  readJson<{ version: string }>(path.join(packageDir, 'package.json')).version;

/**
 * Every external of the bundle must resolve from `runDir` to the version that its importers resolve
 * in the workspace. Returns the problems (empty when all is well).
 */
export function checkExternals(result: BuildResult, runDir: string): string[] {
  const problems: string[] = [];
  for (const [name, importers] of [...result.externals].sort(([a], [b]) => a.localeCompare(b))) {
    const atRun = locatePackage(name, runDir);
    const runVersion = atRun && versionAt(atRun);
    for (const importer of importers) {
      const inWorkspace = locatePackage(name, importer);
      const where = path.relative(REPO_ROOT, importer) || '.';
      if (!inWorkspace) {
        problems.push(`${name}: imported by ${where} but not installed for it (a missing dependency?)`);
        continue;
      }
      const version = versionAt(inWorkspace);
      if (!runVersion) problems.push(`${name}@${version} (imported by ${where}) is missing at run time`);
      else if (runVersion !== version) {
        problems.push(`${name}: ${where} was built against ${version} but ${runVersion} would be loaded`);
      }
    }
  }
  return problems;
}

/** The names in a node_modules folder, scoped ones as `@scope/name`; dot-folders left out. */
function packagesIn(modulesDir: string): string[] {
  if (!existsSync(modulesDir)) return [];
  return readdirSync(modulesDir)
    .filter((n) => !n.startsWith('.'))
    .flatMap((n) =>
      n.startsWith('@') ? readdirSync(path.join(modulesDir, n)).map((s) => `${n}/${s}`) : [n],
    );
}

/** The virtual-store entry (`.pnpm/<entry>/node_modules/<name>`) a package folder really lives in. */
function storeEntryOf(packageDir: string, virtualStore: string): string | undefined {
  const rel = path.relative(virtualStore, realpathSync(packageDir));
  return rel.startsWith('..') || path.isAbsolute(rel) ? undefined : rel.split(path.sep)[0];
}

export interface ProductionClosure {
  /** package name -> virtual-store entry, for the links in node_modules/ */
  links: Map<string, string>;
  /** every virtual-store entry the links reach through dependencies */
  entries: Set<string>;
}

/**
 * From a filtered isolated install in `installRoot` (a copy of the workspace's manifests), the store
 * entries that the bundle's externals need: each external as its importer resolves it there, and their
 * dependencies, transitively. Throws when two importers need different versions of one package (one
 * top-level link cannot serve both) or when an external is not installed for its importer.
 */
export function productionClosure(
  result: Pick<BuildResult, 'externals'>,
  installRoot: string,
): ProductionClosure {
  const virtualStore = path.join(installRoot, 'node_modules', '.pnpm');
  const links = new Map<string, string>();
  const problems: string[] = [];
  for (const [name, importers] of [...result.externals].sort(([a], [b]) => a.localeCompare(b))) {
    for (const importer of importers) {
      const where = path.relative(REPO_ROOT, importer) || '.';
      const found = locatePackage(name, path.join(installRoot, where));
      const entry = found && storeEntryOf(found, virtualStore);
      if (!entry) {
        problems.push(`${name}: imported by ${where} but not among its installed production dependencies`);
        continue;
      }
      const other = links.get(name);
      if (other && other !== entry) problems.push(`${name}: needed both as ${other} and as ${entry}`);
      links.set(name, entry);
    }
  }
  if (problems.length > 0)
    throw new Error(`cannot lay out the production dependencies:\n  ${problems.join('\n  ')}`);
  const entries = new Set<string>();
  const queue = [...links.values()];
  for (let entry = queue.pop(); entry !== undefined; entry = queue.pop()) {
    if (entries.has(entry)) continue;
    entries.add(entry);
    const modules = path.join(virtualStore, entry, 'node_modules');
    for (const dep of packagesIn(modules)) {
      const next = storeEntryOf(path.join(modules, dep), virtualStore);
      if (next && !entries.has(next)) queue.push(next);
    }
  }
  return { links, entries };
}

/**
 * Moves the closure's store entries from `installRoot` into `modulesDir/.pnpm` and links each needed
 * package at `modulesDir/<name>`. pnpm's hidden hoisting folder (`.pnpm/node_modules`, where a package
 * that uses an undeclared dependency finds it) keeps the links that point into the kept entries.
 */
function layOut(closure: ProductionClosure, installRoot: string, modulesDir: string) {
  const virtualStore = path.join(installRoot, 'node_modules', '.pnpm');
  const targetStore = path.join(modulesDir, '.pnpm');
  mkdirSync(targetStore, { recursive: true });
  const hoisted = path.join(virtualStore, 'node_modules');
  const keptHoisted = packagesIn(hoisted).filter((name) => {
    const link = path.join(hoisted, name);
    if (!lstatSync(link).isSymbolicLink()) return false;
    const entry = existsSync(link) ? storeEntryOf(link, virtualStore) : undefined;
    return entry !== undefined && closure.entries.has(entry);
  });
  for (const entry of closure.entries)
    renameSync(path.join(virtualStore, entry), path.join(targetStore, entry));
  for (const name of keptHoisted) {
    const link = path.join(targetStore, 'node_modules', name);
    mkdirSync(path.dirname(link), { recursive: true });
    symlinkSync(readlinkSync(path.join(hoisted, name)), link);
  }
  for (const [name, entry] of closure.links) {
    const link = path.join(modulesDir, name);
    mkdirSync(path.dirname(link), { recursive: true });
    symlinkSync(path.relative(path.dirname(link), path.join(targetStore, entry, 'node_modules', name)), link);
  }
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
 * A self-contained, runnable folder for one service (see the top of this file): `cd <dir> && node
 * dist/main.js` runs it. Nothing of the workspace's own packages is installed: they are in the bundle.
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
      '--config.node-linker=isolated',
      `--filter=${pkg.name}...`,
    ],
    staging,
    quiet,
  );
  layOut(productionClosure(result, staging), staging, path.join(dir, 'node_modules'));
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
