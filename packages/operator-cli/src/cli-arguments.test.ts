import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { dispatch, HELP, parse, runCli } from './cli';
import { CliError } from './client';

describe('the command line', () => {
  it('takes a word beginning with one dash as a value (a signing key id may), keeping -h and the long options', () => {
    expect(parse(['keys', 'revoke', '-uDnoiLGfUi_KeIxtLRy54F4WCm2xeeVWafVruAhUdI', '--json'])).toEqual({
      positionals: ['keys', 'revoke', '-uDnoiLGfUi_KeIxtLRy54F4WCm2xeeVWafVruAhUdI'],
      values: { json: true },
    });
    expect(parse(['org', 'create', 'acme', '--name', '-dash name-'])).toEqual({
      positionals: ['org', 'create', 'acme'],
      values: { name: '-dash name-' },
    });
    expect(parse(['-h']).values).toEqual({ help: true });
    expect(() => parse(['keys', 'list', '--unknown'])).toThrow();
  });
});

describe('the help text', () => {
  /** An option's help: its line and the one under it. */
  const helpOf = (option: string) => {
    const lines = HELP.split('\n');
    const at = lines.findIndex((line) => line.includes(option));
    expect(at).toBeGreaterThan(-1);
    return `${lines[at]}\n${lines[at + 1]}`;
  };
  const LLM = 'the LLM gateway commands';

  // what each command calls (commands.ts, llm-commands.ts): the edge with the token, the gateway root, auth's and
  // llm-quota's internal routes with the shared secret
  it.each([
    ['--url URL', ['org create', 'member add', 'apikey issue', LLM]],
    ['--gateway-url URL', [LLM]],
    ['--token TOKEN', ['org create', 'member add', 'apikey issue', LLM]],
    ['--auth-url URL', ['plan assign', 'keys', 'oidc-client add', 'sso add', 'admin grant|revoke']],
    ['--llm-quota-url URL', ['plan assign']],
    ['PLATFORM_INTERNAL_SECRET', ['plan assign', 'keys', 'oidc-client add', 'sso add', 'admin grant|revoke']],
  ])('names the commands that use %s', (option, commands) => {
    const help = helpOf(option);
    for (const command of commands) expect(help).toContain(command);
    expect(HELP).toContain('\nLLM gateway (');
  });
});

describe('the usage lines', () => {
  /** Every command the help lists: `admin grant|revoke` is two. */
  const commands = [...HELP.matchAll(/^ {2}([a-z-]+) ([a-z|]+) /gm)].flatMap(([, group, verbs]) =>
    verbs!.split('|').map((verb) => `${group} ${verb}`),
  );
  const optionsOf = (line: string) =>
    [...new Set([...line.matchAll(/--([a-z-]+)/g)].map(([, name]) => name!))].sort();

  /**
   * Runs a command with `count` arguments and every option answering `value`, without a credential (so nothing is
   * sent): the options it read, and its usage line if it answered one.
   */
  const attempt = async (command: string, count: number, value: string | undefined) => {
    const read = new Set<string>();
    const values = new Proxy(
      {},
      {
        get: (_target, key) => {
          if (typeof key === 'string') read.add(key);
          return value;
        },
      },
    );
    const args = Array.from({ length: count }, (_, i) => `arg${i}`);
    try {
      await dispatch([...command.split(' '), ...args], values, { url: 'http://127.0.0.1:9' });
    } catch (err) {
      const usage = err instanceof CliError && /^Usage: pnpm platform (.*)$/s.exec(err.message);
      if (usage) return { read, usage: usage[1] };
    }
    return { read, usage: undefined };
  };

  it('lists the commands', () => {
    expect(commands).toEqual(
      expect.arrayContaining(['org create', 'admin revoke', 'providers add', 'org downgrade']),
    );
  });

  it.each(commands)('of %s name every option the command reads', async (command) => {
    const read = new Set<string>();
    const usages = new Set<string>();
    // no option given (the path without --all, a required option missing) and every one given (past the checks)
    for (const count of [0, 1, 2, 3, 4])
      for (const value of [undefined, 'x']) {
        const outcome = await attempt(command, count, value);
        for (const name of outcome.read) read.add(name);
        if (outcome.usage) usages.add(outcome.usage);
      }
    expect(usages.size).toBeGreaterThan(0);
    for (const usage of usages)
      expect({ usage, options: optionsOf(usage) }).toEqual({ usage, options: [...read].sort() });
  });
});

