/** What the CLI needs to reach the platform: the public API through the edge, and internal routes. */
export interface CliSettings {
  /** the edge's {base_url} */
  url: string;
  /** the edge's {gateway_url} (default: {base_url}/llm) */
  gatewayUrl?: string;
  /** an operator's session JWT or `at:` access token, for the public API */
  token?: string;
  /** where auth listens (internal routes: rotate signing keys, clients, providers, organizations) */
  authUrl?: string;
  /** where llm-quota listens (internal route: assign a plan) */
  llmQuotaUrl?: string;
  /** PLATFORM_INTERNAL_SECRET, for internal routes */
  internalSecret?: string;
  /** how long one call may take, its answer read whole (--timeout, PLATFORM_TIMEOUT; default 60) */
  timeoutSeconds?: number;
}

export const DEFAULT_TIMEOUT_SECONDS = 60;

/**
 * A base URL from a flag or the environment (empty: unset), checked before any call: a typo is a usage
 * error naming where the value came from (exit 2), never a TypeError from fetch.
 */
export function baseUrl(value: string | undefined, source: string): string | undefined {
  if (value === undefined || value === '') return undefined;
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new CliError(`${source} is not a URL: ${JSON.stringify(value)} (e.g. http://localhost:8080)`, 2);
  }
  // fetch refuses such a URL in an error quoting it whole, the password with it
  if (url.username || url.password)
    throw new CliError(
      `${source} holds a user name or password (user:password@), which the CLI never sends: give the URL without it`,
      2,
    );
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new CliError(`${source} must be an http:// or https:// URL: ${JSON.stringify(value)}`, 2);
  return value.replace(/\/+$/, '');
}

export class CliError extends Error {
  constructor(
    message: string,
    readonly exitCode = 1,
    /** what a failure found, for --json (each model a smoke test failed on) */
    readonly data?: unknown,
  ) {
    super(message);
  }
}

/** Nothing answers at a URL: the platform is stopped, or listens elsewhere. */
export class CannotReach extends CliError {
  constructor(
    readonly origin: string,
    reason: string,
  ) {
    super(`Cannot reach ${origin}: ${reason}`);
  }
}

/**
 * A setting the command needs is not given (a usage error): its message says what to give, which the whole help
 * would bury.
 */
export class MissingSetting extends CliError {
  constructor(message: string) {
    super(message, 2);
  }
}

/** A command that talks to a service directly, and nothing says where the service is. */
export class NoServiceUrl extends MissingSetting {
  constructor(service: string, flag: string) {
    super(`This command talks to ${service} directly: ${flag}`);
  }
}

/** A command that acts as a user, and no token is given. */
export class NoOperatorToken extends MissingSetting {
  constructor() {
    super('This command needs an operator credential: --token or PLATFORM_TOKEN');
  }
}

export interface ApiAnswer {
  status: number;
  body: unknown;
  /** the platform's `x-request-id` of this answer, which its logs are searched by */
  requestId?: string;
  /** a refusal's `retry-after` in seconds: when to ask again */
  retryAfterSeconds?: number;
  /** who answered what: the origin, and the method and path asked */
  origin: string;
  request: string;
}

/** fetch says only "fetch failed" or "terminated"; the reason (ECONNREFUSED, a certificate, a closed socket) is its cause */
const reasonOf = (err: unknown) => {
  const cause = (err as Error & { cause?: { code?: string; message?: string } }).cause;
  return cause?.message ?? cause?.code ?? (err as Error).message;
};

/**
 * One call, given `timeoutSeconds` to answer whole: a platform that accepted the connection and stopped (a process
 * paused, a proxy waiting on a dead upstream) is named, instead of waiting five minutes for fetch's own limit.
 */
