import { spawn } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { tempDir } from '@platform/testkit';

/** The fatal lines (level 60) of what a service printed, as JSON. */
const fatalLines = (stdout: string) =>
  stdout
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line))
    .filter((line) => line.level === 60);

/**
 * A service that cannot start (here auth, whose signing-keys secret is a folder or empty) stops with one JSON log line
 * saying why, exit code 1: what an operator's log collector reads, not Node's unstructured stack trace.
 */
const ROOT = path.resolve(__dirname, '../../..');

/** a service's production entry until it exits (or, with `stopWhenListening`, is stopped once it listens) */
async function runUntilExit(service: string, env: Record<string, string>, stopWhenListening = false) {
  const child = spawn(process.execPath, ['--require', 'tsx/cjs', `services/${service}/src/main.ts`], {
    cwd: ROOT,
    env: {
      PATH: process.env.PATH,
      PLATFORM_INTERNAL_SECRET: 'a-test-secret-of-at-least-32-characters!!',
      PORT: '0',
      ADMIN_PORT: '0',
      HOST: '127.0.0.1',
      ADMIN_HOST: '127.0.0.1',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (d: Buffer) => {
    stdout += d.toString();
    if (stopWhenListening && stdout.includes(`"msg":"${service} listening"`)) child.kill('SIGTERM');
  });
  child.stderr!.on('data', (d: Buffer) => {
    stderr += d.toString();
  });
  const code = await new Promise<number | null>((resolve) => child.once('exit', (c) => resolve(c)));
  return { code, stdout, stderr };
}

describe("a listening address that is not this machine's", () => {
  it.each([
    ['HOST', '192.0.2.1', "the address is not one of this machine's"],
    ['HOST', 'no-such-host.invalid', 'no such host'],
    ['ADMIN_HOST', '192.0.2.1', "the address is not one of this machine's"],
  ])(
    '%s=%s: exits 1 naming the setting to change, not PORT',
    async (setting, address, reason) => {
      const data = tempDir('runtime-host-');
      try {
        const { code, stdout } = await runUntilExit('llm-quota', { DATA_DIR: data.dir, [setting]: address });
        expect(code).toBe(1);
        expect(stdout).toContain(
          `cannot listen on ${address}:0: ${reason}; set ${setting} to another address`,
        );
      } finally {
        data.remove();
      }
    },
    60_000,
  );
});

describe('a service that fails while starting', () => {
  it.each([
    [
      'is a folder',
      (file: string) => mkdirSync(file),
      'cannot read the signing-keys secret in FILE: it is a folder',
    ],
    [
      'is empty (a crash, a full disk)',
      (file: string) => writeFileSync(file, ''),
      'FILE does not hold a signing-keys secret (at least 32 characters)',
    ],
  ])(
    'auth whose signing-keys secret %s logs one fatal JSON line naming the cause and exits 1, with no raw stack trace',
    async (_, make, cause) => {
      const data = tempDir('runtime-start-failure-');
      const file = path.join(data.dir, 'signing-keys.secret');
      make(file);
      try {
        const { code, stdout, stderr } = await runUntilExit('auth', { DATA_DIR: data.dir });
        expect(code).toBe(1);
        expect(stderr.replace(/^.*oidc-provider WARNING.*\n/m, '')).toBe('');
        const fatal = fatalLines(stdout);
        expect(fatal).toHaveLength(1);
        expect(fatal[0]).toMatchObject({ service: 'auth' });
        expect(fatal[0].msg).toContain(`auth cannot start: ${cause.replace('FILE', file)}`);
        expect(fatal[0].msg).toContain(
          'or set SIGNING_KEYS_ENCRYPTION_KEY to the secret this data was sealed with',
        );
      } finally {
        data.remove();
      }
    },
    60_000,
  );

  it('auth whose secret opens none of its stored signing keys logs one fatal JSON line saying so and exits 1', async () => {
    const data = tempDir('runtime-start-failure-');
    try {
      // keys sealed under a configured secret; the next start without it reads another secret from signing-keys.secret
      const first = await runUntilExit(
        'auth',
        { DATA_DIR: data.dir, SIGNING_KEYS_ENCRYPTION_KEY: 'the-secret-the-keys-were-sealed-with-0123' },
        true,
      );
      expect(first.code).toBe(0);
      writeFileSync(
        path.join(data.dir, 'signing-keys.secret'),
        'another-secret-that-opens-none-of-the-keys-0123\n',
        {
          mode: 0o600,
        },
      );
      const { code, stdout, stderr } = await runUntilExit('auth', { DATA_DIR: data.dir });
      expect(code).toBe(1);
      expect(stderr.replace(/^.*oidc-provider WARNING.*\n/m, '')).toBe('');
      const fatal = fatalLines(stdout);
      expect(fatal).toHaveLength(1);
      expect(fatal[0]).toMatchObject({
        service: 'auth',
        msg: `auth cannot start: the stored signing keys cannot be opened with the secret of ${path.join(data.dir, 'signing-keys.secret')}: restore the secret they were sealed with`,
      });
    } finally {
      data.remove();
    }
  }, 60_000);
});
