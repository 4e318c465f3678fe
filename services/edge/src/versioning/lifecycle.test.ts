import {
  buildVersionTable,
  deprecationHeaders,
  majorOf,
  parseVersionDate,
  phaseAt,
  resolveImplementation,
} from './lifecycle';

const table = buildVersionTable({
  legacyV1DeprecatedAt: new Date('2024-12-31T00:00:00Z'),
  legacyV1RetiredAt: new Date('2025-12-31T00:00:00Z'),
  legacyV1MigrationDocUrl: 'https://docs.example/migrate',
  overrides: { 'base/v3': { status: 'beta', implementations: ['2026-03-01', '2026-01-10'] } },
});
const at = (iso: string) => Date.parse(iso);

describe('the version lifecycle table', () => {
  it('moves legacy v1 from stable to deprecated to retired at its instants; nothing else is deprecated', () => {
    const legacy = table.get('legacy/v1')!;
    expect(phaseAt(legacy, at('2024-12-30T23:59:59Z'))).toBe('stable');
    expect(phaseAt(legacy, at('2024-12-31T00:00:00Z'))).toBe('deprecated');
    expect(phaseAt(legacy, at('2025-12-30T23:59:59.999Z'))).toBe('deprecated');
    expect(phaseAt(legacy, at('2025-12-31T00:00:00Z'))).toBe('retired');
    for (const key of ['base/v2', 'gateway/v1', 'legacy/v2'])
      expect(phaseAt(table.get(key)!, at('2030-01-01T00:00:00Z'))).toBe('stable');
    expect(phaseAt(table.get('base/v3')!, at('2030-01-01T00:00:00Z'))).toBe('beta');
  });

  it('names the retirement date and the target in the deprecation headers', () => {
    const headers = Object.fromEntries(deprecationHeaders(table.get('legacy/v1')!, '/legacy'));
    expect(headers['x-platform-api-deprecation']).toBe(
      'API v1 is deprecated. It will be retired on 2025-12-31T00:00:00.000Z. Migrate to v2.',
    );
    expect(headers.deprecation).toBe('@1735603200');
    expect(headers.sunset).toBe('Wed, 31 Dec 2025 00:00:00 GMT');
    expect(headers.link).toBe(
      '</legacy/v2>; rel="successor-version", <https://docs.example/migrate>; rel="deprecation"; type="text/html"',
    );
  });

  it('selects the newest implementation not after the requested date nor today', () => {
    const v3 = table.get('base/v3')!;
    const now = at('2026-06-01T12:00:00Z');
    expect(resolveImplementation(v3, undefined, now)).toBe('2026-03-01');
    expect(resolveImplementation(v3, '2026-02-28', now)).toBe('2026-01-10');
    expect(resolveImplementation(v3, '2026-03-01', now)).toBe('2026-03-01');
    expect(resolveImplementation(v3, '2099-01-01', at('2026-02-01T00:00:00Z'))).toBe('2026-01-10');
    expect(() => resolveImplementation(v3, '2026-01-09', now)).toThrow(/earliest is 2026-01-10/);
    expect(() => resolveImplementation(v3, '2026-02-30', now)).toThrow(/YYYY-MM-DD/);
  });

  it('reads the major version from a path, in any case', () => {
    expect(majorOf('/v1/intents')).toBe('v1');
    expect(majorOf('/V2')).toBe('v2');
    expect(majorOf('/v1x/intents')).toBeNull();
    expect(majorOf('/oidc/jwks')).toBeNull();
    expect(parseVersionDate('2024-02-29')).toBe('2024-02-29');
    expect(parseVersionDate('2025-02-29')).toBeNull();
  });
});
