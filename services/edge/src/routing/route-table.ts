import type { RootName } from './roots';

/** Who may call a route: anyone (credentials are still read when present) or an authenticated caller. */
export type Access = 'public' | 'authenticated';

export interface RateLimitRule {
  /** requests allowed per window, per consumer */
  points: number;
  durationSeconds: number;
}

/**
 * The edge's checks for one route, applied in this order after authentication:
 * active organization (400 NO_ORG_CONTEXT), permission (403), rate limit (429).
 */
export interface RouteRule {
  root: RootName;
  method: string;
  /** path inside the root; `:name` matches one segment */
  path: string;
  access?: Access;
  requireOrg?: boolean;
  permission?: string;
  rateLimit?: RateLimitRule;
}

/** A matched rule, compiled: `name` labels metrics and keys the rate limiter. */
export interface CompiledRoute {
  name: string;
  access: Access;
  requireOrg: boolean;
  permission: string | null;
  rateLimit: RateLimitRule | null;
}

/** Default access per root when no rule matches: the legacy root validates its own credentials. */
export const ROOT_ACCESS: Record<RootName, Access> = {
  base: 'authenticated',
  gateway: 'authenticated',
  legacy: 'public',
};

/** The route table. Add a line to protect, open or rate-limit a route. */
export const ROUTES: RouteRule[] = [
  { root: 'base', method: 'POST', path: '/v2/login/anonymous', access: 'public' },
  { root: 'base', method: 'GET', path: '/oidc/jwks', access: 'public' },
  { root: 'base', method: 'GET', path: '/', access: 'public' },
  // Each root's OpenAPI document, served by the service behind it.
  { root: 'base', method: 'GET', path: '/openapi.json', access: 'public' },
  { root: 'gateway', method: 'GET', path: '/openapi.json', access: 'public' },
  { root: 'legacy', method: 'GET', path: '/openapi.json', access: 'public' },
  {
    root: 'gateway',
    method: 'GET',
    path: '/v1/quotas/usage',
    requireOrg: true,
    permission: 'models:read',
    rateLimit: { points: 60, durationSeconds: 60 },
  },
  // llm-gateway's inference (its own quotas are the gateway's, enforced per organization and user).
  {
    root: 'gateway',
    method: 'POST',
    path: '/v1/chat/completions',
    requireOrg: true,
    permission: 'models:read',
  },
  { root: 'gateway', method: 'POST', path: '/v1/embeddings', requireOrg: true, permission: 'models:read' },
  { root: 'gateway', method: 'POST', path: '/v1/rerank', requireOrg: true, permission: 'models:read' },
];

/**
 * Services route case-insensitively and ignore a trailing slash (express defaults), so matching here
 * does the same: otherwise `/V1/quotas/usage/` would reach the service without the route's checks.
 */
export function normalizeRoutePath(path: string): string {
  let end = path.length;
  while (end > 1 && path.charCodeAt(end - 1) === 47) end--;
  return (end === path.length ? path : path.slice(0, end)).toLowerCase();
}

export type RouteLookup = (root: RootName, method: string, path: string) => CompiledRoute;

export function compileRoutes(rules: RouteRule[] = ROUTES): RouteLookup {
  const exact = new Map<string, CompiledRoute>();
  const patterns: Array<{ root: RootName; method: string; segments: string[]; route: CompiledRoute }> = [];
  const defaults = {} as Record<RootName, CompiledRoute>;
  for (const root of Object.keys(ROOT_ACCESS) as RootName[]) {
    defaults[root] = {
      name: root,
      access: ROOT_ACCESS[root],
      requireOrg: false,
      permission: null,
      rateLimit: null,
    };
  }
  for (const rule of rules) {
    const method = rule.method.toUpperCase();
    const path = normalizeRoutePath(rule.path);
    const route: CompiledRoute = {
      name: `${rule.root} ${method} ${rule.path}`,
      access: rule.access ?? 'authenticated',
      requireOrg: rule.requireOrg ?? false,
      permission: rule.permission ?? null,
      rateLimit: rule.rateLimit ?? null,
    };
    if (path.includes('/:')) patterns.push({ root: rule.root, method, segments: path.split('/'), route });
    else exact.set(`${rule.root} ${method} ${path}`, route);
  }

  return (root, method, rawPath) => {
    const m = method === 'HEAD' ? 'GET' : method;
    const path = normalizeRoutePath(rawPath);
    const hit = exact.get(`${root} ${m} ${path}`);
    if (hit) return hit;
    if (patterns.length > 0) {
      const segments = path.split('/');
      for (const p of patterns) {
        if (p.root !== root || p.method !== m || p.segments.length !== segments.length) continue;
        if (p.segments.every((s, i) => (s.startsWith(':') ? segments[i] !== '' : s === segments[i])))
          return p.route;
      }
    }
    return defaults[root];
  };
}
