/**
 * The production images, built from this checkout and run as docker-compose.yml deploys them: one
 * container per service, from the compose file itself (environment, networks, read-only root file
 * system, tmpfs, dropped capabilities, no-new-privileges, init, volumes, health checks), with
 * deploy/compose/embedded-store.yml in place of MongoDB (no MongoDB image can be had here) and NATS from
 * Debian's package in an image of its own. Then the platform is used through the containerised edge.
 *
 * Run: pnpm test:containers (test/containers/run.sh; not part of pnpm test). KEEP_CONTAINERS=1 leaves
 * the containers, networks and volumes for inspection.
 */
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { freePort, waitFor } from '@platform/testkit';
import { callJson, type JsonReply } from '../harness';
import {
  buildArgs,
  type ComposeProject,
  durationMs,
  imageOf,
  loadCompose,
  objectName,
  runArgs,
  startOrder,
} from './compose';
import { inspect, podman } from './podman';

const ROOT = path.resolve(__dirname, '..', '..');
/**
 * This run's own compose project name and image tag, so that two runs on one machine (two checkouts in CI)
 * neither remove each other's containers nor start each other's images.
 */
const RUN = `aip-ct-${process.pid}`;
const COMPOSE_FILES = ['docker-compose.yml', 'deploy/compose/embedded-store.yml'];
/** NATS from Debian's nats-server package (test/containers/nats.Dockerfile) instead of nats:2.10-alpine */
const NATS_IMAGE = 'localhost/ai-platform-test/nats:debian';
/** Compose's default stop_grace_period */
const DEFAULT_GRACE_MS = 10_000;
/** Largest /app per image, in MB (issue 15). */
const APP_LIMIT_MB: Record<string, number> = { 'legacy-agent': 100 };
const DEFAULT_APP_LIMIT_MB = 60;
/** The one-process platform's image: not in compose, built from the same Dockerfile. */
const STANDALONE = 'standalone';
const STANDALONE_IMAGE = `localhost/ai-platform/standalone:${RUN}`;

function composeProject(edgePort: number, secret: string): ComposeProject {
  const project = loadCompose(ROOT, COMPOSE_FILES, {
    PLATFORM_INTERNAL_SECRET: secret,
    // docker-compose.yml requires it even where the override leaves MongoDB out; nothing reads it
    MONGO_PASSWORD: 'unused-with-the-embedded-store',
    // the same for every container of the run, so auth recreated on its volume opens its stored keys
    SIGNING_KEYS_ENCRYPTION_KEY: `signing-keys-${secret}`,
    // each service's own NATS user (deploy/nats/authorization.conf); URL-safe, as they go into NATS_URL
    ...Object.fromEntries(
      ['EDGE', 'AUTH', 'LLM_GATEWAY', 'LLM_QUOTA', 'LEGACY_AGENT'].map((s) => [
        `${s}_NATS_PASSWORD`,
        `${s}-${secret}`,
      ]),
    ),
    EDGE_PORT: String(edgePort),
    PUBLIC_BASE_URL: `http://127.0.0.1:${edgePort}`,
    IMAGE_TAG: RUN,
  });
  project.name = RUN;
  const nats = project.services.nats;
  if (!nats) throw new Error('docker-compose.yml has no nats service');
  nats.image = NATS_IMAGE;
  return project;
}

// Read at load time too, to know whether the gateway step applies.
const composeAtLoad = composeProject(8080, 'x'.repeat(48));
const hasGateway = 'llm-gateway' in composeAtLoad.services;

