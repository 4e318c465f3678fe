import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import ignore from '@balena/dockerignore';
import { tempDir } from '@platform/testkit';
import { DockerfileParser, type Healthcheck, type Instruction } from 'dockerfile-ast';
import { validate } from 'dockerfile-utils';
import { parse } from 'yaml';
import { buildService, SERVICES, workspacePackageDirs } from '../../scripts/build-services';
import { REPO_ROOT } from '../deploy/services';

interface Stage {
  name: string | null;
  image: string;
  instructions: Instruction[];
}

function readDockerfile() {
  const text = readFileSync(path.join(REPO_ROOT, 'Dockerfile'), 'utf8');
  const dockerfile = DockerfileParser.parse(text);
  const args = new Map<string, string>();
  for (const arg of dockerfile.getInitialARGs()) {
    const [name, value] = arg.getArgumentsContent()?.split('=') ?? [];
    if (name && value !== undefined) args.set(name, value);
  }
  const resolve = (s: string) => s.replace(/\$\{(\w+)\}/g, (_m, name: string) => args.get(name) ?? '');
  const stages: Stage[] = [];
  for (const instruction of dockerfile.getInstructions()) {
    if (instruction.getKeyword() === 'FROM') {
      const from = dockerfile
        .getFROMs()
        .find((f) => f.getRange().start.line === instruction.getRange().start.line)!;
      stages.push({
        name: from.getBuildStage(),
        image: resolve(from.getImageName() ?? ''),
        instructions: [],
      });
      const tag = from.getImageTag();
      if (tag) stages[stages.length - 1]!.image += `:${resolve(tag)}`;
    } else stages.at(-1)?.instructions.push(instruction);
  }
  return { text, args, stages };
}

/** `${NAME}` as the Dockerfile writes a variable reference */
const ref = (name: string) => `\${${name}}`;
const content = (i: Instruction) => (i.getArgumentsContent() ?? '').replace(/\s+/g, ' ').trim();
const byKeyword = (stage: Stage, keyword: string) =>
  stage.instructions.filter((i) => i.getKeyword() === keyword);
const envOf = (stage: Stage) =>
  Object.fromEntries(
    byKeyword(stage, 'ENV').flatMap((i) =>
      [...content(i).matchAll(/(\w+)=(\S+)/g)].map((m) => [m[1], m[2]] as [string, string]),
    ),
  );

