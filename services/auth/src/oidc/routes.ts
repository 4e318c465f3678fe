import { createPublicKey } from 'node:crypto';
import { InvalidInput, PayloadTooLarge, Unauthenticated, UnsupportedMediaType } from '@platform/kernel';
import express, { type Router } from 'express';
import jwt from 'jsonwebtoken';
import type { Configuration } from 'oidc-provider';
import { revokeSession } from '../accounts/sessions';
import type { AuthContext } from '../context';
import { loadCaller, requireUser, type UserCaller } from '../domain/caller';
import { html, raw, renderPage } from '../pages/html';
import { authenticatesAs, presentedClientId } from './client-authentication';
import { UnreadableClientSecret } from './clients';
import { allowOrigin, clientCors, redirectsTo } from './cors';
import { claimsForScope, claimsOf, grantedScope, type OidcProviderHost } from './provider';

/** The platform session and client a JWT access token of ours names, when its signature and claims hold. */
async function sessionOfAccessToken(
  c: AuthContext,
  token: string,
): Promise<{ sessionId: string; clientId: unknown } | null> {
  let kid: string | undefined;
  try {
    kid = jwt.decode(token, { complete: true })?.header.kid;
  } catch {
    // a header of `typ: JWT` over a payload that is not JSON makes the decoder throw: no token of ours
    return null;
  }
  if (!kid) return null;
  const jwk = (await c.keys.publicKeys()).find((k) => k.kid === kid);
  if (!jwk) return null;
  try {
    const claims = jwt.verify(token, createPublicKey({ key: jwk as never, format: 'jwk' }), {
      algorithms: [jwk.alg as jwt.Algorithm],
      issuer: c.config.JWT_ISSUER,
      audience: c.config.JWT_AUDIENCE,
      clockTimestamp: Math.floor(c.clock.now().getTime() / 1000),
    }) as jwt.JwtPayload;
    return typeof claims.platformSessionId === 'string'
      ? { sessionId: claims.platformSessionId, clientId: claims.client_id }
      : null;
  } catch {
    return null;
  }
}

/** Pages oidc-provider renders itself (errors, the end-session confirmation), in the platform's layout. */
export function providerPages(c: AuthContext): {
  renderError: NonNullable<Configuration['renderError']>;
  logoutSource: NonNullable<NonNullable<Configuration['features']>['rpInitiatedLogout']>['logoutSource'];
} {
  const platformName = c.config.PLATFORM_NAME;
  const respond = (
    ctx: { set(h: Record<string, string>): void; body: unknown },
    title: string,
    body: string,
  ) => {
    const page = renderPage({ platformName, title, body: raw(body) });
    ctx.set(page.headers);
    ctx.body = page.html;
  };
  return {
    async renderError(ctx, out) {
      respond(
        ctx as never,
        'Sign-in problem',
        html`<div class="card"><h1>Something went wrong</h1><p class="lead">${out.error_description ?? out.error}</p><a href="/account">Go to your account</a></div>`
          .html,
      );
    },
    async logoutSource(ctx, form) {
      respond(
        ctx as never,
        'Sign out',
        `<div class="card"><h1>Sign out?</h1><p class="lead">Do you want to sign out of ${html`${platformName}`.html}?</p>${form}<button type="submit" form="op.logoutForm" name="logout" value="yes">Yes, sign me out</button><button type="submit" form="op.logoutForm" class="secondary">No, stay signed in</button></div>`,
      );
    },
  };
}

/**
 * `{base_url}/oidc`: auth's own routes first (userinfo from the edge-verified access token, RFC 7009
 * revocation of JWT access tokens), then node-oidc-provider for the rest.
 */
