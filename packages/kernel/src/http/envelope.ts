import { AppError, InvalidInput, PayloadTooLarge, statusOfKind, UnsupportedMediaType } from '../errors';

/** The one error envelope of the platform and gateway roots (spec 2.3, DESIGN.md "Errors"). */
export interface ErrorEnvelope {
  error: string;
  message: string;
  code?: string;
  details?: Record<string, unknown>;
  status: number;
  retryAfter?: number;
  requestId?: string;
  [extra: string]: unknown;
}

/** What body-parser, raw-body, zlib and the router attach to the errors they throw (http-errors style). */
interface HttpLibraryError {
  type?: string;
  status?: number;
  name?: string;
  /** body-parser: the largest body it takes (entity.too.large), the text it could not take (entity.parse.failed) */
  limit?: number;
  body?: string;
}

/** JSON that is valid but not an object or an array, which the services' strict JSON parsing refuses */
const isJsonScalar = (text: string | undefined) => {
  try {
    return text !== undefined && JSON.parse(text) !== undefined;
  } catch {
    return false;
  }
};

/** Turns anything thrown into an AppError; unknown errors become a 500 that says nothing internal. */
export function toAppError(err: unknown): AppError | null {
  if (err instanceof AppError) return err;
  const e = err as HttpLibraryError;
  if (!e || typeof e !== 'object') return null;
  switch (e.type) {
    case 'entity.too.large':
      return new PayloadTooLarge(
        typeof e.limit === 'number'
          ? `Request body is too large: this route takes at most ${e.limit} bytes`
          : undefined,
      );
    case 'entity.parse.failed':
      return new InvalidInput(
        isJsonScalar(e.body)
          ? 'Request body must be a JSON object or array'
          : 'Request body is not valid JSON',
      );
    case 'encoding.unsupported':
      return new UnsupportedMediaType('Unsupported Content-Encoding: send identity, gzip, deflate or br', {
        error: 'UnsupportedEncoding',
      });
    case 'charset.unsupported':
      return new UnsupportedMediaType('Unsupported charset: send UTF-8', { error: 'UnsupportedCharset' });
  }
  // The router's decodeURIComponent of a path parameter (`/v2/workspaces/%zz`).
  if (e.name === 'URIError' && e.status === 400) {
    return new InvalidInput('Malformed percent-encoding in the path', {
      error: 'InvalidPath',
      code: 'INVALID_PATH',
    });
  }
  // Any other client error from the HTTP libraries (a body that does not decompress, a request
  // aborted mid-body, a length that does not match): a 4xx in the envelope, never a 500.
  if (typeof e.status === 'number' && e.status >= 400 && e.status < 500) {
    if (e.status === 413) return new PayloadTooLarge();
    if (e.status === 415) return new UnsupportedMediaType('Unsupported request body');
    return new InvalidInput('Request body could not be read', { error: 'InvalidBody' });
  }
  return null;
}

export function envelopeOf(err: unknown, requestId?: string): ErrorEnvelope {
  const appError = toAppError(err);
  if (!appError) {
    return { error: 'InternalError', message: 'Internal server error', status: 500, requestId };
  }
  const status = statusOfKind[appError.kind];
  const body: ErrorEnvelope = {
    ...appError.extra,
    error: appError.error,
    message: appError.message,
    status,
    requestId,
  };
  if (appError.code) body.code = appError.code;
  if (appError.details) body.details = appError.details;
  if (appError.retryAfter !== undefined) body.retryAfter = appError.retryAfter;
  return body;
}
