/** What an endpoint handler hands back to the server, which writes it with the rule's pacing. */
export type SimulatedAnswer =
  | { kind: 'json'; status?: number; body: unknown; headers?: Record<string, string> }
  | { kind: 'text'; body: string; contentType: string }
  | { kind: 'binary'; body: Buffer; contentType: string }
  /** a body written in these pieces, with the rule's pacing and failures (speech audio) */
  | { kind: 'chunks'; chunks: Buffer[]; contentType: string }
  | { kind: 'sse'; frames: string[]; errorFrame: (type: string, message: string) => string };

/** A request the simulated provider refuses, answered in its own error shape. */
export class SimulatedProviderError extends Error {
  constructor(
    readonly status: number,
    readonly type: string,
    message: string,
    readonly code: string | null = null,
  ) {
    super(message);
  }
}

export const sseData = (payload: unknown) => `data: ${JSON.stringify(payload)}\n\n`;
export const sseEvent = (event: string, payload: unknown) =>
  `event: ${event}\ndata: ${JSON.stringify(payload)}\n\n`;

/** The provider's default error type and OpenAI code per status. */
export function openaiErrorDefaults(status: number): { type: string; code: string | null } {
  if (status === 429) return { type: 'requests', code: 'rate_limit_exceeded' };
  if (status === 401) return { type: 'invalid_request_error', code: 'invalid_api_key' };
  if (status === 404) return { type: 'invalid_request_error', code: 'model_not_found' };
  if (status >= 500) return { type: 'server_error', code: null };
  return { type: 'invalid_request_error', code: null };
}

export function anthropicErrorType(status: number): string {
  const byStatus: Record<number, string> = {
    400: 'invalid_request_error',
    401: 'authentication_error',
    403: 'permission_error',
    404: 'not_found_error',
    413: 'request_too_large',
    429: 'rate_limit_error',
    500: 'api_error',
    529: 'overloaded_error',
  };
  return byStatus[status] ?? (status >= 500 ? 'api_error' : 'invalid_request_error');
}

export const openaiErrorBody = (type: string, message: string, code: string | null) => ({
  error: { message, type, param: null, code },
});
export const anthropicErrorBody = (type: string, message: string) => ({
  type: 'error',
  error: { type, message },
});
