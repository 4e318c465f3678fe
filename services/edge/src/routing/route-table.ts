import type { IncomingHttpHeaders } from 'node:http';
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
  /** a file upload: its body may reach UPLOAD_BODY_LIMIT_BYTES instead of BODY_LIMIT_BYTES (the service checks its own limit) */
  upload?: true;
  /** an application's access token without the `api` scope is accepted here (userinfo; decision 0109) */
  appToken?: true;
  /** Anthropic's Messages API: an organization API key may come as `x-api-key`, never forwarded (llm-gateway 0111) */
  anthropicApiKey?: true;
  /**
   * an OPTIONS rule that matches CORS preflights alone (OPTIONS with Access-Control-Request-Method): browsers send
   * them without credentials, so a `public` one lets them reach the service while a plain OPTIONS still needs one.
   * The path's requests then get the edge's own errors with CORS fields (`CompiledRoute.crossOriginErrors`)
   */
  preflight?: true;
  /**
   * OAuth's token endpoints: an `Authorization: Basic` header is the client's own credential (`client_secret_basic`),
   * forwarded to the service, where every other Authorization header is the edge's and goes no further
   */
  clientBasic?: true;
}

/** A matched rule, compiled: `name` labels metrics and keys the rate limiter. */
export interface CompiledRoute {
  name: string;
  access: Access;
  requireOrg: boolean;
  permission: string | null;
  rateLimit: RateLimitRule | null;
  /**
   * whether a request the `access-token` cookie alone authenticates needs the CSRF header: every
   * route but those the table lists as public (auth's forms and OIDC endpoints check their own tokens)
   */
  csrfHeader: boolean;
  /** whether the body limit is the upload one (UPLOAD_BODY_LIMIT_BYTES) */
  upload: boolean;
  /** whether an application's access token without the `api` scope is accepted (only userinfo) */
  appToken: boolean;
  /** whether an organization API key is taken from `x-api-key` too (Anthropic's Messages API routes only) */
  anthropicApiKey: boolean;
  /** whether an `Authorization: Basic` header (an OAuth client's secret) is forwarded */
  clientBasic: boolean;
  /**
   * whether a page of another origin may read the edge's own errors here (http/cross-origin-errors.ts): the paths a
   * `preflight` rule names, which an application's page calls from its own origin
   */
  crossOriginErrors: boolean;
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
  // Password accounts (auth limits these per account and client address itself).
  { root: 'base', method: 'POST', path: '/v2/signup', access: 'public' },
  { root: 'base', method: 'POST', path: '/v2/login', access: 'public' },
  { root: 'base', method: 'POST', path: '/v2/login/refresh', access: 'public' },
  { root: 'base', method: 'POST', path: '/v2/email/verify', access: 'public' },
  { root: 'base', method: 'POST', path: '/v2/password/forgot', access: 'public' },
  { root: 'base', method: 'POST', path: '/v2/password/reset', access: 'public' },
  // Sign-in pages: auth checks their session cookie and per-form CSRF tokens itself.
  { root: 'base', method: 'GET', path: '/account/verify-email', access: 'public' },
  { root: 'base', method: 'GET', path: '/account/reset-password', access: 'public' },
  { root: 'base', method: 'POST', path: '/account/reset-password', access: 'public' },
  { root: 'base', method: 'GET', path: '/account', access: 'public' },
  { root: 'base', method: 'GET', path: '/account/login', access: 'public' },
  { root: 'base', method: 'POST', path: '/account/login', access: 'public' },
  { root: 'base', method: 'GET', path: '/account/login/mfa', access: 'public' },
  { root: 'base', method: 'POST', path: '/account/login/mfa', access: 'public' },
  { root: 'base', method: 'GET', path: '/account/signup', access: 'public' },
  { root: 'base', method: 'POST', path: '/account/signup', access: 'public' },
  { root: 'base', method: 'GET', path: '/account/forgot-password', access: 'public' },
  { root: 'base', method: 'POST', path: '/account/forgot-password', access: 'public' },
  { root: 'base', method: 'POST', path: '/account/logout', access: 'public' },
  { root: 'base', method: 'POST', path: '/account/profile', access: 'public' },
  { root: 'base', method: 'POST', path: '/account/verification', access: 'public' },
  { root: 'base', method: 'POST', path: '/account/sessions/:id/revoke', access: 'public' },
  { root: 'base', method: 'POST', path: '/account/tokens', access: 'public' },
  { root: 'base', method: 'POST', path: '/account/tokens/:id/revoke', access: 'public' },
  { root: 'base', method: 'GET', path: '/account/mfa', access: 'public' },
  { root: 'base', method: 'POST', path: '/account/mfa', access: 'public' },
  { root: 'base', method: 'POST', path: '/account/mfa/disable', access: 'public' },
  { root: 'base', method: 'GET', path: '/account/delete', access: 'public' },
  { root: 'base', method: 'POST', path: '/account/delete', access: 'public' },
  { root: 'base', method: 'GET', path: '/account/deleted', access: 'public' },
  { root: 'base', method: 'GET', path: '/account/sso/:slug', access: 'public' },
  { root: 'base', method: 'GET', path: '/account/sso/:slug/callback', access: 'public' },
  // The OpenID Connect provider ({base_url}/oidc): clients and browsers call it without a platform credential.
  { root: 'base', method: 'GET', path: '/oidc/.well-known/openid-configuration', access: 'public' },
  { root: 'base', method: 'GET', path: '/oidc/auth', access: 'public' },
  { root: 'base', method: 'POST', path: '/oidc/auth', access: 'public' },
  { root: 'base', method: 'GET', path: '/oidc/auth/:uid', access: 'public' },
  { root: 'base', method: 'POST', path: '/oidc/token', access: 'public', clientBasic: true },
  // userinfo: the one place an application's token without the `api` scope is a credential (decision 0109)
  { root: 'base', method: 'GET', path: '/oidc/me', access: 'public', appToken: true },
  { root: 'base', method: 'POST', path: '/oidc/me', access: 'public', appToken: true },
  { root: 'base', method: 'POST', path: '/oidc/token/revocation', access: 'public', clientBasic: true },
  { root: 'base', method: 'GET', path: '/oidc/session/end', access: 'public' },
  { root: 'base', method: 'POST', path: '/oidc/session/end', access: 'public' },
  { root: 'base', method: 'POST', path: '/oidc/session/end/confirm', access: 'public' },
  { root: 'base', method: 'GET', path: '/oidc/session/end/success', access: 'public' },
  // The endpoints above that an application's page calls from its own origin: the browser asks first, without a
  // credential (auth answers by the origins its clients registered).
  ...[
    '/oidc/.well-known/openid-configuration',
    '/oidc/jwks',
    '/oidc/token',
    '/oidc/token/revocation',
    '/oidc/me',
  ].map((path): RouteRule => ({ root: 'base', method: 'OPTIONS', path, access: 'public', preflight: true })),
  { root: 'base', method: 'GET', path: '/oidc/interaction/:uid', access: 'public' },
  { root: 'base', method: 'POST', path: '/oidc/interaction/:uid/login', access: 'public' },
  { root: 'base', method: 'POST', path: '/oidc/interaction/:uid/confirm', access: 'public' },
  { root: 'base', method: 'POST', path: '/oidc/interaction/:uid/abort', access: 'public' },
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
  // OpenAI's legacy text completions, on the chat path's flow (llm-gateway decision 0115)
  { root: 'gateway', method: 'POST', path: '/v1/completions', requireOrg: true, permission: 'models:read' },
  // the Responses API, served through the chat path (llm-gateway decision 0106)
  { root: 'gateway', method: 'POST', path: '/v1/responses', requireOrg: true, permission: 'models:read' },
  // stored responses (llm-gateway decision 0108): the gateway answers only their maker
  { root: 'gateway', method: 'GET', path: '/v1/responses/:id', requireOrg: true, permission: 'models:read' },
  {
    root: 'gateway',
    method: 'DELETE',
    path: '/v1/responses/:id',
    requireOrg: true,
    permission: 'models:read',
  },
  {
    root: 'gateway',
    method: 'GET',
    path: '/v1/responses/:id/input_items',
    requireOrg: true,
    permission: 'models:read',
  },
  // OpenAI's Conversations API (llm-gateway decision 0110): the gateway answers only their maker
  {
    root: 'gateway',
    method: 'POST',
    path: '/v1/conversations',
    requireOrg: true,
    permission: 'models:read',
  },
  {
    root: 'gateway',
    method: 'GET',
    path: '/v1/conversations/:id',
    requireOrg: true,
    permission: 'models:read',
  },
  {
    root: 'gateway',
    method: 'POST',
    path: '/v1/conversations/:id',
    requireOrg: true,
    permission: 'models:read',
  },
  {
    root: 'gateway',
    method: 'DELETE',
    path: '/v1/conversations/:id',
    requireOrg: true,
    permission: 'models:read',
  },
  {
    root: 'gateway',
    method: 'POST',
    path: '/v1/conversations/:id/items',
    requireOrg: true,
    permission: 'models:read',
  },
  {
    root: 'gateway',
    method: 'GET',
    path: '/v1/conversations/:id/items',
    requireOrg: true,
    permission: 'models:read',
  },
  {
    root: 'gateway',
    method: 'GET',
    path: '/v1/conversations/:id/items/:itemId',
    requireOrg: true,
    permission: 'models:read',
  },
  {
    root: 'gateway',
    method: 'DELETE',
    path: '/v1/conversations/:id/items/:itemId',
    requireOrg: true,
    permission: 'models:read',
  },
  // Anthropic's Messages API, served through the chat path (llm-gateway decision 0111); Anthropic's SDKs send their
  // key as x-api-key, so an organization API key is taken from it here, and here alone
  {
    root: 'gateway',
    method: 'POST',
    path: '/v1/messages',
    requireOrg: true,
    permission: 'models:read',
    anthropicApiKey: true,
  },
  {
    root: 'gateway',
    method: 'POST',
    path: '/v1/messages/count_tokens',
    requireOrg: true,
    permission: 'models:read',
    anthropicApiKey: true,
  },
  { root: 'gateway', method: 'POST', path: '/v1/embeddings', requireOrg: true, permission: 'models:read' },
  { root: 'gateway', method: 'POST', path: '/v1/rerank', requireOrg: true, permission: 'models:read' },
  {
    root: 'gateway',
    method: 'POST',
    path: '/v1/images/generations',
    requireOrg: true,
    permission: 'models:read',
  },
  {
    root: 'gateway',
    method: 'POST',
    path: '/v1/audio/transcriptions',
    requireOrg: true,
    permission: 'models:read',
    upload: true,
  },
  {
    root: 'gateway',
    method: 'POST',
    path: '/v1/audio/translations',
    requireOrg: true,
    permission: 'models:read',
    upload: true,
  },
  { root: 'gateway', method: 'POST', path: '/v1/audio/speech', requireOrg: true, permission: 'models:read' },
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

/** `headers`: the request's, which tell a CORS preflight from a plain OPTIONS (`RouteRule.preflight`) */
export type RouteLookup = (
  root: RootName,
  method: string,
  path: string,
  headers?: IncomingHttpHeaders,
) => CompiledRoute;

/** the method key of `preflight` rules: no request is sent with it */
const PREFLIGHT = 'OPTIONS preflight';

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
      csrfHeader: true,
      upload: false,
      appToken: false,
      anthropicApiKey: false,
      clientBasic: false,
      crossOriginErrors: false,
    };
  }
  const calledByPages = new Set(
    rules.filter((rule) => rule.preflight).map((rule) => `${rule.root} ${normalizeRoutePath(rule.path)}`),
  );
  for (const rule of rules) {
    const method = rule.method.toUpperCase();
    const path = normalizeRoutePath(rule.path);
    const route: CompiledRoute = {
      name: `${rule.root} ${method} ${rule.path}`,
      access: rule.access ?? 'authenticated',
      requireOrg: rule.requireOrg ?? false,
      permission: rule.permission ?? null,
      rateLimit: rule.rateLimit ?? null,
      csrfHeader: rule.access !== 'public',
      upload: rule.upload === true,
      appToken: rule.appToken === true,
      anthropicApiKey: rule.anthropicApiKey === true,
      clientBasic: rule.clientBasic === true,
      crossOriginErrors: calledByPages.has(`${rule.root} ${path}`),
    };
    const key = rule.preflight ? PREFLIGHT : method;
    if (path.includes('/:'))
      patterns.push({ root: rule.root, method: key, segments: path.split('/'), route });
    else exact.set(`${rule.root} ${key} ${path}`, route);
  }

  const find = (root: RootName, m: string, path: string): CompiledRoute | undefined => {
    const hit = exact.get(`${root} ${m} ${path}`);
    if (hit || patterns.length === 0) return hit;
    const segments = path.split('/');
    for (const p of patterns) {
      if (p.root !== root || p.method !== m || p.segments.length !== segments.length) continue;
      if (p.segments.every((s, i) => (s.startsWith(':') ? segments[i] !== '' : s === segments[i])))
        return p.route;
    }
    return undefined;
  };

  return (root, method, rawPath, headers) => {
    const m = method === 'HEAD' ? 'GET' : method;
    const path = normalizeRoutePath(rawPath);
    const preflight = m === 'OPTIONS' && headers?.['access-control-request-method'] !== undefined;
    return (preflight && find(root, PREFLIGHT, path)) || find(root, m, path) || defaults[root];
  };
}