describe('a secret from a file (--client-secret-file), kept out of ps and the shell history', () => {
  it('sends the file without its last newline, and never prints it', async () => {
    const bodies: unknown[] = [];
    // a stand-in for auth's internal route
    const server = createServer((req, res) => {
      let text = '';
      req.on('data', (chunk) => {
        text += chunk;
      });
      req.on('end', () => {
        bodies.push(JSON.parse(text));
        res.writeHead(201, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ result: 'created', slug: 'acme' }));
      });
    }).listen(0, '127.0.0.1');
    await once(server, 'listening');
    const dir = mkdtempSync(path.join(tmpdir(), 'cli-secret-'));
    try {
      const file = path.join(dir, 'secret');
      writeFileSync(file, 'company-secret\n');
      const env = {
        AUTH_URL: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
        PLATFORM_INTERNAL_SECRET: 'internal',
        DATA_DIR: dir,
      };
      const lines: string[] = [];
      const io = { out: (l: string) => lines.push(l), err: (l: string) => lines.push(l) };
      const sso = ['sso', 'add', 'acme', '--issuer', 'https://idp.example', '--client-id', 'platform'];
      expect(await runCli([...sso, '--client-secret-file', file], env, io)).toBe(0);
      expect(bodies).toEqual([expect.objectContaining({ clientSecret: 'company-secret' })]);
      expect(lines.join('\n')).not.toContain('company-secret');
      expect(await runCli([...sso, '--client-secret', 's', '--client-secret-file', file], env, io)).toBe(2);
      writeFileSync(file, '\n');
      expect(await runCli([...sso, '--client-secret-file', file], env, io)).toBe(2);
      expect(lines.join('\n')).toContain(`--client-secret-file ${file} is empty`);
      expect(bodies).toHaveLength(1);
    } finally {
      server.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('reads /dev/stdin given by a program that pipes it through a socket (as Node starts a child), not only by a shell pipe', async () => {
    const bodies: unknown[] = [];
    const server = createServer((req, res) => {
      let text = '';
      req.on('data', (chunk) => {
        text += chunk;
      });
      req.on('end', () => {
        bodies.push(JSON.parse(text));
        res.writeHead(201, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ result: 'created', slug: 'acme' }));
      });
    }).listen(0, '127.0.0.1');
    await once(server, 'listening');
    try {
      const child = spawn(
        process.execPath,
        [
          ...['--require', 'tsx/cjs', path.join(__dirname, 'main.ts')],
          ...['sso', 'add', 'acme', '--issuer', 'https://idp.example', '--client-id', 'platform'],
          ...['--client-secret-file', '/dev/stdin'],
        ],
        {
          env: {
            PATH: process.env.PATH,
            AUTH_URL: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
            PLATFORM_INTERNAL_SECRET: 'internal',
            DATA_DIR: '/nonexistent',
          },
          stdio: ['pipe', 'ignore', 'pipe'],
        },
      );
      let said = '';
      child.stderr.on('data', (chunk) => {
        said += chunk;
      });
      child.stdin.end('company-secret\n');
      const [code] = await once(child, 'exit');
      expect({ code, said: said.replace(/^oidc-provider WARNING.*\n/m, '') }).toEqual({ code: 0, said: '' });
      expect(bodies).toEqual([expect.objectContaining({ clientSecret: 'company-secret' })]);
    } finally {
      server.close();
    }
  });
});

