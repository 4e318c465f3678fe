import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import { InvalidInput } from '../errors';
import { refuseRequest } from './client-error';
import type { ObserveListenAnswer } from './metrics';

/**
 * What `listen` checks of every request before its handler: its Host field, how long the rest of an answered
 * request's body is read, and when a request expecting 100-continue is told to send its body.
 */

/**
 * How long the rest of a request body is still read once the request is answered (nginx's lingering_time). Node
 * reads a body its handler left unread (an upload refused before it was read) to its end, to keep the connection for
 * the next request: a client could hold a connection for Node's whole request timeout (300 s) sending a body already
 * refused.
 */
export const LINGERING_TIME_MS = 30_000;

/** Whether `rawHeaders` (name, value, name, value...) holds more than one Host field, in any case. */
function hasSeveralHosts(rawHeaders: string[]): boolean {
  let seen = false;
  for (let i = 0; i < rawHeaders.length; i += 2) {
    const name = rawHeaders[i];
    if (name.length !== 4 || name.toLowerCase() !== 'host') continue;
    if (seen) return true;
    seen = true;
  }
  return false;
}

/**
 * A Host field's value (RFC 9110 7.2: uri-host [":" port], RFC 3986 3.2.2): an IPv6 literal in brackets, or a
 * reg-name (an IPv4 address is one) of unreserved characters, sub-delims and percent-escapes; then a port, if any.
 */
const HOST_VALUE = /^(?:\[[0-9A-Fa-f:.]+\]|(?:[A-Za-z0-9\-._~!$&'()*+,;=]|%[0-9A-Fa-f]{2})*)(?::[0-9]*)?$/;

/** a Host field missing, repeated or malformed: a header of the request, not its body (spec 7.1's code for headers) */
const HOST_REFUSAL = { error: 'BadRequest', code: 'HEADER_POLICY_VIOLATION' };

/**
 * RFC 9112 3.2's 400: an HTTP/1.1 request without Host (Node would answer a bare status line), any request with
 * more than one Host field (Node keeps the first, where a proxy in front may route by the last), or with a Host that
 * is no host and port (Node takes any value: `a b`, `a/b`, `user@a`). The scan of the raw fields costs ~0.1 µs a
 * request; `req.headersDistinct`, which builds an array for every field, ~5 µs.
 */
function hostError(req: IncomingMessage): InvalidInput | undefined {
  if (req.headers.host === undefined)
    return req.httpVersionMajor === 1 && req.httpVersionMinor === 1
      ? new InvalidInput('An HTTP/1.1 request must carry a Host header', HOST_REFUSAL)
      : undefined;
  if (hasSeveralHosts(req.rawHeaders))
    return new InvalidInput('A request must carry one Host header, not several', HOST_REFUSAL);
  if (!HOST_VALUE.test(req.headers.host))
    return new InvalidInput(
      'The Host header must be a host name or IP address, with a port or not',
      HOST_REFUSAL,
    );
  return undefined;
}

/**
 * `handler` behind `hostError`, answered in the envelope and counted as `observe` says. The refusal closes the
 * connection: a request the client pipelined behind it, which Node still hands over, is not run (its answer could
 * never be sent, and the client may send it again); it is dropped with the connection.
 */
export function requiringHost(handler: RequestListener, observe?: ObserveListenAnswer): RequestListener {
  const closing = new WeakSet<object>();
  return (req, res) => {
    if (closing.has(req.socket)) return;
    const error = hostError(req);
    if (!error) return handler(req, res);
    closing.add(req.socket);
    refuseRequest(req, res, error, observe);
  };
}

/** Whether `req`'s framing announces a body (a Content-Length other than 0, or a Transfer-Encoding). */
function hasBody(req: IncomingMessage): boolean {
  const length = req.headers['content-length'];
  return (length !== undefined && length !== '0') || req.headers['transfer-encoding'] !== undefined;
}

/**
 * `handler`, the rest of whose request's body is read for `lingeringTimeMs` at most once the request is answered
 * (then the connection closes): a client cannot hold a connection for as long as it keeps sending a body already
 * refused. Looked at only for requests with a body.
 */
export function lingering(handler: RequestListener, lingeringTimeMs: number): RequestListener {
  const bounded = (req: IncomingMessage) => {
    if (req.complete) return;
    const { socket } = req;
    // Node ends neither the request nor its stream when the socket of an answered request closes: the timer stops
    // with the socket too, or it would keep the request (~4 KB) for the lingering time after its client left
    const stop = () => {
      clearTimeout(timer);
      req.off('end', stop);
      socket.off('close', stop);
    };
    const timer = setTimeout(() => {
      stop();
      if (!req.complete) socket.destroy();
    }, lingeringTimeMs);
    timer.unref();
    req.once('end', stop);
    socket.once('close', stop);
  };
  return (req, res) => {
    if (hasBody(req)) res.once('finish', () => bounded(req));
    handler(req, res);
  };
}

/**
 * A request expecting 100-continue is told to send its body once its handler reads it, not before: one refused
 * first (a missing credential, an unknown route, a body too large by its Content-Length) is answered at once, and
 * its client does not upload a body for nothing. Node would send 100 Continue before the handler runs; it closes the
 * connection after an answer without one (the body may follow it or not).
 */
function continueOnRead(req: IncomingMessage, res: ServerResponse): void {
  const message = req as IncomingMessage & { _read(size: number): void };
  const read = message._read;
  let asked = false;
  message._read = (size) => {
    if (!asked && !res.headersSent) res.writeContinue();
    asked = true;
    read.call(message, size);
  };
}

/**
 * Told to a request expecting 100-continue: with a body, once its handler reads it; without one, at once (RFC 9110
 * 10.1.1 allows either), as Node did, since Node closes the connection after an answer without 100 Continue (a
 * client that sets Expect on every request would lose its connection at each GET).
 */
export function continueWhenRead(req: IncomingMessage, res: ServerResponse): void {
  if (hasBody(req)) continueOnRead(req, res);
  else res.writeContinue();
}
