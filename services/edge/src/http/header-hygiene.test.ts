import type { IncomingHttpHeaders } from 'node:http';
import { readAccessTokenCookie, scrubRequestHeaders, withoutAccessTokenCookie } from './header-hygiene';

/** Node lowercases names into `headers` and keeps the client's spelling in `rawHeaders`. */
const parse = (pairs: Array<[string, string]>) => {
  const raw = pairs.flat();
  const headers: IncomingHttpHeaders = {};
  for (const [name, value] of pairs) headers[name.toLowerCase()] = value;
  return { raw, headers };
};

describe('scrubRequestHeaders', () => {
  it('removes x-platform-* in every spelling but the canonical API key and version', () => {
    const { raw, headers } = parse([
      ['X-Platform-User-Id', 'a'],
      ['x_platform_user_id', 'b'],
      ['X-PLATFORM-PRINCIPAL', 'c'],
      ['x-platform_role', 'd'],
      ['x_platform_api_key', 'e'],
      ['X_Platform-Api-Version', 'f'],
      ['x-platform-api-key', 'wak_x'],
      ['X-Platform-API-Version', '2025-01-15'],
      ['x-platformer', 'kept'],
      ['x-plat', 'kept'],
      ['Keep-Alive', 'timeout=5'],
      ['TE', 'trailers'],
      ['Accept', 'application/json'],
    ]);
    const result = scrubRequestHeaders(raw, headers);
    expect(Object.keys(headers).sort()).toEqual([
      'accept',
      'x-plat',
      'x-platform-api-key',
      'x-platform-api-version',
      'x-platformer',
    ]);
    expect(result).toEqual({ authorizationCount: 0, apiKeyCount: 1 });
  });

  it('counts credential fields in any letter case', () => {
    const { raw, headers } = parse([
      ['Authorization', 'Bearer a'],
      ['AUTHORIZATION', 'Bearer b'],
      ['X-Platform-Api-Key', 'k1'],
      ['x-platform-api-key', 'k2'],
    ]);
    expect(scrubRequestHeaders(raw, headers)).toEqual({ authorizationCount: 2, apiKeyCount: 2 });
  });
});

describe('the access-token cookie', () => {
  it('is read among other cookies, quoted or not', () => {
    expect(readAccessTokenCookie('a=1; access-token=x.y.z; b=2')).toBe('x.y.z');
    expect(readAccessTokenCookie('access-token="x.y.z"')).toBe('x.y.z');
    expect(readAccessTokenCookie('my-access-token=nope')).toBeUndefined();
    expect(readAccessTokenCookie(undefined)).toBeUndefined();
  });

  it('is removed while the other cookies stay', () => {
    expect(withoutAccessTokenCookie('a=1; access-token=x; b=2')).toBe('a=1; b=2');
    expect(withoutAccessTokenCookie('access-token=x')).toBeUndefined();
    expect(withoutAccessTokenCookie('my-access-token=kept')).toBe('my-access-token=kept');
  });
});
