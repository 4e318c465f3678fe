import { Gone, InvalidInput } from '@platform/kernel';
import type { ApiVersionOverride } from '../config';
import type { RootName } from '../routing/roots';

/**
 * The API-version lifecycle of DESIGN.md "Versioning": one entry per root and major version. The phase
 * at an instant follows from the dates: Retired from `retiredAt`, Deprecated from `deprecatedAt`, else
 * the declared Beta or Stable. Implementation dates say which dated behaviour
 * `X-Platform-API-Version: YYYY-MM-DD` selects.
 */
export type Phase = 'beta' | 'stable' | 'deprecated' | 'retired';

export interface VersionEntry {
  root: RootName;
  major: string;
  status: 'beta' | 'stable';
  /** implementation dates, ascending, as YYYY-MM-DD */
  implementations: string[];
  deprecatedAt: Date | null;
  retiredAt: Date | null;
  /** the version to migrate to, e.g. `v2` */
  successor: string | null;
  migrationDocUrl: string | null;
}

export interface LifecycleSettings {
  legacyV1DeprecatedAt: Date;
  legacyV1RetiredAt: Date;
  legacyV1MigrationDocUrl: string;
  overrides?: Record<string, ApiVersionOverride>;
}

/** The implementation date of every version today. */
const FIRST_IMPLEMENTATION = '2025-01-15';

export function buildVersionTable(settings: LifecycleSettings): Map<string, VersionEntry> {
  const entry = (root: RootName, major: string, extra: Partial<VersionEntry> = {}): VersionEntry => ({
    root,
    major,
    status: 'stable',
    implementations: [FIRST_IMPLEMENTATION],
    deprecatedAt: null,
    retiredAt: null,
    successor: null,
    migrationDocUrl: null,
    ...extra,
  });
  const defaults: VersionEntry[] = [
    entry('base', 'v2'),
    // The gateway's /v1 is its own path convention, not the deprecated platform v1.
    entry('gateway', 'v1'),
    entry('legacy', 'v1', {
      deprecatedAt: settings.legacyV1DeprecatedAt,
      retiredAt: settings.legacyV1RetiredAt,
      successor: 'v2',
      migrationDocUrl: settings.legacyV1MigrationDocUrl,
    }),
    entry('legacy', 'v2'),
  ];
  const table = new Map(defaults.map((e) => [`${e.root}/${e.major}`, e]));
  for (const [key, o] of Object.entries(settings.overrides ?? {})) {
    const [root, major] = key.split('/') as [RootName, string];
    const base = table.get(key) ?? entry(root, major);
    table.set(key, {
      ...base,
      ...(o.status ? { status: o.status } : {}),
      ...(o.implementations ? { implementations: [...o.implementations].sort() } : {}),
      ...(o.deprecatedAt !== undefined
        ? { deprecatedAt: o.deprecatedAt ? new Date(o.deprecatedAt) : null }
        : {}),
      ...(o.retiredAt !== undefined ? { retiredAt: o.retiredAt ? new Date(o.retiredAt) : null } : {}),
      ...(o.successor ? { successor: o.successor } : {}),
      ...(o.migrationDocUrl ? { migrationDocUrl: o.migrationDocUrl } : {}),
    });
  }
  return table;
}

export function phaseAt(entry: VersionEntry, now: number): Phase {
  if (entry.retiredAt && now >= entry.retiredAt.getTime()) return 'retired';
  if (entry.deprecatedAt && now >= entry.deprecatedAt.getTime()) return 'deprecated';
  return entry.status;
}

const MAJOR = /^\/(v\d+)(?:\/|$)/i;

/** The major version a path inside a root names (`/v1/...` → `v1`), lowercased; null when none. */
export function majorOf(path: string): string | null {
  const m = MAJOR.exec(path);
  return m ? m[1]!.toLowerCase() : null;
}

const DAY = /^(\d{4})-(\d{2})-(\d{2})$/;

/** A real calendar date in YYYY-MM-DD form, or null. */
export function parseVersionDate(value: string): string | null {
  const m = DAY.exec(value);
  if (!m) return null;
  const d = new Date(Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3])));
  return d.getUTCFullYear() === Number(m[1]) &&
    d.getUTCMonth() === Number(m[2]) - 1 &&
    d.getUTCDate() === Number(m[3])
    ? value
    : null;
}

