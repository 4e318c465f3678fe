import { STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import {
  type AppError,
  HeaderFieldsTooLarge,
  InvalidInput,
  PayloadTooLarge,
  RequestTimeout,
} from '../errors';
import { envelopeOf } from './envelope';
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

/**
 * A server's `clientError`: a request Node could not read (a malformed request line or header field, a head over the
 * size limit, a head that took too long) is answered in the platform's envelope, with a request id, instead of
 * Node's bare status line. As Node does, only on a connection that has answered nothing yet (another may be in the
 * middle of an answer); the connection is closed either way.
 */
export function answerClientError(err: Error & { code?: string }, socket: Duplex): void {
  if (socket.writable && (socket as Duplex & { bytesWritten?: number }).bytesWritten === 0) {
    const requestId = resolveRequestId(undefined);
    const envelope = envelopeOf(failureOf(err.code), requestId);
    const body = JSON.stringify(envelope);
    socket.write(
      `HTTP/1.1 ${envelope.status} ${STATUS_CODES[envelope.status]}\r\n` +
        'connection: close\r\n' +
        'content-type: application/json; charset=utf-8\r\n' +
        `content-length: ${Buffer.byteLength(body)}\r\n` +
        `x-request-id: ${requestId}\r\n\r\n${body}`,
    );
  }
  socket.destroy(err);
}
