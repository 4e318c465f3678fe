import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import { ORG_SLUG_PATTERN } from '@platform/contracts';
import {
  type Clock,
  Forbidden,
  InvalidInput,
  type Logger,
  NotFound,
  PayloadTooLarge,
  RateLimited,
  resolveRequestId,
  Unauthenticated,
  Unavailable,
} from '@platform/kernel';
import { presentedCredential } from '../auth/credentials';
import type { PrincipalResolver, ResolvedPrincipal } from '../auth/principal-resolver';
import { consumerOf, hasPermission } from '../auth/route-checks';
import type { SessionJwtVerifier } from '../auth/session-jwt';
import type { RateLimits } from '../limits/rate-limits';
import { type RootResolver, upstreamOf } from '../routing/roots';
import type { RouteLookup } from '../routing/route-table';
import {
  deprecationHeaders,
  majorOf,
  parseVersionDate,
  phaseAt,
  resolveImplementation,
  retiredError,
  type VersionEntry,
} from '../versioning/lifecycle';
import type { EdgeMetrics } from './edge-metrics';
import { scrubRequestHeaders, withoutAccessTokenCookie } from './header-hygiene';
import { sendError } from './respond';
import type { UpstreamProxy } from './upstream-proxy';

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
  bodyLimitBytes: number;
  accessLogSampleRate: number;
  /** the edge's own endpoints (/healthz, /readyz, /metrics) */
  own: Record<string, (req: IncomingMessage, res: ServerResponse) => void | Promise<void>>;
}

/** `.`/`..` segments, raw or percent-encoded: refused so no upstream normalizes a path past the edge's checks. */
const DOT_SEGMENT = /(?:^|\/)(?:\.|%2e){1,2}(?:\/|$)/i;
const ORG_IN_PATH = /^\/v2\/orgs\/([^/]*)/i;

const unauthenticated = (message?: string) => new Unauthenticated(message);

/**
 * The edge's request listener: a plain node:http handler (no framework on the hot path). In order:
 * request id; the edge's own endpoints; root; path sanity; version lifecycle (410 for a retired version,
 * 400 for a malformed version header); header hygiene (401 for duplicated credentials); body limit;
 * credential → principal (401); the route's organization (400), permission (403) and rate limit (429);
 * identity headers; credentials the service does not need removed; proxy.
 */