describe('an empty secret (`--api-key "$KEY"` with KEY unset)', () => {
  it.each([
    [['providers', 'add', 'openai', '--type', 'openai', '--api-key', ''], '--api-key'],
    [
      ['sso', 'add', 'acme', '--issuer', 'https://idp.example', '--client-id', 'p', '--client-secret', ''],
      '--client-secret',
    ],
  ])(
    'is a usage error, never a provider or identity provider saved without one: %j',
    async (argv, option) => {
      const lines: string[] = [];
      const code = await runCli(
        [...argv, '--json'],
        {
          PLATFORM_URL: 'http://127.0.0.1:9',
          AUTH_URL: 'http://127.0.0.1:9',
          PLATFORM_TOKEN: 'operator',
          PLATFORM_INTERNAL_SECRET: 'internal',
          DATA_DIR: '/nonexistent',
        },
        { out: () => undefined, err: (l) => lines.push(l) },
      );
      expect({ code, said: lines[0] }).toEqual({
        code: 2,
        said: `${option} is empty (an unset variable?): give the secret, or leave the option out`,
      });
    },
  );
});

describe('a provider header', () => {
  it.each([
    ['Authorization: Bearer sk-live-4242', 'Authorization'],
    // a base64 key ends in =: what comes before it is no header name, never sent to the gateway (which would quote it)
    ['api-key: sk-live-4242==', 'api-key'],
  ])(
    'given as curl takes it (`Name: value`, no = after the name) is a usage error naming its name, never its value: %s',
    async (header, name) => {
      const lines: string[] = [];
      const code = await runCli(
        ['providers', 'add', 'p', '--type', 'openai', '--header', header, '--json'],
        { PLATFORM_URL: 'http://127.0.0.1:9', PLATFORM_TOKEN: 'operator', DATA_DIR: '/nonexistent' },
        { out: (l) => lines.push(l), err: (l) => lines.push(l) },
      );
      expect(code).toBe(2);
      expect(lines[0]).toBe(`--header wants NAME=VALUE: the one beginning "${name}" has no = after its name`);
      expect(lines.join('\n')).not.toContain('sk-live-4242');
    },
  );
});

describe('providers test', () => {
  it("waits when the gateway's smoke-test rate refuses a model (429, retry-after), then tests it: never reported failed", async () => {
    const tests: string[] = [];
    // a stand-in for the edge and the gateway: two models on the provider, the second smoke test refused once
    const server = createServer((req, res) => {
      let text = '';
      req.on('data', (chunk) => {
        text += chunk;
      });
      req.on('end', () => {
        const send = (status: number, body: unknown, headers: Record<string, string> = {}) => {
          res.writeHead(status, { 'content-type': 'application/json', ...headers });
          res.end(JSON.stringify(body));
        };
        if (req.url?.startsWith('/llm/v1/models'))
          return send(200, {
            data: ['p/one', 'p/two'].map((id) => ({ id, provider_config: { provider: 'p' } })),
            total: 2,
          });
        if (req.url === '/v2/user/active-org') return send(200, { activeOrgSlug: 'acme' });
        const { modelId } = JSON.parse(text) as { modelId: string };
        tests.push(modelId);
        if (tests.length === 2)
          return send(429, { code: 'RATE_LIMITED', message: 'Too many smoke tests' }, { 'retry-after': '1' });
        send(200, { ok: true, latency_ms: 1 });
      });
    }).listen(0, '127.0.0.1');
    await once(server, 'listening');
    try {
      const lines: string[] = [];
      const code = await runCli(
        ['providers', 'test', 'p', '--org', 'acme', '--json'],
        {
          PLATFORM_URL: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
          PLATFORM_TOKEN: 'operator',
          DATA_DIR: '/nonexistent',
        },
        { out: (l) => lines.push(l), err: (l) => lines.push(l) },
      );
      expect({ code, outcome: JSON.parse(lines.join('\n')) }).toEqual({
        code: 0,
        outcome: {
          result: 'passed',
          data: [
            { model: 'p/one', ok: true, latency_ms: 1 },
            { model: 'p/two', ok: true, latency_ms: 1 },
          ],
        },
      });
      expect(tests).toEqual(['p/one', 'p/two', 'p/two']);
    } finally {
      server.close();
    }
  });

  it('reports a smoke test answered with an empty error (a proxy in front: 502, no body) as that model failed, never a stack trace', async () => {
    const server = createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        res.writeHead(req.url === '/llm/v1/test' ? 502 : 200, { 'content-type': 'application/json' });
        if (req.url?.startsWith('/llm/v1/models'))
          return res.end(
            JSON.stringify({ data: [{ id: 'p/one', provider_config: { provider: 'p' } }], total: 1 }),
          );
        res.end(req.url === '/v2/user/active-org' ? JSON.stringify({ activeOrgSlug: 'acme' }) : '');
      });
    }).listen(0, '127.0.0.1');
    await once(server, 'listening');
    try {
      const lines: string[] = [];
      const code = await runCli(
        ['providers', 'test', 'p', '--org', 'acme', '--json'],
        {
          PLATFORM_URL: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
          PLATFORM_TOKEN: 'operator',
          DATA_DIR: '/nonexistent',
        },
        { out: (l) => lines.push(l), err: () => undefined },
      );
      expect({ code, outcome: JSON.parse(lines.join('\n')) }).toMatchObject({
        code: 1,
        outcome: { result: 'failed', data: [{ model: 'p/one', ok: false, latency_ms: null, error: 502 }] },
      });
    } finally {
      server.close();
    }
  });
});

