import { AppError, InvalidInput, PayloadTooLarge, statusOfKind } from '../errors';

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

interface BodyParserError {
  type?: string;
  status?: number;
  expose?: boolean;
}

/** Turns anything thrown into an AppError; unknown errors become a 500 that says nothing internal. */
export function toAppError(err: unknown): AppError | null {
  if (err instanceof AppError) return err;
  const e = err as BodyParserError;
  if (e && typeof e === 'object') {
    if (e.type === 'entity.too.large') return new PayloadTooLarge();
    if (e.type === 'entity.parse.failed') return new InvalidInput('Request body is not valid JSON');
    if (e.type === 'charset.unsupported' || e.type === 'encoding.unsupported')
      return new InvalidInput('Unsupported request body encoding', { error: 'UnsupportedEncoding' });
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
