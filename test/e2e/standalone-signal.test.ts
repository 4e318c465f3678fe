import { spawn } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { processAlive as alive, tempDir, waitFor } from '@platform/testkit';

/**
 * `pnpm start` told to stop (SIGTERM) the moment it says it is ready: whoever read the banner may stop it at once,
 * before the process has run another line (a loaded machine lets the reader run first).
 */

const ROOT = path.resolve(__dirname, '../..');

/**
 * Loaded with --require: the process sends itself SIGTERM right after it wrote the banner, as the banner's reader
 * would if it ran first. Its services are the same program (they inherit it) but never write the banner.
 */
const SIGTERM_AT_BANNER = `
const write = process.stderr.write;
process.stderr.write = function (chunk, ...rest) {
  const written = write.call(this, chunk, ...rest);
  if (String(chunk).includes('{legacy_url}')) process.kill(process.pid, 'SIGTERM');
  return written;
};
`;

describe('pnpm start stopped the moment its banner is out', () => {
  it('drains and exits 0, its data folder freed: the stop is never left to the default action of the signal', async () => {
    const data = tempDir('standalone-signal-');
    const preload = path.join(data.dir, 'sigterm-at-banner.cjs');
    writeFileSync(preload, SIGTERM_AT_BANNER);
    const platform = spawn(
      process.execPath,
      ['--require', 'tsx/cjs', '--require', preload, 'services/standalone/src/main.ts'],
      {
        cwd: ROOT,
        env: { ...process.env, PORT: '0', HOST: '127.0.0.1', DATA_DIR: path.join(data.dir, 'data') },
        stdio: ['ignore', 'ignore', 'pipe'],
      },
    );
    let stderr = '';
    platform.stderr!.on('data', (d: Buffer) => {
      stderr += d.toString();
    });
    try {
      await waitFor(() => platform.exitCode !== null || platform.signalCode !== null, {
        timeoutMs: 75_000,
        what: 'pnpm start to exit',
      });
      expect(stderr).toContain('{legacy_url}');
      // the signal that ended it, if one did, and what it said last
      const ended = platform.exitCode ?? `${platform.signalCode}; its stderr ended:\n${stderr.slice(-2000)}`;
      expect(ended).toBe(0);
      expect(existsSync(path.join(data.dir, 'data', 'standalone.lock'))).toBe(false);
    } finally {
      if (platform.exitCode === null && platform.signalCode === null) platform.kill('SIGKILL');
      // services a supervisor killed outright left behind (none should be): they would keep writing there
      const hints = path.join(data.dir, 'data', 'standalone.json');
      const pids = existsSync(hints) ? JSON.parse(readFileSync(hints, 'utf8')).pids : {};
      for (const pid of Object.values<number>(pids ?? {})) if (alive(pid)) process.kill(pid, 'SIGKILL');
      data.remove();
    }
  }, 90_000);
});