export function mountOidcRoutes(router: Router, c: AuthContext, host: OidcProviderHost): void {
  const form = express.urlencoded({ extended: false, limit: '16kb' });

  /**
   * The `scope` claim of the caller's token. The edge seals the session, not the JWT's claims, so it is read
   * where the JWT took it from: an application's session is its grant; the platform's own sessions carry the
   * configured scopes; an `at:` token carries none beyond `openid`.
   */
  const scopeOf = async (caller: UserCaller): Promise<string> => {
    if (caller.via !== 'session') return 'openid';
    const { clientId, _id } = caller.holder;
    if (clientId === c.config.PASSWORD_CLIENT_ID) return c.config.PASSWORD_SCOPE;
    if (clientId === c.config.ANONYMOUS_CLIENT_ID) return c.config.ANONYMOUS_SCOPE;
    return grantedScope(await host.provider(), _id);
  };

  /** Whether the pages of `origin` may read the claims `caller`'s token shows: its application's own pages. */
  const callerClientAllows = async (caller: UserCaller, origin: string): Promise<boolean> => {
    if (caller.via !== 'session') return false;
    const client = await host.clients.find(caller.holder.clientId);
    return client !== null && redirectsTo(client.metadata.redirect_uris, origin);
  };

  // The edge verified the Bearer access token (a session JWT) and sealed its principal. The claims follow the
  // token's scope (OpenID Connect Core 5.3.2, 5.4): `sub` always, `email` and `profile` only when granted.
  const userinfo: express.RequestHandler = async (req, res) => {
    const origin = req.headers.origin;
    res.vary('Origin');
    let caller: UserCaller;
    try {
      if (!req.principal) throw new Unauthenticated('A Bearer access token is required');
      caller = requireUser(await loadCaller(c.collections, c.clock, req));
    } catch (err) {
      // RFC 6750 3: the Bearer challenge, as on the edge's own 401s
      if (err instanceof Unauthenticated) res.setHeader('www-authenticate', 'Bearer realm="platform"');
      // the page of a registered application reads why (an expired token: it refreshes it), the challenge too
      if (origin && (await host.clients.someRedirectTo(origin))) {
        allowOrigin(res, origin);
        res.setHeader('access-control-expose-headers', 'WWW-Authenticate');
      }
      throw err;
    }
    const scope = await scopeOf(caller);
    if (origin && (await callerClientAllows(caller, origin))) allowOrigin(res, origin);
    res.setHeader('cache-control', 'no-store');
    res.json(claimsForScope(claimsOf(caller.user), scope));
  };
  router.get('/oidc/me', userinfo);
  router.post('/oidc/me', userinfo);

  /** The client a request names, as registered; null when there is none (or its secret no longer opens). */
  const registeredClient = async (clientId: unknown) => {
    if (typeof clientId !== 'string') return null;
    try {
      return (await host.clients.find(clientId))?.metadata ?? null;
    } catch (err) {
      // the provider logs it, and answers invalid_client, when the request is handed to it
      if (err instanceof UnreadableClientSecret) return null;
      throw err;
    }
  };

  // JWT access tokens are the provider's blind spot: it refuses every structured token (400 unsupported_token_type),
  // so auth answers them. Revoking one ends its platform session and grant.
  router.post('/oidc/token/revocation', form, async (req, res, next) => {
    const token = typeof req.body?.token === 'string' ? req.body.token : '';
    // What the provider takes for a JWT (a JWS or JWE; its own tokens are opaque, without a dot). A repeated
    // token_type_hint is its 400 to answer, as for any token.
    const structured = [3, 5].includes(token.split('.').length);
    if (!structured || Array.isArray(req.body.token_type_hint)) return next();
    const client = await registeredClient(presentedClientId(req));
    // Only a client authenticated as the provider authenticates the client of an opaque token (RFC 7009 2.1: a
    // confidential client by its secret). Anything else is the provider's to answer (a missing or wrong secret: 401
    // invalid_client), and it revokes no JWT.
    if (!client || !authenticatesAs(req, client)) return next();
    const origin = req.headers.origin;
    res.vary('Origin');
    // with an Origin: only as the provider's clientBasedCORS allows, as it refuses the others (400 invalid_request)
    if (origin) {
      const { token_endpoint_auth_method: clientAuthMethod, redirect_uris: redirectUris } = client;
      const cors = clientCors({ clientAuthMethod, redirectUris }, origin);
      if (cors === 'refused') return next();
      if (cors === 'readable') allowOrigin(res, origin);
    }
    // RFC 7009 2.2: an invalid token (expired, altered, not signed by a key of ours) is answered 200 as well, since
    // the client can do nothing about it; so is another client's token, which stays valid (as the provider answers
    // for its own tokens: `features.revocation.allowedPolicy`), so that no answer tells whether a token is valid.
    const found = await sessionOfAccessToken(c, token);
    if (found?.clientId === client.client_id) await revokeSession(c, found.sessionId);
    res.status(200).end();
  });

  // OpenID Connect Core 3.1.2.1 (and RP-Initiated Logout 1.0 2) have these two take a form POST too. oidc-provider
  // takes it only with its session cookie sent cross-site (SameSite=None, so Secure: no cookie at all on a plain-http
  // deployment), and the platform's own session cookie is Lax, which a cross-site POST does not carry. So a POST is
  // answered 303 to the same path with the form as the query: the browser's top-level GET that follows carries the
  // cookies, and is answered as any GET (a signed-in person is recognised, prompt=none works).
  const postedToGet = new Set(['/auth', '/session/end']);
  const FORM = 'application/x-www-form-urlencoded';
  /** of the form, and of the query it becomes (the edge reads an upstream's answer head of 16 KiB at most) */
  const MAX_BYTES = 8 * 1024;
  const smallForm = express.text({ type: FORM, limit: MAX_BYTES });
  const toGet: express.RequestHandler = (req, res, next) => {
    if (!req.is(FORM)) return next(new UnsupportedMediaType(`Send the parameters as ${FORM}, or use GET`));
    smallForm(req, res, (err?: unknown) => {
      if (err) return next(err);
      const at = req.url.indexOf('?');
      const query = new URLSearchParams(at < 0 ? '' : req.url.slice(at + 1));
      const form = new URLSearchParams(typeof req.body === 'string' ? req.body : '');
      // OAuth 2.0 (RFC 6749 3.1): a parameter is sent once
      const twice = [...form.keys()].find((name) => query.has(name));
      if (twice !== undefined) {
        const message = `The parameter ${twice} was sent both in the query and in the body`;
        return next(new InvalidInput(message, { error: 'invalid_request' }));
      }
      for (const [name, value] of form) query.append(name, value);
      const location = `?${query}`;
      if (location.length > MAX_BYTES) {
        return next(new PayloadTooLarge(`The parameters take more than ${MAX_BYTES} bytes as a query`));
      }
      // relative to the path the browser asked for, whatever prefix a proxy removed before it
      res.redirect(303, location);
    });
  };
  /** node-oidc-provider answers it, for the part of the path under `/oidc` (as a mount would give it). */
  const toProvider: express.RequestHandler = (req, res, next) => {
    req.url = req.url.slice('/oidc'.length);
    host.handle(req, res).catch(next);
  };
  // its CORS preflights (the endpoints an application's page calls from its own origin); any other OPTIONS is the
  // router's own answer (200 with Allow)
  router.use('/oidc', async (req, res, next) => {
    const preflight = req.method === 'OPTIONS' && req.headers['access-control-request-method'] !== undefined;
    const callers = preflight && PROVIDER_CORS_PATHS.get(req.path.replace(/(.)\/$/, '$1').toLowerCase());
    if (!callers) return next();
    // A preflight names no client: where tokens travel, it is allowed for the pages some client registered (the
    // request itself is judged by its own client). Any other page gets no CORS headers, and its browser stops.
    const origin = req.headers.origin;
    if (callers === 'registered pages' && !(origin && (await host.clients.someRedirectTo(origin)))) {
      res.vary('Origin');
      res.status(204).end();
      return;
    }
    await host.handle(req, res);
  });
  // Routes of their own, so that another method is a 405 in the envelope with Allow and another path a 404 in it,
  // as everywhere else (the provider answered both with a plain-text 404).
  for (const { path, methods } of PROVIDER_ROUTES) {
    for (const method of methods) {
      const posted = method === 'post' && postedToGet.has(path);
      router[method](`/oidc${path}`, posted ? toGet : toProvider);
    }
  }
}