async function call(url: string, init: RequestInit, timeoutSeconds: number): Promise<ApiAnswer> {
  const signal = AbortSignal.timeout(timeoutSeconds * 1000);
  const timedOut = () =>
    new CliError(
      `${new URL(url).origin} did not answer ${init.method} ${new URL(url).pathname} within ${timeoutSeconds} s (stopped or overloaded? --timeout SECONDS waits longer)`,
    );
  let response: Response;
  try {
    response = await fetch(url, { ...init, signal });
  } catch (err) {
    if (signal.aborted) throw timedOut();
    throw new CannotReach(new URL(url).origin, reasonOf(err));
  }
  let text: string;
  try {
    text = await response.text();
  } catch (err) {
    if (signal.aborted) throw timedOut();
    // the service went away while it answered (a platform stopping, a proxy cutting the connection)
    throw new CliError(`The answer of ${new URL(url).origin} was cut short: ${reasonOf(err)}`);
  }
  let body: unknown = text;
  try {
    body = text ? JSON.parse(text) : null;
  } catch {
    // not JSON: keep the text
  }
  // a web page (another server on that port, a proxy's page) is not the platform's answer: never reported as done
  if (response.ok && response.status !== 204 && (body === null || typeof body !== 'object'))
    throw new CliError(
      `${new URL(url).origin} is not the platform: it answered ${init.method} ${new URL(url).pathname} with ${response.status} ${response.headers.get('content-type') ?? 'and no content type'}, not JSON (is that URL the right one?)`,
    );
  const retryAfter = response.headers.get('retry-after');
  return {
    status: response.status,
    body,
    requestId: response.headers.get('x-request-id') ?? undefined,
    retryAfterSeconds: /^\d+$/.test(retryAfter ?? '') ? Number(retryAfter) : undefined,
    origin: new URL(url).origin,
    request: `${init.method} ${new URL(url).pathname}`,
  };
}

/**
 * The body of an answer that succeeded, if it has the platform's shape (`valid`): another JSON service on that URL
 * answering 200 is a failure naming it, never reported done (nor a TypeError reading it).
 */
export function platformBody<T>(answer: ApiAnswer, valid: (body: Record<string, unknown>) => boolean): T {
  if (!valid(answer.body as Record<string, unknown>))
    throw new CliError(
      `${answer.origin} is not the platform: it answered ${answer.request} with ${answer.status} and JSON the platform does not answer (is that URL the right one?)`,
    );
  return answer.body as T;
}

const json = (body: unknown) => (body === undefined ? undefined : JSON.stringify(body));

/**
 * A credential as a header value. fetch trims the whitespace around it, and refuses one holding a line break (a file
 * of more than one line, a wrapped paste) in an error quoting the whole value: refused here, naming only its source.
 */
function headerSafe(credential: string, source: string): string {
  if (!/^[\t\x20-\x7e\x80-\xff]*$/.test(credential.replace(/^[\t\n\r ]+|[\t\n\r ]+$/g, '')))
    throw new CliError(
      `${source} holds a line break or another character an HTTP header cannot carry (a file of more than one line?)`,
      2,
    );
  return credential;
}

/** A call to the public API with the operator's credential. */
export async function api(
  settings: CliSettings,
  method: string,
  path: string,
  body?: unknown,
): Promise<ApiAnswer> {
  if (!settings.token) throw new NoOperatorToken();
  const answer = await call(
    `${settings.url}${path}`,
    {
      method,
      headers: {
        authorization: `Bearer ${headerSafe(settings.token, 'The operator credential (--token or PLATFORM_TOKEN)')}`,
        'content-type': 'application/json',
      },
      body: json(body),
    },
    settings.timeoutSeconds ?? DEFAULT_TIMEOUT_SECONDS,
  );
  // a session that ended or was revoked: the fix named, whichever command met it
  if (answer.status === 401) {
    const refused = failure('Authenticating with the operator credential', answer);
    refused.message += ' (sign in again, and give the new token in --token or PLATFORM_TOKEN)';
    throw refused;
  }
  return answer;
}

/** A call to a service's internal route with the shared secret. */
export function internal(
  settings: CliSettings,
  service: 'auth' | 'llm-quota',
  method: string,
  path: string,
  body?: unknown,
): Promise<ApiAnswer> {
  const base = service === 'auth' ? settings.authUrl : settings.llmQuotaUrl;
  const flag = service === 'auth' ? '--auth-url or AUTH_URL' : '--llm-quota-url or LLM_QUOTA_URL';
  if (!base) throw new NoServiceUrl(service, flag);
  if (!settings.internalSecret) throw new MissingSetting('This command needs PLATFORM_INTERNAL_SECRET');
  return call(
    `${base}${path}`,
    {
      method,
      headers: {
        'x-platform-internal-secret': headerSafe(settings.internalSecret, 'PLATFORM_INTERNAL_SECRET'),
        'content-type': 'application/json',
      },
      body: json(body),
    },
    settings.timeoutSeconds ?? DEFAULT_TIMEOUT_SECONDS,
  );
}

/** The envelope's message, or the status, for an answer that failed, with its request id (what support asks for). */
export function failure(what: string, answer: ApiAnswer): CliError {
  const body = answer.body as { message?: string; error?: string } | null;
  const reason = body && typeof body === 'object' ? (body.message ?? body.error) : undefined;
  const requestId = answer.requestId ? ` (request id ${answer.requestId})` : '';
  return new CliError(`${what} failed (${answer.status})${reason ? `: ${reason}` : ''}${requestId}`);
}
