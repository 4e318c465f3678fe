import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import path from 'node:path';
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
  /** starts it again on the same port and storage; `jetstream` turns JetStream on or off from then on */
  start(options?: { jetstream: boolean }): Promise<void>;
  /** turns JetStream on or off by a reload of its configuration (SIGHUP): connected clients stay connected */
  reload(options: { jetstream: boolean }): void;
  /**
   * while it is stopped: drops its JetStream data (streams, consumers, messages), so that `start()` brings it back
   * without them, as a server without a persistent volume comes back
   */
  loseJetStreamData(): void;
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

export interface NatsServerOptions {
  /** a configuration file (`nats-server -c`), e.g. deploy/nats/authorization.conf */
  file?: string;
  /** added to the server's environment: the variables the file reads */
  env?: Record<string, string>;
  /** false starts it without JetStream, as a NATS that lacks it (default true) */
  jetstream?: boolean;
}

/**
 * Starts a real nats-server on a free loopback port, with JetStream unless told otherwise, and with a configuration
 * file if given.
 */
export async function startNatsServer(options: NatsServerOptions = {}): Promise<NatsServerHandle> {
  const port = await freePort();
  const storage = tempDir('nats-js-');
  // the server reads its configuration from this file, rewritten for each start or reload: a reload reads JetStream's
  // settings from the file alone (a -js flag would outlive it)
  const config = path.join(storage.dir, 'nats.conf');
  const jetstreamData = path.join(storage.dir, 'jetstream');
  let jetstream = options.jetstream ?? true;
  let child: ChildProcess | undefined;

  const configure = () => {
    const lines: string[] = [];
    // nats-server reads an include relative to the including file, even an absolute path
    if (options.file) lines.push(`include ${JSON.stringify(path.relative(storage.dir, options.file))}`);
    if (jetstream) lines.push(`jetstream { store_dir: ${JSON.stringify(jetstreamData)} }`);
    writeFileSync(config, lines.map((line) => `${line}\n`).join(''));
  };

  const start = async (next?: { jetstream: boolean }) => {
    if (next) jetstream = next.jetstream;
    configure();
    child = spawn(binary, ['-c', config, '-a', '127.0.0.1', '-p', String(port)], {
      stdio: ['ignore', 'ignore', 'pipe'],
      env: { ...process.env, ...options.env },
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
    reload(next) {
      jetstream = next.jetstream;
      configure();
      child?.kill('SIGHUP');
    },
    loseJetStreamData() {
      if (child?.exitCode === null)
        throw new Error('stop the nats-server before dropping its JetStream data');
      rmSync(jetstreamData, { recursive: true, force: true });
    },
    async dispose() {
      await stop();
      storage.remove();
    },
  };
}