/**
 * The paths node-oidc-provider answers with the features `provider.ts` turns on, and their methods (GET takes HEAD
 * too). `/oidc/jwks` and `/oidc/me` are auth's own routes (`routes/jwks.ts`, above): only their preflights go to it.
 */
const PROVIDER_ROUTES: ReadonlyArray<{ path: string; methods: ReadonlyArray<'get' | 'post'> }> = [
  { path: '/.well-known/openid-configuration', methods: ['get'] },
  { path: '/.well-known/oauth-authorization-server', methods: ['get'] },
  { path: '/auth', methods: ['get', 'post'] },
  { path: '/auth/:uid', methods: ['get'] },
  { path: '/token', methods: ['post'] },
  { path: '/token/revocation', methods: ['post'] },
  { path: '/request', methods: ['post'] },
  { path: '/session/end', methods: ['get', 'post'] },
  { path: '/session/end/confirm', methods: ['post'] },
  { path: '/session/end/success', methods: ['get'] },
];

/**
 * The provider's endpoints it answers CORS preflights for (OPTIONS with `Access-Control-Request-Method`), and whose
 * pages may call them: any page the public documents, only the pages clients registered those that carry tokens.
 */
const PROVIDER_CORS_PATHS = new Map<string, 'any page' | 'registered pages'>([
  ['/.well-known/openid-configuration', 'any page'],
  ['/.well-known/oauth-authorization-server', 'any page'],
  ['/jwks', 'any page'],
  ['/me', 'registered pages'],
  ['/token', 'registered pages'],
  ['/token/revocation', 'registered pages'],
  ['/request', 'registered pages'],
]);
