import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import { API_SCOPE, ORG_SLUG_PATTERN } from '@platform/contracts';
import {
  type AppError,
  type Clock,
  Forbidden,
  type ForwardedView,
  forwardedView,
  InvalidInput,
  type Logger,
  NotFound,
  noOrgContext,
  PayloadTooLarge,
  RateLimited,
  resolveRequestId,
  type TrustProxy,
  Unauthenticated,
  Unavailable,
} from '@platform/kernel';
import { type PresentedCredential, presentedCredential } from '../auth/credentials';
import { csrfError, SAFE_METHODS } from '../auth/csrf';
import type { PrincipalResolver, ResolvedPrincipal } from '../auth/principal-resolver';
import { consumerOf, hasPermission } from '../auth/route-checks';
import type { SessionJwtVerifier } from '../auth/session-jwt';
import type { RateLimits } from '../limits/rate-limits';
import { type RootMatch, type RootResolver, upstreamOf } from '../routing/roots';
import type { CompiledRoute, RouteLookup } from '../routing/route-table';
import {
  deprecationHeaders,
  majorOf,
  parseVersionDate,
  phaseAt,
  resolveImplementation,
  retiredError,
  type VersionEntry,
} from '../versioning/lifecycle';
import { letPageReadErrors } from './cross-origin-errors';
import type { EdgeMetrics } from './edge-metrics';
import { dropConnectionListed, scrubRequestHeaders, withoutAccessTokenCookie } from './header-hygiene';
import { isPrivateServicePath, loggedPath, privatePathError, requestTargetError } from './request-target';
import { sendError } from './respond';
import type { SecurityHeaders } from './security-headers';
import type { UpstreamProxy } from './undici-proxy';

export interface EdgeHandlerDeps {
  clock: Clock;
  logger: Logger;
  roots: RootResolver;
  routes: RouteLookup;
  versions: Map<string, VersionEntry>;
  jwt: SessionJwtVerifier;
  principals: PrincipalResolver;
  rateLimits: RateLimits;
  proxy: UpstreamProxy;
  metrics: EdgeMetrics;
  securityHeaders: SecurityHeaders;
  /** TRUST_PROXY: whose X-Forwarded-* the edge believes */
  trustProxy: TrustProxy;
  bodyLimitBytes: number;
  /** the body limit of upload routes (the route table's `upload`) */
  uploadLimitBytes: number;
  accessLogSampleRate: number;
}

const ORG_IN_PATH = /^\/v2\/orgs\/([^/]+)/i;

/** One request as it moves through the steps. */
interface Exchange {
  req: IncomingMessage;
  res: ServerResponse;
  requestId: string;
  method: string;
  view: ForwardedView;
  match: RootMatch;
  route: CompiledRoute;
}

/**
 * The root's path as the client reached it: the prefix a trusted proxy removed (a plain path or none: forwardedView),
 * then the root's own (`/llm`, `/legacy`; '' at the root of
 * a host that serves it). Services name their public URLs from it (X-Forwarded-Prefix), and the version lifecycle its
 * successor's path.
 */
const publicRootPath = ({ view, match }: Exchange): string => `${view.prefix}${match.prefix}`;

/**
 * Version lifecycle: a retired version processes nothing (410); the implementation date used is
 * answered and forwarded; a malformed version header on a root without a table is a 400.
 */
function applyVersionLifecycle(
  x: Exchange,
  versions: Map<string, VersionEntry>,
  clock: Clock,
): AppError | unknown | null {
  const { req, res, match } = x;
  const versionHeader = req.headers['x-platform-api-version'];
  const major = majorOf(match.path);
  const entry = major ? versions.get(`${match.root}/${major}`) : undefined;
  if (entry) {
    const now = clock.now().getTime();
    const phase = phaseAt(entry, now);
    if (phase === 'retired') {
      res.setHeader('connection', 'close');
      const rootPath = publicRootPath(x);
      for (const [name, value] of deprecationHeaders(entry, rootPath))
        if (name === 'link') res.setHeader(name, value);
      return retiredError(entry, rootPath);
    }
    let used: string;
    try {
      used = resolveImplementation(entry, typeof versionHeader === 'string' ? versionHeader : undefined, now);
    } catch (err) {
      return err;
    }
    res.setHeader('x-platform-api-version-used', used);
    req.headers['x-platform-api-version'] = used;
    if (phase === 'deprecated')
      for (const [name, value] of deprecationHeaders(entry, publicRootPath(x))) res.setHeader(name, value);
    return null;
  }
  if (
    versionHeader !== undefined &&
    (typeof versionHeader !== 'string' || !parseVersionDate(versionHeader.trim()))
  ) {
    return new InvalidInput('X-Platform-API-Version must be a date in the form YYYY-MM-DD', {
      error: 'InvalidApiVersion',
      code: 'HEADER_POLICY_VIOLATION',
    });
  }
  return null;
}

