import { type IncomingMessage, type ServerResponse, STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import { AppError, HeaderFieldsTooLarge, InvalidInput, PayloadTooLarge, RequestTimeout } from '../errors';
import { envelopeOf } from './envelope';
import { sendJson } from './error-middleware';
import type { ObserveListenAnswer } from './metrics';
import { resolveRequestId } from './request-id';

/** Node's name for what it could not read (its HTTP parser's code, or its own) */
function failureOf(code: string | undefined): AppError {
  switch (code) {
    case 'HPE_HEADER_OVERFLOW':
      return new HeaderFieldsTooLarge();
    case 'HPE_CHUNK_EXTENSIONS_OVERFLOW':
      return new PayloadTooLarge('The chunk extensions of the request body are too large');
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return new RequestTimeout();
    default:
      return new InvalidInput('The request is not valid HTTP', {
        error: 'BadRequest',
        ...(code?.startsWith('HPE_') ? { details: { parser: code } } : {}),
      });
  }
}

const secondsSince = (start: number) => (performance.now() - start) / 1e3;

/**
 * The security headers on every answer of the edge, whatever its configuration (HSTS depends on it, so the edge adds
 * that one itself): its own answers and proxied ones (`security-headers.ts`), and the answers written here, which
 * never reach it.
 */
export const FIXED_SECURITY_HEADERS: ReadonlyArray<readonly [string, string]> = [
  ['x-content-type-options', 'nosniff'],
  ['x-frame-options', 'DENY'],
  ['content-security-policy', "default-src 'none'; frame-ancestors 'none'; base-uri 'none'"],
  ['referrer-policy', 'no-referrer'],
  ['cache-control', 'no-store'],
];

const FIXED_HEADERS = FIXED_SECURITY_HEADERS.map(([name, value]) => `${name}: ${value}\r\n`).join('');

/**
 * What Node's server notes on a connection's socket: the answer in progress (none between a keep-alive connection's
 * requests), and its HTTP parser, whose `duration()` is how long the request being read has taken so far (since the
 * connection opened, before its first request; 0 between requests).
 */
type ServerSocket = Duplex & {
  _httpMessage?: (ServerResponse & { headersSent?: boolean }) | null;
  bytesRead?: number;
  parser?: { duration?: () => number } | null;
};

/**
 * A server's `clientError`: a request Node could not read (a malformed request line or header field, a head over the
 * size limit, a head that took too long) is answered in the platform's envelope, with a request id, instead of
 * Node's bare status line. As Node does, only when no answer is being written on the connection (none in progress,
 * or one whose head is not sent yet): a kept-alive connection's earlier answers, complete, do not prevent it. The
 * connection is closed either way.
 *
 * A connection that has sent nothing yet is timed out by Node from its opening, in the timers phase of the event
 * loop, before the poll phase reads what has arrived: a pool's connection opened and left unused (undici leaves one
 * behind a request it aborted) and put to use as the server stalls had its request, arrived in time, answered 408.
 * Such a timeout is judged again once this turn of the loop has read what arrived: if a request began meanwhile,
 * Node now times that request from its own start, and the connection is left to it (or, an upgrade request, to the
 * server's 'upgrade' listener).
 */
export function answerClientError(
  err: Error & { code?: string },
  socket: Duplex,
  observe?: ObserveListenAnswer,
): void {
  const start = performance.now();
  const { parser, bytesRead } = socket as ServerSocket;
  const waited =
    err.code === 'ERR_HTTP_REQUEST_TIMEOUT' && bytesRead === 0 ? parser?.duration?.() : undefined;
  if (waited === undefined) {
    answer(err, socket, start, observe);
    return;
  }
  setImmediate(() => {
    const current = (socket as ServerSocket).parser;
    // closed meanwhile, or handed to an 'upgrade' listener (which freed its parser): not the server's to answer
    if (socket.destroyed || !current) return;
    // a request that began since restarted the parser's clock (and one already read whole stopped it, at 0)
    if ((current.duration?.() ?? waited) >= waited) answer(err, socket, start, observe);
  });
}

function answer(
  err: Error & { code?: string },
  socket: Duplex,
  start: number,
  observe: ObserveListenAnswer | undefined,
): void {
  const { _httpMessage: inProgress, bytesRead } = socket as ServerSocket;
  if (socket.writable && !inProgress?.headersSent) {
    const requestId = resolveRequestId(undefined);
    const status = writeAnswer(socket, failureOf(err.code), requestId);
    // a connection that sent nothing (opened ahead of need, never used) made no request to count
    if (bytesRead) observe?.({ status, requestId, seconds: secondsSince(start) });
  }
  socket.destroy(err);
}

/**
 * `error` in the envelope, written straight to the connection (there is no response object); the caller closes it.
 * Returns the status written.
 */
function writeAnswer(socket: Duplex, error: AppError, requestId: string): number {
  const envelope = envelopeOf(error, requestId);
  const body = JSON.stringify(envelope);
  socket.write(
    `HTTP/1.1 ${envelope.status} ${STATUS_CODES[envelope.status]}\r\n` +
      'connection: close\r\n' +
      'content-type: application/json; charset=utf-8\r\n' +
      `content-length: ${Buffer.byteLength(body)}\r\n` +
      FIXED_HEADERS +
      `x-request-id: ${requestId}\r\n\r\n${body}`,
  );
  return envelope.status;
}

/**
 * A server's `connect`: no server of the platform is a proxy, so a CONNECT request is 405 in the envelope (with its
 * request id and the fixed security headers), the connection closed. Without a listener Node destroys the socket, and
 * the client sees its connection reset with no answer. Requests pipelined before it are answered first: Node still
 * writes their answers to the socket, one after the other, and the 405 written at once came before them (the client
 * read it as the first one's answer, and lost theirs).
 */
export function refuseConnect(req: IncomingMessage, socket: Duplex, observe?: ObserveListenAnswer): void {
  const start = performance.now();
  const error = new AppError(
    'method_not_allowed',
    'MethodNotAllowed',
    'CONNECT is not served: this is not a proxy',
    {
      code: 'METHOD_NOT_ALLOWED',
    },
  );
  const requestId = resolveRequestId(req.headers['x-request-id']);
  // Node no longer tells the answers that the socket drained (it let go of the socket): a large one would stall
  const drained = () => (socket as ServerSocket)._httpMessage?.emit('drain');
  socket.on('drain', drained);
  const refuse = () => {
    const inProgress = (socket as ServerSocket)._httpMessage;
    // Node hands the socket to the next answer when one finishes: looked at again once it has
    if (inProgress && !inProgress.writableFinished)
      return void inProgress.once('finish', () => setImmediate(refuse));
    socket.off('drain', drained);
    if (socket.writable) {
      const status = writeAnswer(socket, error, requestId);
      observe?.({ method: req.method, url: req.url, status, requestId, seconds: secondsSince(start) });
    }
    // once the answer is out: the client may hold its end open, waiting for a tunnel
    socket.end(() => socket.destroy());
  };
  refuse();
}

/**
 * A request `listen` refuses before its handler runs (without Host or with several, RFC 9112 3.2), answered as
 * the unreadable ones are: in the envelope, with the fixed security headers and a request id, the connection closed.
 */
export function refuseRequest(
  req: IncomingMessage,
  res: ServerResponse,
  error: AppError,
  observe?: ObserveListenAnswer,
): void {
  const start = performance.now();
  const requestId = resolveRequestId(req.headers['x-request-id']);
  const envelope = envelopeOf(error, requestId);
  for (const [name, value] of FIXED_SECURITY_HEADERS) res.setHeader(name, value);
  res.setHeader('x-request-id', requestId);
  res.setHeader('connection', 'close');
  sendJson(res, envelope.status, envelope);
  observe?.({
    method: req.method,
    url: req.url,
    status: envelope.status,
    requestId,
    seconds: secondsSince(start),
  });
}
