/**
 * Typed domain errors. They know nothing of HTTP: `kind` says what went wrong and the one error
 * middleware (http/error-middleware.ts) maps kinds to statuses and the envelope.
 */
export type ErrorKind =
  | 'invalid_input'
  | 'unauthenticated'
  | 'forbidden'
  | 'not_found'
  | 'method_not_allowed'
  | 'conflict'
  | 'gone'
  | 'payload_too_large'
  | 'unsupported_media_type'
  | 'rate_limited'
  | 'unavailable'
  | 'bad_gateway'
  | 'timeout'
  | 'request_timeout'
  | 'header_fields_too_large';

export interface AppErrorOptions {
  /** stable identifier for the envelope's `error` field (PascalCase or a spec code) */
  error?: string;
  /** canonical machine-readable code (spec 7.1), when one applies */
  code?: string;
  details?: Record<string, unknown>;
  retryAfter?: number;
  /**
   * whether the same request may succeed if sent again, when the error knows (answered as
   * `x-should-retry`, which the OpenAI and Anthropic SDKs obey over their own guess from the status)
   */
  retryable?: boolean;
  /** extra top-level fields for the envelope, e.g. migration information */
  extra?: Record<string, unknown>;
}

export class AppError extends Error {
  readonly kind: ErrorKind;
  readonly error: string;
  readonly code?: string;
  readonly details?: Record<string, unknown>;
  readonly retryAfter?: number;
  readonly retryable?: boolean;
  readonly extra?: Record<string, unknown>;

  constructor(kind: ErrorKind, defaultError: string, message: string, options: AppErrorOptions = {}) {
    super(message);
    this.name = defaultError;
    this.kind = kind;
    this.error = options.error ?? defaultError;
    this.code = options.code;
    this.details = options.details;
    this.retryAfter = options.retryAfter;
    this.retryable = options.retryable;
    this.extra = options.extra;
  }
}

export class InvalidInput extends AppError {
  constructor(message: string, options: AppErrorOptions = {}) {
    super('invalid_input', 'InvalidInput', message, { code: 'INVALID_BODY', ...options });
  }
}
/** 400 NO_ORG_CONTEXT (spec 4.1): the route acts in an organization and the credential names none. */
export const noOrgContext = () =>
  new InvalidInput(
    'This endpoint needs an active organization: a user chooses one with PUT /v2/user/active-org (or, having none, creates one with POST /v2/orgs), an organization API key has its own, a workspace API key has none',
    { error: 'NO_ORG_CONTEXT', code: 'NO_ORG_CONTEXT' },
  );
export class Unauthenticated extends AppError {
  constructor(message = 'Missing or invalid credentials', options: AppErrorOptions = {}) {
    super('unauthenticated', 'Unauthorized', message, options);
  }
}
export class Forbidden extends AppError {
  constructor(message = 'Not allowed', options: AppErrorOptions = {}) {
    super('forbidden', 'Forbidden', message, options);
  }
}
export class NotFound extends AppError {
  constructor(message = 'Not found', options: AppErrorOptions = {}) {
    super('not_found', 'NotFound', message, options);
  }
}
export class Conflict extends AppError {
  constructor(message: string, options: AppErrorOptions = {}) {
    super('conflict', 'Conflict', message, options);
  }
}
export class Gone extends AppError {
  constructor(message: string, options: AppErrorOptions = {}) {
    super('gone', 'Gone', message, options);
  }
}
export class PayloadTooLarge extends AppError {
  constructor(message = 'Request body is too large', options: AppErrorOptions = {}) {
    super('payload_too_large', 'PayloadTooLarge', message, { code: 'PAYLOAD_TOO_LARGE', ...options });
  }
}
export class UnsupportedMediaType extends AppError {
  constructor(message: string, options: AppErrorOptions = {}) {
    super('unsupported_media_type', 'UnsupportedMediaType', message, {
      code: 'UNSUPPORTED_MEDIA_TYPE',
      ...options,
    });
  }
}
export class RateLimited extends AppError {
  constructor(retryAfter: number, message = 'Too many requests', options: AppErrorOptions = {}) {
    super('rate_limited', 'RATE_LIMITED', message, { code: 'RATE_LIMITED', retryAfter, ...options });
  }
}
export class Unavailable extends AppError {
  constructor(message = 'Service unavailable', options: AppErrorOptions = {}) {
    super('unavailable', 'ServiceUnavailable', message, options);
  }
}
export class BadGateway extends AppError {
  constructor(message = 'Upstream service failed', options: AppErrorOptions = {}) {
    super('bad_gateway', 'BadGateway', message, options);
  }
}
export class UpstreamTimeout extends AppError {
  constructor(message = 'Upstream service timed out', options: AppErrorOptions = {}) {
    super('timeout', 'GatewayTimeout', message, options);
  }
}

/** The path has routes, none for this method (the answer's `Allow` names theirs). */
export class MethodNotAllowed extends AppError {
  constructor(method: string, allowed: readonly string[]) {
    super(
      'method_not_allowed',
      'METHOD_NOT_ALLOWED',
      `${method} is not allowed here; use ${allowed.join(' or ')}`,
      {
        code: 'METHOD_NOT_ALLOWED',
        details: { allowed },
      },
    );
  }
}

/** The client did not send its whole request in time. */
export class RequestTimeout extends AppError {
  constructor(message = 'The request did not arrive in time', options: AppErrorOptions = {}) {
    super('request_timeout', 'RequestTimeout', message, { code: 'REQUEST_TIMEOUT', ...options });
  }
}

/** The request head (its line and header fields) is larger than the server reads. */
export class HeaderFieldsTooLarge extends AppError {
  constructor(message = 'The request head is too large', options: AppErrorOptions = {}) {
    super('header_fields_too_large', 'RequestHeaderFieldsTooLarge', message, {
      code: 'HEADER_FIELDS_TOO_LARGE',
      ...options,
    });
  }
}

export const statusOfKind: Record<ErrorKind, number> = {
  invalid_input: 400,
  unauthenticated: 401,
  forbidden: 403,
  not_found: 404,
  method_not_allowed: 405,
  conflict: 409,
  gone: 410,
  payload_too_large: 413,
  unsupported_media_type: 415,
  rate_limited: 429,
  unavailable: 503,
  bad_gateway: 502,
  timeout: 504,
  request_timeout: 408,
  header_fields_too_large: 431,
};
