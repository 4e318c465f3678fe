import { parse } from './cli';

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