describe('a credential that cannot be sent (a line break inside it: a file of two lines, a wrapped paste)', () => {
  it.each([
    [
      'PLATFORM_TOKEN',
      ['org', 'create', 'acme', '--json'],
      'The operator credential (--token or PLATFORM_TOKEN)',
    ],
    ['PLATFORM_INTERNAL_SECRET', ['keys', 'list', '--json'], 'PLATFORM_INTERNAL_SECRET'],
  ])('in %s is a usage error naming where it came from, never showing it', async (variable, argv, named) => {
    const lines: string[] = [];
    const code = await runCli(
      argv,
      {
        PLATFORM_URL: 'http://127.0.0.1:59999',
        AUTH_URL: 'http://127.0.0.1:59999',
        PLATFORM_TOKEN: 'operator',
        PLATFORM_INTERNAL_SECRET: 'internal',
        [variable]: 'sk-live-4242\nsecond line',
        DATA_DIR: '/nonexistent',
      },
      { out: (l) => lines.push(l), err: (l) => lines.push(l) },
    );
    expect(code).toBe(2);
    expect(lines[0]).toBe(
      `${named} holds a line break or another character an HTTP header cannot carry (a file of more than one line?)`,
    );
    expect(lines.join('\n')).not.toContain('sk-live-4242');
  });
});

describe('a URL holding a user name and password (https://user:password@host)', () => {
  it('is a usage error naming where it came from, never showing the password (fetch sends no such URL)', async () => {
    const lines: string[] = [];
    const code = await runCli(
      ['providers', 'list', '--json'],
      {
        PLATFORM_URL: 'http://ops:pw-4242@127.0.0.1:59999',
        PLATFORM_TOKEN: 'operator',
        DATA_DIR: '/nonexistent',
      },
      { out: (l) => lines.push(l), err: (l) => lines.push(l) },
    );
    expect(code).toBe(2);
    expect(lines[0]).toBe(
      'PLATFORM_URL holds a user name or password (user:password@), which the CLI never sends: give the URL without it',
    );
    expect(lines.join('\n')).not.toContain('pw-4242');
  });
});

describe('sso add', () => {
  it.each([
    [
      ['--no-client-secret', '--client-secret', 's'],
      'Give --client-secret, --client-secret-file or --no-client-secret, one of them',
    ],
    [
      ['--no-client-secret', '--client-secret-file', '/nonexistent/secret'],
      'Give --client-secret, --client-secret-file or --no-client-secret, one of them',
    ],
    [['--no-org', '--org', 'acme'], 'Give --org or --no-org, not both'],
    // `--org "$ORG"` with ORG unset: once the empty value made the provider the platform's, now it would keep the stored organization unseen
    [
      ['--org', ''],
      "--org is empty (an unset variable?): give the organization, or --no-org for the platform's provider",
    ],
  ])('refuses %j as a usage error, sending nothing', async (options, said) => {
    const lines: string[] = [];
    const code = await runCli(
      ['sso', 'add', 'acme', '--issuer', 'https://idp.example', '--client-id', 'p', ...options, '--json'],
      { AUTH_URL: 'http://127.0.0.1:9', PLATFORM_INTERNAL_SECRET: 'internal', DATA_DIR: '/nonexistent' },
      { out: () => undefined, err: (l) => lines.push(l) },
    );
    expect({ code, said: lines[0] }).toEqual({ code: 2, said });
  });
});

