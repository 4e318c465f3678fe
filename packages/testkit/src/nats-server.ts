import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { connect } from 'node:net';
import { freePort } from './free-port';
import { tempDir } from './temp-dir';
import { waitFor } from './wait-for';

/** Setting this makes a missing nats-server fail the suite instead of skipping (CI sets it). */
export const REQUIRE_NATS_VARIABLE = 'PLATFORM_REQUIRE_NATS';

export interface NatsServerHandle {
  url: string;
  port: number;
  /** stops the server (SIGTERM), keeping its JetStream data for `start()` */
  stop(): Promise<void>;
  /** starts it again on the same port and storage */
  start(): Promise<void>;
  /** stops it and removes its storage */
  dispose(): Promise<void>;
}

const binary = process.env.NATS_SERVER_BIN ?? 'nats-server';

export function natsServerAvailable(): boolean {
  return spawnSync(binary, ['--version'], { stdio: 'ignore' }).status === 0;
}

/**
 * For test files: `describe` when nats-server can be run, otherwise a loud skip — or a failure when
 * PLATFORM_REQUIRE_NATS is set, so CI never passes by skipping.
 */
export function describeWithNats(name: string, body: () => void): void {
  if (natsServerAvailable()) {
    describe(name, body);
    return;
  }
  if (process.env[REQUIRE_NATS_VARIABLE]) {
    describe(name, () => {
      it('needs nats-server', () => {
        throw new Error(`nats-server (${binary}) is not installed, and ${REQUIRE_NATS_VARIABLE} is set`);
      });
    });
    return;
  }
  console.warn(
    `\n*** SKIPPING "${name}": nats-server is not installed (apt-get install -y nats-server). ` +
      `Set ${REQUIRE_NATS_VARIABLE}=1 to make this a failure. ***\n`,
  );
  describe.skip(name, body);
}

const portOpen = (port: number) =>
  new Promise<boolean>((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });

export interface NatsServerConfig {
  /** a configuration file (`nats-server -c`), e.g. deploy/nats/authorization.conf */
  file: string;
  /** added to the server's environment: the variables the file reads */
  env?: Record<string, string>;
}

/** Starts a real nats-server with JetStream on a free loopback port, with a configuration file if given. */
export async function startNatsServer(config?: NatsServerConfig): Promise<NatsServerHandle> {
  const port = await freePort();
  const storage = tempDir('nats-js-');
  let child: ChildProcess | undefined;

  const start = async () => {
    const file = config ? ['-c', config.file] : [];
    child = spawn(binary, [...file, '-a', '127.0.0.1', '-p', String(port), '-js', '-sd', storage.dir], {
      stdio: ['ignore', 'ignore', 'pipe'],
      env: { ...process.env, ...config?.env },
    });
    let stderr = '';
    child.stderr?.on('data', (chunk) => {
      stderr = (stderr + chunk).slice(-4000);
    });
    const exited = new Promise<never>((_, reject) =>
      child?.once('exit', (code) => reject(new Error(`nats-server exited (${code}): ${stderr}`))),
    );
    exited.catch(() => undefined);
    await Promise.race([waitFor(() => portOpen(port), { timeoutMs: 10_000, what: 'nats-server' }), exited]);
  };

  const stop = async () => {
    const running = child;
    child = undefined;
    if (!running || running.exitCode !== null) return;
    const gone = new Promise((resolve) => running.once('exit', resolve));
    running.kill('SIGTERM');
    await gone;
  };

  await start();
  return {
    url: `nats://127.0.0.1:${port}`,
    port,
    stop,
    start,
    async dispose() {
      await stop();
      storage.remove();
    },
  };
}
