import { once } from 'node:events';
import type { IncomingMessage, RequestListener, Server, ServerResponse } from 'node:http';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import { answerClientError, refuseConnect } from './http/client-error';
import { listenOptionsOf } from './http/listen-options';
import { continueWhenRead, LINGERING_TIME_MS, lingering, requiringHost } from './http/request-guards';
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
  // 100 Continue when the handler reads the body (request-guards.ts)
  server.on('checkContinue', (req: IncomingMessage, res: ServerResponse) => {
    continueWhenRead(req, res);
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
