import { HELP, parse } from './cli';

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
