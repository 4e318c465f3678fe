import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { HELP, runCli } from './cli';

/** A credential that is not given is a setting to give, not a usage mistake: two lines that say what to do. */
describe('operator CLI: a command without its credential', () => {
  let dir: string;
  beforeEach(() => {
    // no pnpm start runs on this data folder: nothing is read from it
    dir = mkdtempSync(path.join(tmpdir(), 'cli-credential-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  const say = async (argv: string[], env: Record<string, string> = {}) => {
    const out: string[] = [];
    const err: string[] = [];
    const code = await runCli(
      argv,
      { DATA_DIR: dir, ...env },
      { out: (l) => out.push(l), err: (l) => err.push(l) },
    );
    return { code, out, err };
  };

  const tokenMissing = 'This command needs an operator credential: --token or PLATFORM_TOKEN';
  const howToGetOne = (url: string) =>
    `Get one: sign in with POST ${url}/v2/login ({"email", "password"}: the answer's .token), or for a script make an at: token with POST ${url}/v2/user/accessTokens; providers and models need a platform administrator's (pnpm platform admin grant <userId>).`;

  it('pnpm platform providers list without a token: the missing token and how to get one, exit 2, no help', () => {
    const run = spawnSync(
      process.execPath,
      ['--require', 'tsx/cjs', path.join(__dirname, 'main.ts'), 'providers', 'list'],
      { env: { PATH: process.env.PATH, DATA_DIR: dir }, encoding: 'utf8', timeout: 60_000 },
    );
    expect({ status: run.status, stdout: run.stdout, stderr: run.stderr }).toEqual({
      status: 2,
      stdout: '',
      stderr: `${tokenMissing}\n${howToGetOne('http://localhost:8080')}\n`,
    });
  });

  it.each([[['org', 'create', 'acme']], [['models', 'export']], [['org', 'allow', 'acme', '--all']]])(
    '%j names the edge it would call in how to get a token',
    async (argv) => {
      expect(await say(argv, { PLATFORM_URL: 'https://platform.example/' })).toEqual({
        code: 2,
        out: [],
        err: [tokenMissing, howToGetOne('https://platform.example')],
      });
    },
  );

  it('with --json, the failure holds both lines', async () => {
    const { code, out } = await say(['providers', 'list', '--json'], { PLATFORM_URL: 'http://127.0.0.1:9' });
    expect(code).toBe(2);
    expect(out.map((line) => JSON.parse(line))).toEqual([
      { result: 'failed', exitCode: 2, error: `${tokenMissing}\n${howToGetOne('http://127.0.0.1:9')}` },
    ]);
  });

  it('without the internal secret: the one line that names it, exit 2, no help', async () => {
    expect(await say(['keys', 'list'], { AUTH_URL: 'http://127.0.0.1:9' })).toEqual({
      code: 2,
      out: [],
      err: ['This command needs PLATFORM_INTERNAL_SECRET'],
    });
  });

  it.each([
    ['an unknown command', ['providers', 'explode'], 'Unknown command: providers explode'],
    [
      'a command without its arguments',
      ['providers', 'remove'],
      'Usage: pnpm platform providers remove <name>',
    ],
    ['an unknown flag', ['providers', 'list', '--tokn', 'x'], "Unknown option '--tokn'"],
  ])('a real usage mistake (%s) still shows the help', async (_case, argv, message) => {
    const { code, err } = await say(argv, { PLATFORM_TOKEN: 't', PLATFORM_URL: 'http://127.0.0.1:9' });
    expect(code).toBe(2);
    expect(err.join('\n')).toContain(message);
    expect(err.join('\n')).toContain(HELP);
  });
});