describe('Dockerfile (every service: --build-arg SERVICE=<service> --build-arg PORT=<port>)', () => {
  const { text, args, stages } = readDockerfile();
  const stage = (name: string) => stages.find((s) => s.name === name)!;
  const runtime = stages.at(-1)!;

  it('has no errors or warnings for the Dockerfile language server', () => {
    const diagnostics = validate(text).map((d) => `${d.range.start.line + 1}: ${d.message}`);
    expect(diagnostics).toEqual([]);
  });

  it('builds in stages (deps, workspace, build) and runs on a slim Node 20 image', () => {
    expect(stages.map((s) => s.name)).toEqual(['deps', 'workspace', 'build', 'runtime']);
    expect(runtime.image).toMatch(/^node:20(\.\d+)*-(slim|alpine)$/);
    expect(args.get('NODE_VERSION')).toBe('20');
  });

  it('shares the download and workspace layers between services: SERVICE and PORT come after them', () => {
    for (const shared of ['deps', 'workspace']) {
      expect({ shared, args: byKeyword(stage(shared), 'ARG').map(content) }).toEqual({
        shared,
        args: shared === 'deps' ? ['PNPM_VERSION'] : [],
      });
    }
    expect(byKeyword(stage('workspace'), 'RUN').map(content).join(' ')).toContain(
      'pnpm install --frozen-lockfile',
    );
    const build = stage('build');
    expect(byKeyword(build, 'ARG').map(content)).toEqual(['SERVICE', 'PORT']);
    expect(byKeyword(build, 'RUN').map(content).join(' && ')).toContain(
      `pnpm build "${ref('SERVICE')}" --deploy /deploy`,
    );
    // in the runtime, the per-service layer (the deploy folder) comes after the shared ones
    const keywords = runtime.instructions.map((i) => i.getKeyword());
    expect(keywords.indexOf('COPY')).toBeGreaterThan(keywords.indexOf('RUN'));
  });

  it('ships only the deploy folder (bundle + the packages it loads): no sources, no dev dependencies', () => {
    const copies = byKeyword(runtime, 'COPY').map(content);
    expect(copies).toEqual(['/deploy ./']);
    expect(text).toMatch(/COPY --from=build \/deploy \.\//);
  });

  it('runs as a non-root user, in production mode, on PORT, with a /healthz health check', () => {
    const users = byKeyword(runtime, 'USER').map(content);
    expect(users).toHaveLength(1);
    expect(users[0]).toMatch(/^[1-9]\d*(:[1-9]\d*)?$/); // numeric, so runAsNonRoot can verify it
    const env = envOf(runtime);
    expect(env.NODE_ENV).toBe('production');
    expect(env.PORT).toBe(ref('PORT'));
    expect(byKeyword(runtime, 'ARG').map(content)).toEqual(['PORT']);
    expect(byKeyword(runtime, 'EXPOSE').map(content)).toEqual([ref('PORT')]);
    const healthchecks = byKeyword(runtime, 'HEALTHCHECK') as Healthcheck[];
    expect(healthchecks).toHaveLength(1);
    expect(healthchecks[0]!.getFlags().map((f) => f.getName())).toEqual(
      expect.arrayContaining(['interval', 'timeout', 'start-period', 'retries']),
    );
    const healthcheck = content(healthchecks[0]!);
    expect(healthcheck).toMatch(/^CMD \["node", "-e"/);
    expect(healthcheck).toContain("(process.env.ADMIN_PORT ?? 9464) + '/healthz'");
    expect(byKeyword(runtime, 'CMD').map(content)).toEqual(['["node", "dist/main.js"]']);
  });

  it('uses the pnpm and Node versions that CI uses', () => {
    const workflow = parse(readFileSync(path.join(REPO_ROOT, '.github/workflows/ci.yml'), 'utf8')) as {
      env: Record<string, string>;
    };
    expect(args.get('PNPM_VERSION')).toBe(workflow.env.PNPM_VERSION);
    expect(args.get('NODE_VERSION')).toBe(workflow.env.NODE_VERSION);
  });

  it('is the only Dockerfile: no per-service copies to drift apart', () => {
    for (const service of SERVICES) {
      expect({ service, own: existsSync(path.join(REPO_ROOT, 'services', service, 'Dockerfile')) }).toEqual({
        service,
        own: false,
      });
    }
  });
});

describe('.dockerignore', () => {
  const rules = ignore().add(readFileSync(path.join(REPO_ROOT, '.dockerignore'), 'utf8'));
  const ignored = (file: string) => rules.ignores(path.relative(REPO_ROOT, file));

  it('keeps every file the image build reads in the build context', async () => {
    const out = tempDir('deploy-context-');
    try {
      const needed = new Set<string>(
        ['package.json', 'pnpm-lock.yaml', 'pnpm-workspace.yaml', 'tsconfig.json', 'tsconfig.base.json']
          .map((f) => path.join(REPO_ROOT, f))
          .concat(
            ['build-services.ts', 'build/bundle.ts', 'build/deploy.ts'].map((f) =>
              path.join(REPO_ROOT, 'scripts', f),
            ),
          )
          .concat(workspacePackageDirs().map((dir) => path.join(dir, 'package.json')))
          // the data files the bundles ship in dist/data/
          .concat(
            workspacePackageDirs().flatMap((dir) =>
              existsSync(path.join(dir, 'data'))
                ? readdirSync(path.join(dir, 'data')).map((f) => path.join(dir, 'data', f))
                : [],
            ),
          ),
      );
      for (const service of SERVICES) {
        const result = await buildService({ service, outDir: path.join(out.dir, service), quiet: true });
        for (const input of result.inputs) needed.add(input);
      }
      const missing = [...needed]
        .filter((f) => !existsSync(f) || ignored(f))
        .map((f) => path.relative(REPO_ROOT, f));
      expect(missing).toEqual([]);
    } finally {
      out.remove();
    }
  });

  it('leaves out what must never reach an image or the build cache', () => {
    const excluded = [
      'node_modules/jest/package.json',
      'services/auth/node_modules/express/package.json',
      'services/auth/dist/main.js',
      '.git/HEAD',
      '.env',
      'data/auth/users.db',
      'services/auth/test/routes.test.ts',
      'services/auth/src/domain/keys.test.ts',
    ];
    expect(excluded.filter((f) => !rules.ignores(f))).toEqual([]);
  });
});