describe('the production images, run as docker-compose.yml deploys them', () => {
  const secret = randomBytes(36).toString('base64url');
  let project: ComposeProject;
  let order: string[];
  let edge: string;
  const timings: string[] = [];
  /** services built from this checkout (the platform's own images) */
  let built: string[];

  const call = (method: string, route: string, bearer?: string, body?: unknown): Promise<JsonReply> =>
    callJson(`${edge}${route}`, method, { bearer, body });

  async function removeAll() {
    const names = Object.keys(project.services)
      .concat(STANDALONE)
      .map((s) => objectName.container(project, s));
    await podman(['rm', '--force', '--time', '0', ...names], { allowFailure: true });
    for (const network of Object.keys(project.networks).concat('default')) {
      await podman(['network', 'rm', '--force', objectName.network(project, network)], {
        allowFailure: true,
      });
    }
  }

  async function removeVolumes() {
    for (const volume of Object.keys(project.volumes).concat(`${STANDALONE}-data`)) {
      await podman(['volume', 'rm', '--force', objectName.volume(project, volume)], { allowFailure: true });
    }
  }

  /** Runs the health check compose defines for a container until it passes (or its budget runs out). */
  async function untilHealthy(service: string) {
    const hc = project.services[service]?.healthcheck;
    if (!hc) return;
    const budget =
      durationMs(hc.start_period, 0) +
      (hc.retries ?? 3) * (durationMs(hc.interval, 30_000) + durationMs(hc.timeout, 30_000));
    const container = objectName.container(project, service);
    await waitFor(
      async () => {
        const state = await inspect(container, '{{.State.Status}}');
        if (state !== 'running') {
          const logs = await podman(['logs', '--tail', '30', container], { allowFailure: true });
          throw new Error(`${service} is ${state}:\n${logs.stdout}\n${logs.stderr}`);
        }
        return (await podman(['healthcheck', 'run', container], { allowFailure: true })).code === 0;
      },
      { timeoutMs: budget, intervalMs: 500, what: `${service} healthy` },
    );
  }

  /** Creates the networks and volumes (if missing) and starts every service in dependency order. */
  async function up() {
    for (const [name, network] of Object.entries(project.networks)) {
      const id = objectName.network(project, name);
      if ((await podman(['network', 'exists', id], { allowFailure: true })).code === 0) continue;
      await podman(['network', 'create', ...(network.internal ? ['--internal'] : []), id]);
    }
    for (const volume of Object.keys(project.volumes)) {
      const id = objectName.volume(project, volume);
      if ((await podman(['volume', 'exists', id], { allowFailure: true })).code !== 0) {
        await podman(['volume', 'create', id]);
      }
    }
    for (const service of order) {
      await podman(runArgs(project, service, ROOT));
      // compose starts a dependant once its dependencies meet their condition; service_healthy everywhere here
      const dependants = order.filter((s) => project.services[s]?.depends_on?.[service]);
      if (dependants.length > 0 || service === 'edge') await untilHealthy(service);
    }
  }

  beforeAll(async () => {
    const edgePort = await freePort();
    project = composeProject(edgePort, secret);
    order = startOrder(project);
    built = order.filter((s) => project.services[s]?.build);
    edge = `http://127.0.0.1:${edgePort}`;
  });

  afterAll(async () => {
    if (!process.env.KEEP_CONTAINERS && project) {
      await removeAll();
      await removeVolumes();
      // this run's tags only; the layers stay in the build cache
      const tags = built.map((service) => imageOf(project, service)).concat(STANDALONE_IMAGE);
      await podman(['rmi', ...tags], { allowFailure: true });
    }
    if (timings.length > 0) process.stdout.write(`\ncontainer test:\n  ${timings.join('\n  ')}\n`);
  });

  it('builds every image from the checkout, and NATS from Debian', async () => {
    const started = Date.now();
    await podman([
      'build',
      '--network',
      'host',
      '--pull=never',
      '--file',
      path.join(__dirname, 'nats.Dockerfile'),
      '--tag',
      NATS_IMAGE,
      __dirname,
    ]);
    for (const service of built) {
      const t0 = Date.now();
      await podman(buildArgs(project, service, ROOT));
      timings.push(`build ${service}: ${((Date.now() - t0) / 1000).toFixed(1)} s`);
    }
    timings.push(`all builds: ${((Date.now() - started) / 1000).toFixed(1)} s`);
    expect(built).toEqual(expect.arrayContaining(['auth', 'edge', 'legacy-agent', 'llm-quota']));
  });

  it("keeps each image's /app to the service's bundle and the packages it loads", async () => {
    const sizes: Record<string, number> = {};
    for (const service of built) {
      const image = imageOf(project, service);
      const du = await podman(['run', '--rm', '--entrypoint', 'du', image, '-sk', '/app']);
      const appMb = Number(du.stdout.split(/\s/)[0]) / 1024;
      sizes[service] = Math.round(appMb);
      const size = await inspect(image, '{{.Size}}');
      timings.push(`image ${service}: ${Math.round(Number(size) / 1e6)} MB, /app ${Math.round(appMb)} MB`);
      // no sources, no dev tools, no pnpm: the bundle, its maps and node_modules
      const listing = await podman(['run', '--rm', '--entrypoint', 'ls', image, '-A', '/app']);
      expect(listing.stdout.split('\n').sort()).toEqual(['dist', 'node_modules', 'package.json']);
      const tools = await podman([
        'run',
        '--rm',
        '--entrypoint',
        'sh',
        image,
        '-c',
        'command -v pnpm tsx; true',
      ]);
      expect(tools.stdout).toBe('');
    }
    const over = Object.entries(sizes).filter(
      ([service, mb]) => mb > (APP_LIMIT_MB[service] ?? DEFAULT_APP_LIMIT_MB),
    );
    expect(over).toEqual([]);
  });

  it("starts every service as compose does, each passing compose's health check", async () => {
    const t0 = Date.now();
    await up();
    for (const service of order) await untilHealthy(service);
    timings.push(`start (dependency order, health checks): ${((Date.now() - t0) / 1000).toFixed(1)} s`);
    const health = await Promise.all(
      order.map(async (service) => ({
        service,
        health: await inspect(objectName.container(project, service), '{{.State.Health.Status}}'),
      })),
    );
    expect(health).toEqual(order.map((service) => ({ service, health: 'healthy' })));
    // and the published port reaches the edge: the public signing keys, served from auth
    expect((await fetch(`${edge}/oidc/jwks`)).status).toBe(200);
  });

  it('runs every platform container non-root, on a read-only root, with no capabilities and no new privileges', async () => {
    for (const service of built) {
      const container = objectName.container(project, service);
      const probe = await podman([
        'exec',
        container,
        'node',
        '-e',
        `const fs = require('fs');
         const status = fs.readFileSync('/proc/self/status', 'utf8');
         const field = (k) => status.match(new RegExp('^' + k + ':\\\\s*(\\\\S+)', 'm'))[1];
         let appWritable = true;
         try { fs.writeFileSync('/app/probe', ''); } catch (e) { appWritable = e.code; }
         let tmpWritable = true;
         try { fs.writeFileSync('/tmp/probe', ''); } catch (e) { tmpWritable = e.code; }
         console.log(JSON.stringify({ uid: process.getuid(), gid: process.getgid(), capEff: field('CapEff'),
           capBnd: field('CapBnd'), noNewPrivs: field('NoNewPrivs'), appWritable, tmpWritable }));`,
      ]);
      expect({ service, ...JSON.parse(probe.stdout) }).toEqual({
        service,
        uid: 1000,
        gid: 1000,
        capEff: '0000000000000000',
        capBnd: '0000000000000000',
        noNewPrivs: '1',
        appWritable: 'EROFS',
        tmpWritable: true,
      });
      expect(await inspect(container, '{{.HostConfig.ReadonlyRootfs}}')).toBe('true');
    }
  });

  const session = { token: '', userId: '' };
  const org = `ct-${randomBytes(4).toString('hex')}`;

  it('serves the platform through the containerised edge: login, /v2/me, an org, quotas, legacy v1 410', async () => {
    const login = await call('POST', '/v2/login/anonymous');
    expect(login.status).toBe(200);
    Object.assign(session, { token: login.body.token, userId: login.body.userId });
    const me = await call('GET', '/v2/me', session.token);
    expect(me.status).toBe(200);
    expect(me.body).toMatchObject({ id: session.userId });

    expect(
      (await call('POST', '/v2/orgs', session.token, { slug: org, name: 'Container Test' })).status,
    ).toBe(201);
    expect((await call('GET', `/v2/orgs/${org}`, session.token)).body).toMatchObject({ slug: org });

    const usage = await call('GET', '/llm/v1/quotas/usage', session.token);
    expect(usage.status).toBe(200);
    expect(usage.body).toMatchObject({ orgSlug: org, plan: { name: expect.any(String) } });
    const patched = await call('PATCH', '/llm/v1/quotas/settings', session.token, {
      policy: 'soft_downgrade',
    });
    expect(patched.status).toBe(200);
    expect(patched.body).toMatchObject({ orgSlug: org, policy: 'soft_downgrade' });

    const retired = await call('GET', '/legacy/v1/bots', 'some-developer-token');
    expect(retired.status).toBe(410);
    expect(retired.body).toMatchObject({ code: 'API_VERSION_RETIRED' });
  });

  (hasGateway ? it : it.skip)(
    hasGateway
      ? 'answers a chat completion of the built-in mock/chat model through the containerised edge and llm-gateway'
      : 'SKIPPED: docker-compose.yml has no llm-gateway service yet (the gateway step runs once it has)',
    async () => {
      // The first call between freshly started containers (gateway -> llm-quota for the org's settings) needs
      // llm-quota's name, and podman's aardvark-dns (podman 4.3) has left the gateway's container without an answer
      // for up to ~45 s after start (decision 0084). That is the host's network, not the platform: wait until a
      // lookup from inside the container answers (up to 90 s, and say how long it took), then expect the gateway
      // to answer within its own deadline.
      const dnsStarted = Date.now();
      await waitFor(
        async () =>
          (
            await podman(
              [
                'exec',
                objectName.container(project, 'llm-gateway'),
                'node',
                '-e',
                "require('dns').promises.resolve4('llm-quota').then(() => process.exit(0), () => process.exit(1))",
              ],
              { allowFailure: true },
            )
          ).code === 0,
        {
          timeoutMs: 90_000,
          intervalMs: 1_000,
          what: "llm-quota's name answered inside the gateway's container",
        },
      );
      const dnsMs = Date.now() - dnsStarted;
      if (dnsMs > 2_000)
        console.log(`llm-quota's name answered inside the gateway's container after ${dnsMs} ms`);
      const seen: number[] = [];
      let last: JsonReply | undefined;
      const reply = await waitFor(
        async () => {
          last = await call('POST', '/llm/v1/chat/completions', session.token, {
            model: 'mock/chat',
            messages: [{ role: 'user', content: 'ping' }],
          });
          if (last.status !== 200) seen.push(last.status);
          return last.status === 200 ? last : null;
        },
        { timeoutMs: 30_000, intervalMs: 500, what: 'a 200 from the gateway' },
      ).catch(async (err: Error) => {
        // say what the gateway answered and what it and llm-quota (whose settings it waits for) logged, so a
        // failure here can be diagnosed
        const lastLines = async (service: string) => {
          const logs = await podman(['logs', '--tail', '40', objectName.container(project, service)], {
            allowFailure: true,
          });
          return `${service}'s last log lines:\n${logs.stdout}${logs.stderr}`;
        };
        // and how long the gateway's container takes to resolve llm-quota's name now (decision 0084)
        const started = Date.now();
        const lookup = await podman(
          ['exec', objectName.container(project, 'llm-gateway'), 'getent', 'hosts', 'llm-quota'],
          { allowFailure: true },
        );
        const probe = await podman(
          [
            'exec',
            objectName.container(project, 'llm-gateway'),
            'node',
            '-e',
            "const t=Date.now();fetch('http://llm-quota:8082/',{signal:AbortSignal.timeout(10000)}).then(r=>console.log('status',r.status,Date.now()-t,'ms'),e=>console.log('failed',e.cause?.code??e.name,Date.now()-t,'ms'))",
          ],
          { allowFailure: true },
        );
        throw new Error(
          `${err.message}; statuses ${seen.join(', ')}; last answer ${JSON.stringify(last?.body)}\n` +
            `getent hosts llm-quota in llm-gateway's container: ${Date.now() - started} ms, ` +
            `${JSON.stringify(lookup.stdout.trim() || lookup.stderr.trim())}\n` +
            `a fetch of http://llm-quota:8082/ from there: ${probe.stdout || probe.stderr}\n` +
            `${await lastLines('llm-gateway')}\n${await lastLines('llm-quota')}`,
        );
      });
      if (seen.length > 0) {
        // a slow first answer is allowed, but kept diagnosable: what the gateway logged meanwhile
        const logs = await podman(['logs', '--tail', '20', objectName.container(project, 'llm-gateway')], {
          allowFailure: true,
        });
        timings.push(
          `gateway answered ${seen.join(', ')} before its first 200; its last log lines:\n${logs.stdout}${logs.stderr}`,
        );
      }
      expect(reply.status).toBe(200);
      expect(reply.body.choices[0].message).toMatchObject({ role: 'assistant', content: expect.any(String) });
    },
  );

  it('stops every container within its grace period, exit code 0 (drained, not killed)', async () => {
    const results: Array<{ service: string; exitCode: string; withinGrace: boolean }> = [];
    for (const service of [...order].reverse()) {
      const grace = durationMs(project.services[service]?.stop_grace_period, DEFAULT_GRACE_MS);
      const container = objectName.container(project, service);
      const t0 = Date.now();
      await podman(['stop', '--time', String(grace / 1000), container]);
      const elapsed = Date.now() - t0;
      timings.push(`stop ${service}: ${elapsed} ms`);
      if (elapsed >= grace) {
        // killed at the end of its grace: what it was doing is in its last log lines
        const logs = await podman(['logs', '--tail', '30', container], { allowFailure: true });
        timings.push(`${service}'s last log lines:\n${logs.stdout}${logs.stderr}`);
      }
      results.push({
        service,
        exitCode: await inspect(container, '{{.State.ExitCode}}'),
        withinGrace: elapsed < grace,
      });
    }
    expect(results).toEqual(results.map(({ service }) => ({ service, exitCode: '0', withinGrace: true })));
  });

  it('keeps the data on its volumes across new containers: the session, the org and its quota settings', async () => {
    await removeAll();
    await up();
    for (const service of order) await untilHealthy(service);
    const me = await call('GET', '/v2/me', session.token);
    expect(me.status).toBe(200);
    expect(me.body).toMatchObject({ id: session.userId });
    expect((await call('GET', `/v2/orgs/${org}`, session.token)).status).toBe(200);
    const settings = await call('GET', '/llm/v1/quotas/settings', session.token);
    expect(settings.status).toBe(200);
    expect(settings.body).toMatchObject({ orgSlug: org, policy: 'soft_downgrade' });
  });

  it('builds the standalone image from the same Dockerfile; its own HEALTHCHECK passes; data survives on a volume', async () => {
    const image = STANDALONE_IMAGE;
    const t0 = Date.now();
    await podman([
      'build',
      '--format',
      'docker',
      '--network',
      'host',
      '--pull=never',
      '--build-arg',
      `SERVICE=${STANDALONE}`,
      '--build-arg',
      'PORT=8080',
      '--tag',
      image,
      ROOT,
    ]);
    timings.push(`build standalone: ${((Date.now() - t0) / 1000).toFixed(1)} s`);
    const port = await freePort();
    const container = objectName.container(project, STANDALONE);
    const volume = objectName.volume(project, `${STANDALONE}-data`);
    const run = async () => {
      await podman([
        'run',
        '--detach',
        '--name',
        container,
        '--read-only',
        '--read-only-tmpfs=false',
        '--tmpfs',
        '/tmp',
        '--cap-drop',
        'ALL',
        '--security-opt',
        'no-new-privileges',
        '--init',
        '--env',
        `PLATFORM_INTERNAL_SECRET=${secret}`,
        '--volume',
        `${volume}:/data`,
        '--publish',
        `127.0.0.1:${port}:8080`,
        image,
      ]);
      // the image's own HEALTHCHECK, run as podman would
      await waitFor(
        async () => (await podman(['healthcheck', 'run', container], { allowFailure: true })).code === 0,
        {
          timeoutMs: 60_000,
          intervalMs: 500,
          what: 'standalone healthy',
        },
      );
      // serving through the published port once the edge has auth's signing keys
      await waitFor(async () => (await fetch(`http://127.0.0.1:${port}/oidc/jwks`)).status === 200, {
        timeoutMs: 30_000,
        intervalMs: 200,
        what: 'standalone serving',
      });
    };
    await run();
    const base = `http://127.0.0.1:${port}`;
    const login = await callJson(`${base}/v2/login/anonymous`, 'POST');
    expect(login.status).toBe(200);
    await podman(['stop', '--time', '10', container]);
    expect(await inspect(container, '{{.State.ExitCode}}')).toBe('0');
    await podman(['rm', container]);
    await run();
    const me = await callJson(`${base}/v2/me`, 'GET', { bearer: login.body.token });
    expect(me.status).toBe(200);
    expect(me.body).toMatchObject({ id: login.body.userId });
  });
});