/**
 * Header hygiene (client `x-platform-*` removed, duplicated credentials refused), the body's transfer coding and the
 * body limit. Node decodes `chunked` only: a body also coded otherwise (`gzip, chunked`) would reach the service as
 * plain bytes once the edge re-frames it, so it is refused (RFC 9112 6.1).
 */
function checkHeaders(x: Exchange, bodyLimitBytes: number): AppError | null {
  const { req, res } = x;
  const scrubbed = scrubRequestHeaders(req.rawHeaders, req.headers);
  if (scrubbed.authorizationCount > 1 || scrubbed.apiKeyCount > 1) {
    return new Unauthenticated('Send each credential header once');
  }
  const coding = req.headers['transfer-encoding'];
  if (coding !== undefined && coding.trim().toLowerCase() !== 'chunked') {
    return new InvalidInput('Transfer-Encoding must be chunked: no other transfer coding is supported', {
      error: 'BadRequest',
      code: 'HEADER_POLICY_VIOLATION',
    });
  }
  const contentLength = req.headers['content-length'];
  if (contentLength !== undefined && Number(contentLength) > bodyLimitBytes) {
    res.setHeader('connection', 'close');
    return new PayloadTooLarge(`Request body exceeds ${bodyLimitBytes} bytes`);
  }
  return null;
}

/** The organization named by `/v2/orgs/:orgSlug/...` (not on the legacy root); a malformed slug is a 404. */
function orgInPath(match: RootMatch): { orgSlug: string | null } | NotFound {
  if (match.root === 'legacy') return { orgSlug: null };
  const org = ORG_IN_PATH.exec(match.path);
  if (!org) return { orgSlug: null };
  if (!ORG_SLUG_PATTERN.test(org[1]!)) return new NotFound('No such organization', { error: 'OrgNotFound' });
  return { orgSlug: org[1]! };
}

/**
 * An application's access token without the `api` scope (decision 0109): on an authenticated route a 403 naming the
 * scope; on a public one it is no credential (anonymous), so the account pages cannot be driven with it either.
 */
const insufficientScope = (route: CompiledRoute) =>
  route.access === 'authenticated'
    ? new Forbidden(
        `The ${API_SCOPE} scope is required: this application's access token may only read userinfo`,
        {
          error: 'INSUFFICIENT_SCOPE',
          code: 'INSUFFICIENT_SCOPE',
          details: { scope: API_SCOPE },
        },
      )
    : null;

/** Credential → principal. Null: anonymous (allowed on public routes only). */
async function authenticate(
  presented: PresentedCredential,
  orgSlug: string | null,
  route: CompiledRoute,
  deps: Pick<EdgeHandlerDeps, 'jwt' | 'principals'>,
): Promise<ResolvedPrincipal | null | AppError | unknown> {
  const required = route.access === 'authenticated';
  if (presented.kind === 'none') return required ? new Unauthenticated() : null;
  if (presented.kind === 'invalid') return required ? new Unauthenticated(presented.reason) : null;
  let resolved: ResolvedPrincipal | null = null;
  try {
    if (presented.kind === 'jwt') {
      const session = await deps.jwt.verify(presented.token);
      if (session) {
        resolved = await deps.principals.resolve({ kind: 'session', session }, orgSlug);
        // After resolving, so that a revoked token is still a 401.
        if (resolved && !session.api && !route.appToken) return insufficientScope(route);
      }
    } else if (presented.kind === 'access_token') {
      resolved = await deps.principals.resolve({ kind: 'access_token', token: presented.token }, orgSlug);
    } else {
      resolved = await deps.principals.resolve({ kind: 'api_key', key: presented.key }, orgSlug);
    }
  } catch (err) {
    // Auth unreachable on a public route: serve the request anonymously rather than fail it.
    if (required || !(err instanceof Unavailable)) return err;
  }
  if (!resolved && required) return new Unauthenticated();
  return resolved;
}

