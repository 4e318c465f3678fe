import { once } from 'node:events';
import type { IncomingMessage, RequestListener, Server, ServerResponse } from 'node:http';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import { InvalidInput } from './errors';
import { answerClientError, refuseConnect, refuseRequest } from './http/client-error';
import { listenOptionsOf } from './http/listen-options';
import type { ObserveListenAnswer } from './http/metrics';
import type { Logger } from './logger';

export interface RunningServer {
  server: Server;
  port: number;
  url: string;
  /** stops accepting, lets in-flight requests finish (up to `graceMs`), then closes what is left */
  close(graceMs?: number): Promise<void>;
}

/**
 * Largest request head a service accepts: well above the edge's own (Node's 16 KB) plus the principal
 * the edge adds, so a service never answers 431 to a request the edge built and let through.
 */
export const SERVICE_MAX_HEADER_BYTES = 64 * 1024;

/** How long a request head may take to arrive in full (nginx and HAProxy allow 10 to 60 s). */
export const HEADERS_TIMEOUT_MS = 10_000;

/**
 * How long the rest of a request body is still read once the request is answered (nginx's lingering_time). Node
 * reads a body its handler left unread (an upload refused before it was read) to its end, to keep the connection for
 * the next request: a client could hold a connection for Node's whole request timeout (300 s) sending a body already
 * refused.
 */
const LINGERING_TIME_MS = 30_000;

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
function requiringHost(handler: RequestListener, observe?: ObserveListenAnswer): RequestListener {
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
function lingering(handler: RequestListener, lingeringTimeMs: number): RequestListener {
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
 * Listens on host:port (0 picks a free port) with keep-alive settings fit for sitting behind a proxy, and what
 * was noted for `handler` (listen-options.ts: a service app's request and response classes, how it counts answers).
 */
export async function listen(
  handler: RequestListener,
  port: number,
  host = '0.0.0.0',
  options: { maxHeaderSize?: number; headersTimeoutMs?: number; lingeringTimeMs?: number } = {},
): Promise<RunningServer> {
  // what the handler counts its answers with counts the server's own (kernel http/metrics.ts)
  const { messages, observe } = listenOptionsOf(handler);
  const served = requiringHost(lingering(handler, options.lingeringTimeMs ?? LINGERING_TIME_MS), observe);
  const server = createServer(
    {
      ...messages,
      keepAlive: true,
      // checked by `served`, which answers in the envelope
      requireHostHeader: false,
      maxHeaderSize: options.maxHeaderSize,
      // A client that trickles its request head holds a socket at most HEADERS_TIMEOUT_MS (checked each
      // second): slow clients cannot pile up sockets (issue 13).
      headersTimeout: options.headersTimeoutMs ?? HEADERS_TIMEOUT_MS,
      connectionsCheckingInterval: 1_000,
    },
    served,
  );
  // An expectation other than 100-continue (none is the platform's) is served as if absent, as RFC 9110 10.1.1 allows,
  // rather than with Node's bare 417.
  server.on('checkExpectation', served);
  // A request without a body has nothing to continue: it is told to at once (RFC 9110 10.1.1 allows either), as Node
  // did, since Node closes the connection after an answer without 100 Continue (a client that sets Expect on every
  // request would lose its connection at each GET).
  server.on('checkContinue', (req: IncomingMessage, res: ServerResponse) => {
    if (hasBody(req)) continueOnRead(req, res);
    else res.writeContinue();
    served(req, res);
  });
  // Longer than common load balancers' idle timeouts, so they close first and never hit a closed socket.
  server.keepAliveTimeout = 65_000;
  // Every field of a head reaches `served` (its size is bounded by maxHeaderSize): Node's default keeps the first ~1000
  // and drops the rest unseen, a second Host among them.
  server.maxHeadersCount = 0;
  // what Node cannot read is answered in the envelope too
  server.on('clientError', (err: Error, socket: Duplex) => answerClientError(err, socket, observe));
  // no server of the platform is a proxy: CONNECT is answered 405, not with a reset connection
  server.on('connect', (req: IncomingMessage, socket: Duplex) => refuseConnect(req, socket, observe));
  server.listen(port, host);
  await once(server, 'listening');
  const address = server.address() as AddressInfo;
  const shownHost = host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host;
  return {
    server,
    port: address.port,
    url: `http://${shownHost}:${address.port}`,
    close: (graceMs = 10_000) => drainAndClose(server, graceMs),
  };
}

async function drainAndClose(server: Server, graceMs: number): Promise<void> {
  if (!server.listening) return;
  const closed = new Promise<void>((resolve) => server.close(() => resolve()));
  server.closeIdleConnections();
  // Keep-alive sockets that go idle after their last response are closed as they free up.
  const sweep = setInterval(() => server.closeIdleConnections(), 100);
  const timer = setTimeout(() => server.closeAllConnections(), graceMs);
  try {
    await closed;
  } finally {
    clearInterval(sweep);
    clearTimeout(timer);
  }
}

/**
 * Process-level wiring for main.ts: on SIGTERM or SIGINT run `shutdown` once (which should close servers,
 * then NATS and the store) and exit; log and exit on errors nothing else caught.
 */
export function handleProcessSignals(logger: Logger, shutdown: () => Promise<void>): void {
  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'shutting down');
    try {
      await shutdown();
      logger.info('stopped');
      process.exit(0);
    } catch (err) {
      logger.error({ err }, 'shutdown failed');
      process.exit(1);
    }
  };
  process.on('SIGTERM', () => void stop('SIGTERM'));
  process.on('SIGINT', () => void stop('SIGINT'));
  process.on('unhandledRejection', (err) => logger.error({ err }, 'unhandled rejection'));
  process.on('uncaughtException', (err) => {
    logger.fatal({ err }, 'uncaught exception');
    process.exit(1);
  });
}
