import { readFileSync } from 'node:fs';
import path from 'node:path';
import { validateWorkflow } from '@action-validator/core';
import { parse } from 'yaml';
import { REPO_ROOT } from '../deploy/services';

interface Step {
  name?: string;
  uses?: string;
  run?: string;
  with?: Record<string, string>;
  env?: Record<string, string>;
}
interface Job {
  'runs-on': string;
  services?: Record<string, { image: string; ports?: string[]; options?: string }>;
  steps: Step[];
  needs?: string[];
}
interface Workflow {
  on: { push?: unknown; pull_request?: unknown };
  permissions?: Record<string, string>;
  env: Record<string, string>;
  jobs: Record<string, Job>;
}

const FILE = path.join(REPO_ROOT, '.github/workflows/ci.yml');
const source = readFileSync(FILE, 'utf8');
const workflow = parse(source) as Workflow;
const rootPackage = JSON.parse(readFileSync(path.join(REPO_ROOT, 'package.json'), 'utf8')) as {
  scripts: Record<string, string>;
};

/** The step whose `run` contains `command`, in any job. */
const stepRunning = (command: string) =>
  Object.entries(workflow.jobs).flatMap(([job, j]) =>
    j.steps.filter((s) => s.run?.includes(command)).map((step) => ({ job, step })),
  );

describe('.github/workflows/ci.yml', () => {
  it('is a valid GitHub Actions workflow (schema check by action-validator)', () => {
    const { errors } = validateWorkflow(source);
    expect(errors).toEqual([]);
  });

  it('runs on every push to main and on pull requests, with read-only permissions', () => {
    expect(workflow.on.push).toBeDefined();
    expect(workflow.on.pull_request).toBeDefined();
    expect(workflow.permissions).toEqual({ contents: 'read' });
  });

  it('checks out, sets up pnpm and Node 20, and installs from the frozen lockfile in every job that builds', () => {
    for (const [name, job] of Object.entries(workflow.jobs)) {
      const uses = job.steps.map((s) => s.uses?.split('@')[0]);
      expect({ name, checkout: uses[0] }).toEqual({ name, checkout: 'actions/checkout' });
      if (!job.steps.some((s) => s.run?.includes('pnpm '))) continue;
      expect(uses).toEqual(expect.arrayContaining(['pnpm/action-setup', 'actions/setup-node']));
      const nodeVersion = job.steps.find((s) => s.uses?.startsWith('actions/setup-node'))?.with?.[
        'node-version'
      ];
      // biome-ignore lint/suspicious/noTemplateCurlyInString: a GitHub Actions expression, not JavaScript
      expect(nodeVersion).toBe('${{ env.NODE_VERSION }}');
      expect(job.steps.some((s) => s.run === 'pnpm install --frozen-lockfile')).toBe(true);
    }
    expect(workflow.env.NODE_VERSION).toBe('20');
  });

  it('lints, type-checks and runs every test with NATS required (nats-server installed)', () => {
    const [lint] = stepRunning('pnpm lint');
    const [typecheck] = stepRunning('pnpm typecheck');
    const [tests] = stepRunning('pnpm test');
    expect(lint?.job).toBe('test');
    expect(typecheck?.job).toBe('test');
    expect(tests?.step.env?.PLATFORM_REQUIRE_NATS).toBe('1');
    const install = stepRunning('apt-get install')[0];
    expect(install?.job).toBe('test');
    expect(install?.step.run).toContain('nats-server');
    // the scripts it calls exist
    for (const script of ['lint', 'typecheck', 'test', 'build'])
      expect(rootPackage.scripts[script]).toBeDefined();
  });

  it('runs the store contract suite against a MongoDB service container', () => {
    const job = workflow.jobs.test!;
    expect(job.services?.mongo?.image).toBe('mongo:7');
    expect(job.services?.mongo?.ports).toContain('27017:27017');
    expect(job.services?.mongo?.options).toContain('--health-cmd');
    const [contract] = stepRunning('jest packages/store');
    expect(contract?.job).toBe('test');
    expect(contract?.step.env?.MONGO_URL).toBe('mongodb://localhost:27017');
  });

  it('builds the services, renders the manifests, and starts the platform from docker-compose.yml', () => {
    expect(stepRunning('pnpm build')[0]?.job).toBe('build');
    expect(stepRunning('kubectl kustomize deploy/overlays/example')).toHaveLength(1);
    expect(stepRunning('docker compose config')).toHaveLength(1);
    const [up] = stepRunning('docker compose up');
    expect(up?.step.run).toContain('--wait');
    expect(stepRunning('curl --fail')).toHaveLength(1);
    // readiness is on the admin port, inside the compose network only
    expect(stepRunning('9464/readyz')).toHaveLength(1);
  });
});