/** The route's own checks, in this order: organization (400), permission (403), rate limit (429). */
async function checkRoute(
  route: CompiledRoute,
  resolved: ResolvedPrincipal,
  rateLimits: RateLimits,
): Promise<AppError | null> {
  const p = resolved.principal;
  if (route.requireOrg && !p.session.org) {
    return noOrgContext();
  }
  if (route.permission && !hasPermission(p, route.permission)) {
    return new Forbidden(`The ${route.permission} permission is required`, {
      details: { permission: route.permission },
    });
  }
  if (route.rateLimit) {
    const decision = await rateLimits.consume(route.name, route.rateLimit, consumerOf(p));
    if (!decision.allowed) return new RateLimited(decision.retryAfterSeconds);
  }
  return null;
}

/**
 * What the service receives: the sealed identity, no credential it does not need, the request id,
 * and X-Forwarded-* as the edge saw the client (a client's own forwarding headers only when it is a
 * trusted proxy), so services never believe what a client claims about its address, host or scheme.
 */
function prepareUpstreamRequest(x: Exchange, resolved: ResolvedPrincipal | null): void {
  const { req, match, view, requestId } = x;
  const headers = req.headers;
  dropConnectionListed(headers);
  if (resolved) {
    headers['x-platform-principal'] = resolved.sealed;
    if (resolved.userId) headers['x-platform-user-id'] = resolved.userId;
  }
  if (match.root !== 'legacy') {
    const clientSecret = x.route.clientBasic && /^basic /i.test(headers.authorization ?? '');
    if (headers.authorization !== undefined && !clientSecret) delete headers.authorization;
    if (headers['x-legacy-session-token'] !== undefined) delete headers['x-legacy-session-token'];
  }
  if (headers['x-platform-api-key'] !== undefined) delete headers['x-platform-api-key'];
  // where the edge reads x-api-key as a credential, it never goes further (llm-gateway decision 0111)
  if (x.route.anthropicApiKey && headers['x-api-key'] !== undefined) delete headers['x-api-key'];
  const cookie = headers.cookie;
  if (cookie?.includes('access-token')) {
    const rest = withoutAccessTokenCookie(cookie);
    if (rest === undefined) delete headers.cookie;
    else headers.cookie = rest;
  }
  headers['x-request-id'] = requestId;

  const peer = req.socket.remoteAddress ?? '';
  const forwardedFor = view.fromTrustedProxy ? headers['x-forwarded-for'] : undefined;
  headers['x-forwarded-for'] = forwardedFor ? `${forwardedFor}, ${peer}` : peer;
  headers['x-forwarded-proto'] = view.protocol;
  if (view.host !== undefined) headers['x-forwarded-host'] = view.host;
  else delete headers['x-forwarded-host'];
  // Services name their public URLs (OpenAPI `servers`) from the prefixes removed before them.
  const prefix = publicRootPath(x);
  if (prefix) headers['x-forwarded-prefix'] = prefix;
  else if (headers['x-forwarded-prefix'] !== undefined) delete headers['x-forwarded-prefix'];
  req.url = match.upstreamUrl;
}

/**
 * The edge's request listener: a plain node:http handler (no framework on the hot path). Named steps,
 * in order: request id and security headers; request target (400: no fragment, percent-encoded path,
 * no dot segments); root and route (with it, whether a page of another origin reads the edge's own errors);
 * services' private paths (404); version lifecycle (410/400); header hygiene, transfer coding and body limit
 * (401/400/413); credential → principal (401); CSRF for cookie sessions (403); the route's organization,
 * permission and rate limit (400/403/429); the upstream request; proxy.
 */