describe('oidc-client add', () => {
  it('sends `confidential` only with --confidential or --public, `name` only with --name, and `postLogoutRedirectUris` only with --post-logout-redirect-uri or --no-post-logout-redirect-uri: left out, auth keeps them (`redirectUris` too, without --redirect-uri); `rotateSecret` only with --rotate-secret', async () => {
    const bodies: unknown[] = [];
    // a stand-in for auth's internal route
    const server = createServer((req, res) => {
      let text = '';
      req.on('data', (chunk) => {
        text += chunk;
      });
      req.on('end', () => {
        bodies.push(JSON.parse(text));
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ result: 'exists', clientId: 'app-1', tokenEndpointAuthMethod: 'none' }));
      });
    }).listen(0, '127.0.0.1');
    await once(server, 'listening');
    try {
      const env = {
        AUTH_URL: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
        PLATFORM_INTERNAL_SECRET: 'internal',
        DATA_DIR: '/nonexistent',
      };
      const io = { out: () => undefined, err: () => undefined };
      const add = ['oidc-client', 'add', 'app-1', '--redirect-uri', 'https://app.example/cb'];
      const bye = ['--post-logout-redirect-uri', 'https://app.example/bye'];
      for (const options of [
        [],
        ['--public'],
        ['--confidential', '--name', 'App'],
        [...bye, '--post-logout-redirect-uri', 'https://app.example/bye2'],
        ['--no-post-logout-redirect-uri'],
        ['--rotate-secret'],
      ])
        expect(await runCli([...add, ...options], env, io)).toBe(0);
      const uris = { redirectUris: ['https://app.example/cb'] };
      // before: `confidential: false` sent without --confidential (the stored secret thrown away), --public unknown;
      // `postLogoutRedirectUris: []` sent without --post-logout-redirect-uri (the stored ones cleared)
      expect(bodies).toEqual([
        uris,
        { ...uris, confidential: false },
        { ...uris, confidential: true, name: 'App' },
        { ...uris, postLogoutRedirectUris: ['https://app.example/bye', 'https://app.example/bye2'] },
        { ...uris, postLogoutRedirectUris: [] },
        // before: an unknown option, and a leaked secret was replaced only by --public then --confidential
        { ...uris, rotateSecret: true },
      ]);
      // without --redirect-uri, auth keeps the stored ones (a new client: its 400 names the field)
      bodies.length = 0;
      for (const options of [[], ['--rotate-secret'], ['--name', 'App']])
        expect(await runCli(['oidc-client', 'add', 'app-1', ...options], env, io)).toBe(0);
      // before: a usage error, so a rotation had to name every redirect URI again
      expect(bodies).toEqual([{}, { rotateSecret: true }, { name: 'App' }]);
    } finally {
      server.close();
    }
  });

  it.each([
    [['--confidential', '--public'], 'Give --confidential or --public, not both'],
    [
      ['--no-post-logout-redirect-uri', '--post-logout-redirect-uri', 'https://app.example/bye'],
      'Give --post-logout-redirect-uri or --no-post-logout-redirect-uri, not both',
    ],
    [
      ['--public', '--rotate-secret'],
      'Give --rotate-secret or --public, not both (a public client has no secret)',
    ],
    // `--name "$NAME"` with NAME unset: once it cleared the name unseen
    [['--name', ''], '--name is empty (an unset variable?): give the name, or leave the option out'],
  ])('refuses %j as a usage error, sending nothing', async (options, said) => {
    const lines: string[] = [];
    const code = await runCli(
      ['oidc-client', 'add', 'app-1', '--redirect-uri', 'https://app.example/cb', ...options, '--json'],
      { AUTH_URL: 'http://127.0.0.1:9', PLATFORM_INTERNAL_SECRET: 'internal', DATA_DIR: '/nonexistent' },
      { out: () => undefined, err: (l) => lines.push(l) },
    );
    expect({ code, said: lines[0] }).toEqual({ code: 2, said });
  });
});
