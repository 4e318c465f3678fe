import { type ChildProcess, fork } from 'node:child_process';
import path from 'node:path';
import { describeWithNats, freePort, startNatsServer, tempDir, waitFor } from '@platform/testkit';

/**
 * llm-quota as production runs it (its main, NATS_URL set), against a NATS that cannot serve its usage consumer:
 * it serves, and stops cleanly. Its consumer waits for NATS, events wait in the gateways' outboxes.
 */
const ROOT = path.resolve(__dirname, '../../..');

/** llm-quota's main on free ports, its log collected; `exited` once it exits. */
function startLlmQuota(natsUrl: string, dataDir: string) {
  const child = fork('services/llm-quota/src/main.ts', [], {
    cwd: ROOT,
    execArgv: ['--require', 'tsx/cjs'],
    env: {
      PATH: process.env.PATH,
      PLATFORM_INTERNAL_SECRET: 'a-test-secret-of-at-least-32-characters!!',
      DATA_DIR: dataDir,
      NATS_URL: natsUrl,
      PORT: '0',
      HOST: '127.0.0.1',
      ADMIN_PORT: '0',
      ADMIN_HOST: '127.0.0.1',
    },
    stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
  });
  let output = '';
  for (const stream of [child.stdout!, child.stderr!])
    stream.on('data', (d: Buffer) => {
      output += d.toString();
    });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal })),
  );
  return { child, exited, output: () => output };
}

/** the line `llm-quota listening` (with its admin URL), once it is logged; fails if the process exits first */
const listening = (quota: ReturnType<typeof startLlmQuota>) =>
  Promise.race([
    waitFor(
      () => {
        const line = quota
          .output()
          .split('\n')
          .find((l) => l.includes('"msg":"llm-quota listening"'));
        return line ? (JSON.parse(line) as { admin: string }) : undefined;
      },
      { timeoutMs: 30_000, what: 'llm-quota listening' },
    ),
    quota.exited.then(({ code }) => {
      throw new Error(`llm-quota exited (${code}) before listening:\n${quota.output()}`);
    }),
  ]);

const stopAll = (children: ChildProcess[]) => {
  for (const child of children.splice(0))
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
};

describe('llm-quota with NATS unreachable', () => {
  const children: ChildProcess[] = [];
  afterEach(() => stopAll(children));

  it('stops on SIGTERM and says so: its waiting consumer no longer holds the shutdown', async () => {
    const data = tempDir('llm-quota-nats-away-');
    try {
      // a port nothing listens on
      const quota = startLlmQuota(`nats://127.0.0.1:${await freePort()}`, data.dir);
      children.push(quota.child);
      await listening(quota);
      quota.child.kill('SIGTERM');
      expect(await quota.exited).toEqual({ code: 0, signal: null });
      expect(quota.output()).toContain('"msg":"stopped"');
    } finally {
      data.remove();
    }
  }, 60_000);
});

describeWithNats('llm-quota with a NATS without JetStream', () => {
  const children: ChildProcess[] = [];
  afterEach(() => stopAll(children));

  it('starts, stays ready, says once what to fix on /readyz and in its log, and stops on SIGTERM', async () => {
    const data = tempDir('llm-quota-no-js-');
    const nats = await startNatsServer({ jetstream: false });
    try {
      const quota = startLlmQuota(nats.url, data.dir);
      children.push(quota.child);
      const { admin } = await listening(quota);
      const fix = `JetStream is not enabled on ${nats.url}: start nats-server with -js`;
      const ready = await fetch(`${admin}/readyz`);
      expect(ready.status).toBe(200);
      expect(await ready.json()).toMatchObject({ checks: { bus: fix, store: 'ok' } });
      expect(
        quota
          .output()
          .split('\n')
          .filter((line) => line.includes(fix)),
      ).toHaveLength(1);
      quota.child.kill('SIGTERM');
      expect(await quota.exited).toEqual({ code: 0, signal: null });
      expect(quota.output()).toContain('"msg":"stopped"');
    } finally {
      await nats.dispose();
      data.remove();
    }
  }, 60_000);
});