let memoDay = Number.NaN;
let memoText = '';
/** YYYY-MM-DD of an instant (UTC), remembered for the current day: this runs on every versioned request. */
function utcDay(now: number): string {
  const day = Math.floor(now / 86_400_000);
  if (day !== memoDay) {
    memoDay = day;
    memoText = new Date(day * 86_400_000).toISOString().slice(0, 10);
  }
  return memoText;
}

const invalidVersion = (message: string, details: Record<string, unknown>) =>
  new InvalidInput(message, { error: 'InvalidApiVersion', code: 'HEADER_POLICY_VIOLATION', details });

/**
 * The implementation a request gets: the newest implementation date not after the requested one
 * (and never one dated in the future); the latest released one without a header.
 * Throws InvalidInput for a malformed header or a date before the first implementation.
 */
export function resolveImplementation(
  entry: VersionEntry,
  requested: string | undefined,
  now: number,
): string {
  let limit = utcDay(now);
  if (requested !== undefined) {
    const day = parseVersionDate(requested.trim());
    if (!day) {
      throw invalidVersion('X-Platform-API-Version must be a date in the form YYYY-MM-DD', {
        header: 'X-Platform-API-Version',
        value: requested.slice(0, 64),
      });
    }
    if (day < limit) limit = day;
  }
  let chosen: string | null = null;
  for (const d of entry.implementations) if (d <= limit) chosen = d;
  if (chosen) return chosen;
  if (requested === undefined) return entry.implementations[0]!;
  throw invalidVersion(
    `No implementation of ${entry.major} exists as of ${requested.trim()}; the earliest is ${entry.implementations[0]}`,
    { header: 'X-Platform-API-Version', value: requested.trim(), earliest: entry.implementations[0] },
  );
}

const httpDate = (d: Date) => d.toUTCString();

/**
 * The successor's path as the client reaches it: `rootPath` is the root's public path on this request (the trusted
 * proxy's prefix and the root's own, '' at the root of a host that serves it), for `Link: rel="successor-version"`
 * and the 410's `targetPath`.
 */
const successorPath = (entry: VersionEntry, rootPath: string) =>
  entry.successor ? `${rootPath}/${entry.successor}` : null;

/** Headers of a deprecated version: the platform notice plus RFC 9745 `Deprecation`, RFC 8594 `Sunset`, `Link`. */
export function deprecationHeaders(entry: VersionEntry, rootPath: string): Array<[string, string]> {
  const headers: Array<[string, string]> = [];
  const retire = entry.retiredAt ? ` It will be retired on ${entry.retiredAt.toISOString()}.` : '';
  const target = entry.successor ? ` Migrate to ${entry.successor}.` : '';
  headers.push(['x-platform-api-deprecation', `API ${entry.major} is deprecated.${retire}${target}`]);
  if (entry.deprecatedAt)
    headers.push(['deprecation', `@${Math.floor(entry.deprecatedAt.getTime() / 1000)}`]);
  if (entry.retiredAt) headers.push(['sunset', httpDate(entry.retiredAt)]);
  const links: string[] = [];
  const successor = successorPath(entry, rootPath);
  if (successor) links.push(`<${successor}>; rel="successor-version"`);
  if (entry.migrationDocUrl) links.push(`<${entry.migrationDocUrl}>; rel="deprecation"; type="text/html"`);
  if (links.length > 0) headers.push(['link', links.join(', ')]);
  return headers;
}

/** The 410 of a retired version, with migration information in the envelope. */
export function retiredError(entry: VersionEntry, rootPath: string): Gone {
  return new Gone(
    `API ${entry.major} was retired on ${entry.retiredAt?.toISOString()}${entry.successor ? `; migrate to ${entry.successor}` : ''}`,
    {
      error: 'ApiVersionRetired',
      code: 'API_VERSION_RETIRED',
      extra: {
        migration: {
          retiredVersion: entry.major,
          retiredAt: entry.retiredAt?.toISOString() ?? null,
          targetVersion: entry.successor,
          targetPath: successorPath(entry, rootPath),
          documentation: entry.migrationDocUrl,
        },
      },
    },
  );
}