export function createEdgeHandler(deps: EdgeHandlerDeps): RequestListener {
  const { clock, metrics, logger } = deps;

  /** Metrics for every answer; a log line for every answer >= 400 and a sample of the others. */
  const observe = (
    req: IncomingMessage,
    res: ServerResponse,
    route: string,
    started: number,
    requestId: string,
  ) => {
    // The target as the client sent it: req.url is rewritten for the upstream before the answer ends.
    const url = req.url ?? '/';
    res.once('close', () => {
      const status = res.writableFinished ? res.statusCode : 499;
      const seconds = (performance.now() - started) / 1000;
      metrics.observe(req.method ?? 'GET', route, status, seconds);
      if (status >= 400 || (deps.accessLogSampleRate > 0 && Math.random() < deps.accessLogSampleRate)) {
        const line = {
          requestId,
          method: req.method,
          path: loggedPath(url),
          route,
          status,
          ms: Math.round(seconds * 1000),
        };
        if (status >= 500) logger.warn(line, 'request');
        else logger.info(line, 'request');
      }
    });
  };

  const handle = async (req: IncomingMessage, res: ServerResponse, requestId: string): Promise<void> => {
    const started = performance.now();
    res.setHeader('x-request-id', requestId);
    const view = forwardedView(req, deps.trustProxy);
    deps.securityHeaders.apply(res, view.protocol === 'https');
    const url = req.url ?? '/';

    const targetError = requestTargetError(url);
    if (targetError) {
      observe(req, res, 'edge:invalid', started, requestId);
      return sendError(res, targetError, requestId);
    }
    // the host the client asked for: a trusted proxy's X-Forwarded-Host (it may rewrite Host), else Host
    const match = deps.roots(url, view.host);
    const method = req.method ?? 'GET';
    const route = deps.routes(match.root, method, match.path, req.headers);
    observe(req, res, route.name, started, requestId);
    if (route.crossOriginErrors) letPageReadErrors(req, res);
    if (isPrivateServicePath(match.path)) return sendError(res, privatePathError(match.path), requestId);

    const x: Exchange = { req, res, requestId, method, view, match, route };
    const versionError = applyVersionLifecycle(x, deps.versions, clock);
    if (versionError) return sendError(res, versionError, requestId);
    const bodyLimit = route.upload ? deps.uploadLimitBytes : deps.bodyLimitBytes;
    const headerError = checkHeaders(x, bodyLimit);
    if (headerError) return sendError(res, headerError, requestId);
    const org = orgInPath(match);
    if (org instanceof NotFound) return sendError(res, org, requestId);

    const presented = presentedCredential(match.root, req.headers, route);
    const resolved = await authenticate(presented, org.orgSlug, route, deps);
    if (resolved instanceof Error) return sendError(res, resolved, requestId);
    const principal = resolved as ResolvedPrincipal | null;
    // A cross-site page cannot add an Authorization header without a preflight: only a request the
    // cookie alone authenticates needs the CSRF token (on the legacy root Authorization is legacy's).
    // Routes the table lists as public (auth's pages, OIDC endpoints) check their own per-form tokens.
    if (
      principal &&
      route.csrfHeader &&
      presented.kind === 'jwt' &&
      presented.fromCookie &&
      !req.headers.authorization
    ) {
      const csrf = csrfError(method, req.headers);
      if (csrf) return sendError(res, csrf, requestId);
    }
    if (principal && (route.requireOrg || route.permission || route.rateLimit)) {
      const routeError = await checkRoute(route, principal, deps.rateLimits);
      if (routeError) return sendError(res, routeError, requestId);
    }

    prepareUpstreamRequest(x, principal);
    // A change a client makes through auth (an organization created, the active one switched, a role given) is
    // seen by its own next request: what the edge cached for its credential is dropped once auth has answered,
    // without waiting for the bus's membership event, which reaches the edge some milliseconds later.
    const onAnswer =
      principal && match.root === 'base' && !SAFE_METHODS.has(method)
        ? () => deps.principals.forget(principal)
        : undefined;
    deps.proxy.forward(req, res, upstreamOf(match.root, match.path), requestId, bodyLimit, onAnswer);
  };

  return (req, res) => {
    const requestId = resolveRequestId(req.headers['x-request-id']);
    handle(req, res, requestId).catch((err) => {
      logger.error(
        { err, requestId, method: req.method, path: loggedPath(req.url ?? '/') },
        'edge request failed',
      );
      if (!res.headersSent) sendError(res, err, requestId);
      else res.destroy();
    });
  };
}
