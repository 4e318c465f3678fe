import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdirSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { freePort, tempDir, waitFor } from '@platform/testkit';
import {
  type BuildResult,
  buildService,
  bundleEntry,
  checkExternals,
  deployService,
  findWorkerEntries,
  INLINED_PACKAGES,
  productionClosure,
  SERVICES,
  undeclaredExternals,
} from '../../scripts/build-services';
import { REPO_ROOT, TEST_INTERNAL_SECRET } from '../deploy/services';

/** A bundled service started with plain node from its deploy folder, with nothing inherited but PATH. */
interface Running {
  url: string;
  /** the admin listener (/healthz, /readyz, /metrics) */
  admin: string;
  child: ChildProcess;
  output: () => string;
}

async function startBundle(dir: string, env: Record<string, string>): Promise<Running> {
  const port = await freePort();
  const adminPort = await freePort();
  const child = spawn(process.execPath, ['dist/main.js'], {
    cwd: dir,
    // no NODE_PATH, no NODE_OPTIONS, no tsx: only what the image has
    env: {
      PATH: process.env.PATH ?? '',
      PORT: String(port),
      ADMIN_PORT: String(adminPort),
      LOG_LEVEL: 'warn',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout?.on('data', (chunk) => {
    output += chunk;
  });
  child.stderr?.on('data', (chunk) => {
    output += chunk;
  });
  return {
    url: `http://127.0.0.1:${port}`,
    admin: `http://127.0.0.1:${adminPort}`,
    child,
    output: () => output,
  };
}

const status = async (url: string) => (await fetch(url)).status;

async function untilAnswers(running: Running, route: string, expected = 200) {
  await waitFor(
    async () => {
      if (running.child.exitCode !== null) {
        throw new Error(`exited with ${running.child.exitCode}: ${running.output()}`);
      }
      return (await status(`${running.admin}${route}`)) === expected;
    },
    { timeoutMs: 15_000, what: `${route} = ${expected}` },
  );
}

async function stop(running: Running): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
  if (running.child.exitCode !== null) return { code: running.child.exitCode, signal: null };
  const exited = once(running.child, 'exit') as Promise<[number | null, NodeJS.Signals | null]>;
  running.child.kill('SIGTERM');
  const [code, signal] = await exited;
  return { code, signal };
}

describe('production build (pnpm build)', () => {
  const work = tempDir('deploy-build-');
  const running: Running[] = [];
  let auth!: BuildResult;
  let edge!: BuildResult;

  beforeAll(async () => {
    [auth, edge] = await Promise.all(
      ['auth', 'edge'].map((service) =>
        deployService({ service, dir: path.join(work.dir, service), quiet: true }),
      ),
    );
  }, 60_000);

  afterAll(async () => {
    await Promise.all(running.map((r) => stop(r)));
    work.remove();
  });

  it('inlines the @platform workspace packages and keeps third-party packages external', () => {
    for (const result of [auth, edge]) {
      const bundle = readFileSync(path.join(result.outDir, 'main.js'), 'utf8');
      expect(bundle).not.toMatch(/require\(["']@platform\//);
      expect(bundle).toMatch(/require\(["']express["']\)/);
      expect([...result.externals.keys()]).toEqual(expect.arrayContaining(['express', 'pino', 'zod']));
      expect(result.inputs.some((f) => f.startsWith(path.join(REPO_ROOT, 'packages', 'kernel', 'src')))).toBe(
        true,
      );
      // source maps point back at the TypeScript
      const map = JSON.parse(readFileSync(path.join(result.outDir, 'main.js.map'), 'utf8')) as {
        sources: string[];
      };
      expect(map.sources.some((s) => s.includes('packages/kernel/src/'))).toBe(true);
    }
    expect(auth.inputs).toContain(path.join(REPO_ROOT, 'services', 'auth', 'src', 'main.ts'));
  });

  it('installs only production dependencies, flat, where the bundle finds them', () => {
    const modules = path.join(work.dir, 'auth', 'node_modules');
    expect(existsSync(path.join(modules, 'express', 'package.json'))).toBe(true);
    expect(existsSync(path.join(modules, 'pino', 'package.json'))).toBe(true);
    for (const dev of ['jest', 'typescript', 'esbuild', 'tsx', '@biomejs', '@platform']) {
      expect({ dev, installed: existsSync(path.join(modules, dev)) }).toEqual({ dev, installed: false });
    }
    // and the checks behind it refuse a folder where they are missing, and an import nobody declared
    const problems = checkExternals(auth, path.join(work.dir, 'nowhere'));
    expect(problems.some((p) => p.startsWith('express@') && p.includes('missing at run time'))).toBe(true);
    const kernel = path.join(REPO_ROOT, 'packages', 'kernel');
    expect(undeclaredExternals({ externals: new Map([['jest', new Set([kernel])]]) })).toEqual([
      'jest is imported by packages/kernel but is not in its dependencies',
    ]);
  });

  it("holds exactly the packages each bundle loads, not the rest of the workspace's production dependencies", () => {
    for (const [service, result] of [
      ['auth', auth],
      ['edge', edge],
    ] as const) {
      const modules = path.join(work.dir, service, 'node_modules');
      const linked = readdirSync(modules)
        .filter((n) => !n.startsWith('.'))
        .flatMap((n) =>
          n.startsWith('@') ? readdirSync(path.join(modules, n)).map((m) => `${n}/${m}`) : [n],
        )
        .sort();
      expect({ service, linked }).toEqual({ service, linked: [...result.externals.keys()].sort() });
      // the legacy agent's word vectors (a dependency of the workspace, not of these services) stay out
      const store = readdirSync(path.join(modules, '.pnpm'));
      expect(store.filter((entry) => entry.startsWith('wink-'))).toEqual([]);
    }
  });

  it('counts a package that code require.resolve()s as a dependency when the package declares it', async () => {
    // as the legacy agent's NLU finds its word-vector file; tsx it looks for only when run from TypeScript
    const pkg = path.join(work.dir, 'resolve-fixture');
    mkdirSync(path.join(pkg, 'src'), { recursive: true });
    writeFileSync(
      path.join(pkg, 'package.json'),
      '{ "name": "resolve-fixture", "private": true, "dependencies": { "yaml": "*" } }\n',
    );
    writeFileSync(
      path.join(pkg, 'src', 'main.ts'),
      [
        "console.log(require.resolve('yaml/package.json'));",
        "try { require.resolve('tsx/cjs'); } catch { /* not installed */ }",
      ].join('\n'),
    );
    const result = await bundleEntry({
      entry: path.join(pkg, 'src', 'main.ts'),
      outDir: path.join(pkg, 'dist'),
      quiet: true,
    });
    expect([...result.externals.keys()]).toEqual(['yaml']);
  });

  it("ships the bundled packages' data/ files in dist/data/, where the inlined code finds them", async () => {
    const pkg = path.join(work.dir, 'data-fixture');
    mkdirSync(path.join(pkg, 'src'), { recursive: true });
    mkdirSync(path.join(pkg, 'data'), { recursive: true });
    writeFileSync(path.join(pkg, 'package.json'), '{ "name": "data-fixture", "private": true }\n');
    writeFileSync(path.join(pkg, 'data', 'table.txt'), 'forty-two');
    writeFileSync(
      path.join(pkg, 'src', 'main.ts'),
      "import fs from 'node:fs';\nimport path from 'node:path';\nconsole.log(fs.readFileSync(path.join(__dirname, 'data', 'table.txt'), 'utf8'));\n",
    );
    await bundleEntry({
      entry: path.join(pkg, 'src', 'main.ts'),
      outDir: path.join(pkg, 'dist'),
      quiet: true,
    });
    expect(await runToEnd(pkg)).toEqual({ code: 0, output: 'forty-two' });
  });

  it('refuses a layout where two inlined packages need different versions of one package', () => {
    const root = path.join(work.dir, 'conflict');
    for (const [importer, entry] of [
      ['packages/one', 'left-pad@1.0.0'],
      ['packages/two', 'left-pad@2.0.0'],
    ] as const) {
      const pkg = path.join(root, 'node_modules', '.pnpm', entry, 'node_modules', 'left-pad');
      mkdirSync(pkg, { recursive: true });
      writeFileSync(path.join(pkg, 'package.json'), `{"name":"left-pad","version":"${entry.split('@')[1]}"}`);
      mkdirSync(path.join(root, importer, 'node_modules'), { recursive: true });
      symlinkSync(pkg, path.join(root, importer, 'node_modules', 'left-pad'));
    }
    const externals = new Map([
      ['left-pad', new Set([path.join(REPO_ROOT, 'packages/one'), path.join(REPO_ROOT, 'packages/two')])],
    ]);
    expect(() => productionClosure({ externals }, root)).toThrow(
      /left-pad: needed both as left-pad@1\.0\.0 and as left-pad@2\.0\.0/,
    );
  });

  it('bundles every service, each importing only packages its sources declare as production dependencies', async () => {
    for (const service of SERVICES) {
      const result = await buildService({
        service,
        outDir: path.join(work.dir, 'all', service),
        quiet: true,
      });
      expect(undeclaredExternals(result)).toEqual([]);
      expect(existsSync(path.join(result.outDir, 'main.js'))).toBe(true);
    }
  });

  it('runs auth with plain node: /healthz and /readyz answer 200, SIGTERM exits 0', async () => {
    const dataDir = path.join(work.dir, 'auth-data');
    const service = await startBundle(path.join(work.dir, 'auth'), {
      PLATFORM_INTERNAL_SECRET: TEST_INTERNAL_SECRET,
      DATA_DIR: dataDir,
    });
    running.push(service);
    await untilAnswers(service, '/readyz');
    expect(await status(`${service.admin}/healthz`)).toBe(200);
    // Operational routes are on the admin port only.
    expect(await status(`${service.url}/healthz`)).toBe(404);
    expect(existsSync(path.join(dataDir, 'auth'))).toBe(true);
    expect(await stop(service)).toEqual({ code: 0, signal: null });
  });

  it('runs the edge with plain node in front of the bundled auth; SIGTERM exits 0', async () => {
    const authService = await startBundle(path.join(work.dir, 'auth'), {
      PLATFORM_INTERNAL_SECRET: TEST_INTERNAL_SECRET,
      DATA_DIR: path.join(work.dir, 'auth-data-2'),
    });
    running.push(authService);
    await untilAnswers(authService, '/readyz');
    const edgeService = await startBundle(path.join(work.dir, 'edge'), {
      PLATFORM_INTERNAL_SECRET: TEST_INTERNAL_SECRET,
      AUTH_URL: authService.url,
      LLM_QUOTA_URL: 'http://127.0.0.1:9',
      LEGACY_AGENT_URL: 'http://127.0.0.1:9',
    });
    running.push(edgeService);
    await untilAnswers(edgeService, '/healthz');
    // ready once it has auth's signing keys
    await untilAnswers(edgeService, '/readyz');
    expect(await stop(edgeService)).toEqual({ code: 0, signal: null });
    expect(await stop(authService)).toEqual({ code: 0, signal: null });
  });

  it('inlines the tokenizer into llm-gateway instead of shipping it whole; the gateway runs with plain node', async () => {
    const dir = path.join(work.dir, 'llm-gateway');
    const gateway = await deployService({ service: 'llm-gateway', dir, quiet: true });
    // gpt-tokenizer is 28 MB installed (every encoding, three builds); the bundle carries the one it uses
    expect(INLINED_PACKAGES.has('gpt-tokenizer')).toBe(true);
    expect(gateway.externals.has('gpt-tokenizer')).toBe(false);
    expect(existsSync(path.join(dir, 'node_modules', 'gpt-tokenizer'))).toBe(false);
    expect(readdirSync(path.join(dir, 'node_modules', '.pnpm')).filter((e) => e.startsWith('gpt-'))).toEqual(
      [],
    );
    expect(readFileSync(path.join(dir, 'dist', 'main.js'), 'utf8')).not.toMatch(/require\(["']gpt-tokenizer/);
    const service = await startBundle(dir, {
      PLATFORM_INTERNAL_SECRET: TEST_INTERNAL_SECRET,
      DATA_DIR: path.join(work.dir, 'llm-gateway-data'),
      LLM_QUOTA_URL: 'http://127.0.0.1:9',
    });
    running.push(service);
    await untilAnswers(service, '/readyz');
    expect(await stop(service)).toEqual({ code: 0, signal: null });
  }, 60_000);
});

describe('worker-thread entries', () => {
  const work = tempDir('deploy-worker-');
  afterAll(() => work.remove());

  it('are found by name (*-worker.ts, *.worker.ts), bundled beside main.js, and run from compiled JS', async () => {
    // A package shaped like a service: main spawns a worker by a path relative to its own file.
    const pkg = path.join(work.dir, 'fixture');
    mkdirSync(path.join(pkg, 'src', 'nlu'), { recursive: true });
    writeFileSync(path.join(pkg, 'package.json'), '{ "name": "fixture", "private": true }\n');
    // the spawning code sits beside its worker, as a service's src/nlu would have it
    writeFileSync(
      path.join(pkg, 'src', 'nlu', 'pool.ts'),
      `import path from 'node:path';
import { Worker } from 'node:worker_threads';
/** under tsx the .ts beside this file; bundled, the .js beside main.js (where __dirname now points) */
export const squareInWorker = (n: number) =>
  new Promise<number>((resolve, reject) => {
    const worker = new Worker(path.join(__dirname, \`square-worker\${path.extname(__filename)}\`), { workerData: n });
    worker.once('message', resolve);
    worker.once('error', reject);
  });
`,
    );
    writeFileSync(
      path.join(pkg, 'src', 'main.ts'),
      "import { squareInWorker } from './nlu/pool';\nvoid squareInWorker(7).then((r) => console.log('square: ' + r));\n",
    );
    writeFileSync(path.join(pkg, 'src', 'nlu', 'square.ts'), 'export const square = (n: number) => n * n;\n');
    writeFileSync(
      path.join(pkg, 'src', 'nlu', 'square-worker.ts'),
      [
        "import { parentPort, workerData } from 'node:worker_threads';",
        "import { square } from './square';",
        'parentPort?.postMessage(square(workerData as number));',
      ].join('\n'),
    );
    writeFileSync(path.join(pkg, 'src', 'nlu', 'square.test.ts'), '');

    expect(findWorkerEntries([pkg])).toEqual([path.join(pkg, 'src', 'nlu', 'square-worker.ts')]);
    const result = await bundleEntry({
      entry: path.join(pkg, 'src', 'main.ts'),
      outDir: path.join(pkg, 'dist'),
      quiet: true,
    });
    expect(Object.values(result.workers)).toEqual([path.join(pkg, 'dist', 'square-worker.js')]);

    expect(await runToEnd(pkg)).toEqual({ code: 0, output: 'square: 49' });
  });

  it("of legacy-agent's NLU: training in a worker thread works from the bundle", async () => {
    const pkg = path.join(work.dir, 'nlu-fixture');
    const nlu = path.join(REPO_ROOT, 'packages', 'nlu', 'src');
    mkdirSync(path.join(pkg, 'src'), { recursive: true });
    writeFileSync(path.join(pkg, 'package.json'), '{ "name": "nlu-fixture", "private": true }\n');
    // As in a deploy folder, the service's production dependencies sit beside dist/, and the word-vector
    // table in dist/data/: a worker that cannot find it warns, and the exact-output check below fails.
    symlinkSync(
      path.join(REPO_ROOT, 'services', 'legacy-agent', 'node_modules'),
      path.join(pkg, 'node_modules'),
    );
    writeFileSync(
      path.join(pkg, 'src', 'main.ts'),
      [
        `import { trainModelInWorker } from ${JSON.stringify(nlu)};`,
        `import { travelAssistant } from ${JSON.stringify(path.join(nlu, 'example-assistants'))};`,
        'trainModelInWorker(travelAssistant()).then(',
        "  (model) => console.log(typeof model.toJSON === 'function' ? 'trained' : 'no model'),",
        '  (err) => { console.error(err); process.exit(1); },',
        ');',
      ].join('\n'),
    );
    const result = await bundleEntry({
      entry: path.join(pkg, 'src', 'main.ts'),
      outDir: path.join(pkg, 'dist'),
      quiet: true,
    });
    expect(result.workers).toEqual({
      [path.join(nlu, 'train-worker.ts')]: path.join(pkg, 'dist', 'train-worker.js'),
    });
    expect(await runToEnd(pkg)).toEqual({ code: 0, output: 'trained' });
  });
});

/** Runs `node dist/main.js` in `dir` with nothing inherited but PATH; its exit code and output. */
async function runToEnd(dir: string): Promise<{ code: number; output: string }> {
  const child = spawn(process.execPath, ['dist/main.js'], {
    cwd: dir,
    env: { PATH: process.env.PATH ?? '' },
  });
  let output = '';
  child.stdout.on('data', (chunk) => {
    output += chunk;
  });
  child.stderr.on('data', (chunk) => {
    output += chunk;
  });
  const [code] = (await once(child, 'exit')) as [number];
  return { code, output: output.trim() };
}