export function createEdgeHandler(deps: EdgeHandlerDeps): RequestListener {
  const { clock, metrics } = deps;

  const finish = (
    req: IncomingMessage,
    res: ServerResponse,
    route: string,
    started: number,
    requestId: string,
  ) => {
    res.once('close', () => {
      const status = res.writableFinished ? res.statusCode : 499;
      const seconds = (performance.now() - started) / 1000;
      metrics.observe(req.method ?? 'GET', route, status, seconds);
      if (deps.accessLogSampleRate > 0 && Math.random() < deps.accessLogSampleRate) {
        deps.logger.info(
          { requestId, method: req.method, route, status, ms: Math.round(seconds * 1000) },
          'request',
        );
      }
    });
  };

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const started = performance.now();
    const requestId = resolveRequestId(req.headers['x-request-id']);
    res.setHeader('x-request-id', requestId);
    const url = req.url ?? '/';

    if (url.charCodeAt(0) !== 47 /* / */) {
      finish(req, res, 'edge:invalid', started, requestId);
      return sendError(
        res,
        new InvalidInput('Request target must be a path', { error: 'InvalidPath', code: 'INVALID_PATH' }),
        requestId,
      );
    }
    const ownPath = url.length <= 9 ? url : url.split('?', 1)[0]!;
    const own = deps.own[ownPath];
    if (own) {
      finish(req, res, `edge:${ownPath}`, started, requestId);
      return own(req, res);
    }

    const match = deps.roots(url, req.headers.host);
    const method = req.method ?? 'GET';
    const route = deps.routes(match.root, method, match.path);
    finish(req, res, route.name, started, requestId);

    if (match.path.includes('.') || match.path.includes('%')) {
      if (DOT_SEGMENT.test(match.path)) {
        return sendError(
          res,
          new InvalidInput('Dot segments are not allowed in the path', {
            error: 'InvalidPath',
            code: 'INVALID_PATH',
          }),
          requestId,
        );
      }
    }

    // Version lifecycle: a retired version processes nothing.
    const versionHeader = req.headers['x-platform-api-version'];
    const major = majorOf(match.path);
    const entry = major ? deps.versions.get(`${match.root}/${major}`) : undefined;
    if (entry) {
      const now = clock.now().getTime();
      const phase = phaseAt(entry, now);
      if (phase === 'retired') {
        res.setHeader('connection', 'close');
        for (const [name, value] of deprecationHeaders(entry))
          if (name === 'link') res.setHeader(name, value);
        return sendError(res, retiredError(entry), requestId);
      }
      let used: string;
      try {
        used = resolveImplementation(
          entry,
          typeof versionHeader === 'string' ? versionHeader : undefined,
          now,
        );
      } catch (err) {
        return sendError(res, err, requestId);
      }
      res.setHeader('x-platform-api-version-used', used);
      req.headers['x-platform-api-version'] = used;
      if (phase === 'deprecated')
        for (const [name, value] of deprecationHeaders(entry)) res.setHeader(name, value);
    } else if (
      versionHeader !== undefined &&
      (typeof versionHeader !== 'string' || !parseVersionDate(versionHeader.trim()))
    ) {
      return sendError(
        res,
        new InvalidInput('X-Platform-API-Version must be a date in the form YYYY-MM-DD', {
          error: 'InvalidApiVersion',
          code: 'HEADER_POLICY_VIOLATION',
        }),
        requestId,
      );
    }

    const headers = req.headers;
    const scrubbed = scrubRequestHeaders(req.rawHeaders, headers);
    if (scrubbed.authorizationCount > 1 || scrubbed.apiKeyCount > 1) {
      return sendError(res, unauthenticated('Send each credential header once'), requestId);
    }

    const contentLength = headers['content-length'];
    if (contentLength !== undefined && Number(contentLength) > deps.bodyLimitBytes) {
      res.setHeader('connection', 'close');
      return sendError(
        res,
        new PayloadTooLarge(`Request body exceeds ${deps.bodyLimitBytes} bytes`),
        requestId,
      );
    }

    let orgSlug: string | null = null;
    if (match.root !== 'legacy') {
      const org = ORG_IN_PATH.exec(match.path);
      if (org) {
        if (!ORG_SLUG_PATTERN.test(org[1]!)) {
          return sendError(res, new NotFound('No such organization', { error: 'OrgNotFound' }), requestId);
        }
        orgSlug = org[1]!;
      }
    }

    // Credential → principal.
    const required = route.access === 'authenticated';
    const presented = presentedCredential(match.root, headers);
    let resolved: ResolvedPrincipal | null = null;
    if (presented.kind === 'invalid') {
      if (required) return sendError(res, unauthenticated(presented.reason), requestId);
    } else if (presented.kind !== 'none') {
      try {
        if (presented.kind === 'jwt') {
          const session = await deps.jwt.verify(presented.token);
          if (session) resolved = await deps.principals.resolve({ kind: 'session', session }, orgSlug);
        } else if (presented.kind === 'access_token') {
          resolved = await deps.principals.resolve({ kind: 'access_token', token: presented.token }, orgSlug);
        } else {
          resolved = await deps.principals.resolve({ kind: 'api_key', key: presented.key }, orgSlug);
        }
      } catch (err) {
        if (required || !(err instanceof Unavailable)) return sendError(res, err, requestId);
      }
      if (!resolved && required) return sendError(res, unauthenticated(), requestId);
    } else if (required) {
      return sendError(res, unauthenticated(), requestId);
    }

    // The route's own checks, in this order: organization, permission, rate limit.
    if (resolved && (route.requireOrg || route.permission || route.rateLimit)) {
      const p = resolved.principal;
      if (route.requireOrg && !p.session.org) {
        return sendError(
          res,
          new InvalidInput('This endpoint needs an active organization', {
            error: 'NO_ORG_CONTEXT',
            code: 'NO_ORG_CONTEXT',
          }),
          requestId,
        );
      }
      if (route.permission && !hasPermission(p, route.permission)) {
        return sendError(
          res,
          new Forbidden(`The ${route.permission} permission is required`, {
            details: { permission: route.permission },
          }),
          requestId,
        );
      }
      if (route.rateLimit) {
        const decision = await deps.rateLimits.consume(route.name, route.rateLimit, consumerOf(p));
        if (!decision.allowed) return sendError(res, new RateLimited(decision.retryAfterSeconds), requestId);
      }
    }

    // Identity for the service; credentials it does not need stay here.
    if (resolved) {
      headers['x-platform-principal'] = resolved.sealed;
      if (resolved.userId) headers['x-platform-user-id'] = resolved.userId;
    }
    if (match.root !== 'legacy') {
      if (headers.authorization !== undefined) delete headers.authorization;
      if (headers['x-legacy-session-token'] !== undefined) delete headers['x-legacy-session-token'];
    }
    if (headers['x-platform-api-key'] !== undefined) delete headers['x-platform-api-key'];
    const cookie = headers.cookie;
    if (cookie?.includes('access-token')) {
      const rest = withoutAccessTokenCookie(cookie);
      if (rest === undefined) delete headers.cookie;
      else headers.cookie = rest;
    }
    headers['x-request-id'] = requestId;
    // Services name their public URLs (OpenAPI `servers`) from the prefix the edge removed.
    if (match.prefix) headers['x-forwarded-prefix'] = match.prefix;
    else if (headers['x-forwarded-prefix'] !== undefined) delete headers['x-forwarded-prefix'];

    req.url = match.upstreamUrl;
    deps.proxy.forward(req, res, upstreamOf(match.root, match.path), requestId);
  };

  return (req, res) => {
    handle(req, res).catch((err) => {
      deps.logger.error({ err, url: req.url }, 'edge request failed');
      if (!res.headersSent) sendError(res, err, undefined);
      else res.destroy();
    });
  };
}
