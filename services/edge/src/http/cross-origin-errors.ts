import type { IncomingMessage, ServerResponse } from 'node:http';

/**
 * CORS on the edge's own errors where an application's page calls the platform from its own origin (the OpenID
 * Connect endpoints the route table lets preflights through to). Auth decides which origins read its answers; but a
 * request the edge refuses itself (a body too large, two credentials, auth unreachable) never reaches auth, and without
 * CORS fields its page saw only an opaque network failure. The edge lets any page read those errors: their body is the
 * envelope, which holds nothing but what the request itself caused, and without `Access-Control-Allow-Credentials` a
 * browser exposes no answer to a request sent with its cookies, so a page reads nothing its own server could not ask.
 * Answers of the service pass as the service made them: auth's refusal of an unregistered origin stays unreadable.
 */

/**
 * A serialized origin (RFC 6454 6.2): scheme, host, optional port. The opaque `null` is no page's own (every sandboxed
 * frame and `file:` page sends it), and what matches nothing here is no origin a browser sends.
 */
const ORIGIN =
  /^[A-Za-z][A-Za-z0-9+.-]*:\/\/(?:\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9\-._~%!$&'()*+,;=]+)(?::[0-9]{1,5})?$/;

/** The fields of the edge's errors a page needs: a 401's Bearer challenge, a 429's wait, the id support asks for. */
const EXPOSED = 'WWW-Authenticate, Retry-After, X-Request-Id';

/** The page origin each answer's own errors are readable by, while its request is handled. */
const readers = new WeakMap<ServerResponse, string>();

/** Lets the page that sent `req` read the edge's own error on `res`, if the edge answers one. */
export function letPageReadErrors(req: IncomingMessage, res: ServerResponse): void {
  const origin = req.headers.origin;
  if (origin !== undefined && ORIGIN.test(origin)) readers.set(res, origin);
}

/** The CORS fields of an error the edge answers itself on `res`: none unless `letPageReadErrors` allowed a page. */
export function setErrorCors(res: ServerResponse): void {
  const origin = readers.get(res);
  if (origin === undefined) return;
  res.setHeader('access-control-allow-origin', origin);
  res.setHeader('access-control-expose-headers', EXPOSED);
  // the answer depends on the Origin sent: a cache keeps one per origin
  res.setHeader('vary', 'Origin');
}
