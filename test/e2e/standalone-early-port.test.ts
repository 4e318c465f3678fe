import { spawn } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { processAlive as alive, tempDir, waitFor } from '@platform/testkit';

/**
 * `pnpm start` with a PORT the edge cannot have says so at once, before it starts any service (seconds each on a
 * loaded machine), rather than once four of them listened and the edge failed on it.
 */

const ROOT = path.resolve(__dirname, '../..');

/**
 * Loaded with --require by the supervisor and, through its Node flags, by every service process it starts: each of
 * these writes its service's name and process id to `file` as it begins, before it could fail or log anything.
 */
const recordingServices = (file: string) => `
const service = process.env.PLATFORM_STANDALONE_SERVICE;
if (service) require('node:fs').appendFileSync(${JSON.stringify(file)}, service + ' ' + process.pid + '\\n');
`;

/** `pnpm start` until it exits: its exit code, everything it printed, and the service processes it started */
async function startUntilExit(dir: string, env: Record<string, string>) {
  const started = path.join(dir, 'services-started');
  const preload = path.join(dir, 'record-services.cjs');
  writeFileSync(preload, recordingServices(started));
  const platform = spawn(
    process.execPath,
    ['--require', 'tsx/cjs', '--require', preload, 'services/standalone/src/main.ts'],
    {
      cwd: ROOT,
      env: { ...process.env, HOST: '127.0.0.1', DATA_DIR: path.join(dir, 'data'), ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let output = '';
  // its pipes closed, everything it printed was read
  let closed = false;
  platform.once('close', () => {
    closed = true;
  });
  platform.stdout!.on('data', (d: Buffer) => {
    output += d.toString();
  });
  platform.stderr!.on('data', (d: Buffer) => {
    output += d.toString();
  });
  const services = () =>
    existsSync(started)
      ? readFileSync(started, 'utf8')
          .split('\n')
          .filter(Boolean)
          .map((line) => ({ name: line.split(' ')[0], pid: Number(line.split(' ')[1]) }))
      : [];
  try {
    await waitFor(() => closed, {
      timeoutMs: 45_000,
      what: 'pnpm start to exit',
    });
    return { code: platform.exitCode, output, services: services().map((s) => s.name) };
  } finally {
    if (platform.exitCode === null && platform.signalCode === null) platform.kill('SIGKILL');
    for (const { pid } of services()) if (alive(pid)) process.kill(pid, 'SIGKILL');
  }
}

describe('pnpm start with a PORT the edge cannot have', () => {
  it('a port another program holds: exits 1 with one line naming it and PORT, its data folder freed, no service started', async () => {
    const taken = net.createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    const port = (taken.address() as net.AddressInfo).port;
    const data = tempDir('standalone-early-port-taken-');
    try {
      const { code, output, services } = await startUntilExit(data.dir, { PORT: String(port) });
      expect(code).toBe(1);
      expect(services).toEqual([]);
      expect(output).toContain(
        `cannot start: cannot listen on 127.0.0.1:${port}: the port is already in use; set PORT to another port`,
      );
      expect(output).not.toContain('    at ');
      expect(existsSync(path.join(data.dir, 'data', 'standalone.lock'))).toBe(false);
      expect(existsSync(path.join(data.dir, 'data', 'standalone.json'))).toBe(false);
    } finally {
      taken.close();
      data.remove();
    }
  }, 60_000);

  it('a port that is not a number: exits 1 with the config error naming PORT, no service started', async () => {
    const data = tempDir('standalone-early-port-word-');
    try {
      const { code, output, services } = await startUntilExit(data.dir, { PORT: 'eighty' });
      expect(code).toBe(1);
      expect(services).toEqual([]);
      expect(output).toContain('config error: PORT: must be a port number from 0 to 65535 (got eighty)');
      expect(existsSync(path.join(data.dir, 'data', 'standalone.lock'))).toBe(false);
    } finally {
      data.remove();
    }
  }, 60_000);
});
