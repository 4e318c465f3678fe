import { fork } from 'node:child_process';
import path from 'node:path';
import { batchingChannel, createIpcBusHub } from '@platform/bus';
import { tempDir, waitFor } from '@platform/testkit';

/**
 * A stop asked for while a service starts, its store open: the service finishes the step under way, then closes
 * what it opened and exits 0, instead of dying with its store open. Here llm-quota as `pnpm start` runs it (its bus
 * the IPC channel to this test, the hub), held in its start: the hub answers nothing until the stop was asked.
 */
const ROOT = path.resolve(__dirname, '../../..');

describe('a service stopped while it starts', () => {
  it('closes what it opened and exits 0 on SIGTERM after its store is open', async () => {
    const data = tempDir('stop-while-starting-');
    const child = fork('services/standalone/src/main.ts', [], {
      cwd: ROOT,
      execArgv: ['--require', 'tsx/cjs'],
      env: {
        PATH: process.env.PATH,
        PLATFORM_STANDALONE_SERVICE: 'llm-quota',
        PLATFORM_INTERNAL_SECRET: 'a-test-secret-of-at-least-32-characters!!',
        DATA_DIR: data.dir,
        PORT: '0',
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
    // what the service sends the hub, held while `holding`
    const held: unknown[] = [];
    let holding = true;
    let toHub: (message: unknown) => void = () => undefined;
    child.on('message', (message) => (holding ? held.push(message) : toHub(message)));
    const hub = createIpcBusHub();
    hub.attach(
      batchingChannel({
        send: (message) => {
          if (child.connected) child.send(message);
        },
        onMessage: (listener) => {
          toHub = listener;
          return () => undefined;
        },
      }),
    );
    try {
      // its usage consumer waits for its stream: the store is open (before the bus), the start not done
      await waitFor(() => JSON.stringify(held).includes('"ensureStream"'), {
        timeoutMs: 30_000,
        what: 'llm-quota asking the hub for its stream',
      });
      child.kill('SIGTERM');
      await waitFor(
        () =>
          output.includes('"msg":"shutting down"') || child.exitCode !== null || child.signalCode !== null,
        {
          timeoutMs: 10_000,
          what: 'the stop asked',
        },
      );
      holding = false;
      for (const message of held.splice(0)) toHub(message);
      expect(await exited).toEqual({ code: 0, signal: null });
      expect(output).toContain('"msg":"stopped"');
      expect(output).not.toContain('llm-quota listening');
    } finally {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      await hub.close();
      data.remove();
    }
  }, 60_000);
});
