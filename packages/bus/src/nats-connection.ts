import { readFileSync } from 'node:fs';
import { type ConnectionOptions, credsAuthenticator, ErrorCode } from 'nats';

/** Where NATS is and how the bus proves who it is (NATS_URL, NATS_CREDS_FILE, NATS_TLS_CA_FILE). */
export interface NatsServerOptions {
  /**
   * `nats://host:4222`, or `tls://host:4222` to require TLS. Credentials go in it, URL-encoded:
   * `nats://user:password@host:4222`, or a token alone, `nats://token@host:4222`.
   */
  url: string;
  /** a credentials file (user JWT and nkey seed); read again at each connection, so a renewed file is used */
  credsFile?: string;
  /** the certificate authority (PEM) that signed the server's certificate; set, TLS is required */
  tlsCaFile?: string;
}

/**
 * The nats.js connection options for a server. nats.js keeps only the host and port of a server URL and
 * silently drops its credentials, so they are taken from the URL here, read as the Go and .NET clients
 * read them: a user and a password, or a token alone.
 */
export function natsConnectionOptions(server: NatsServerOptions): ConnectionOptions {
  const url = new URL(server.url);
  const options: ConnectionOptions = { servers: url.host };
  const user = decodeURIComponent(url.username);
  const pass = decodeURIComponent(url.password);
  if (user && pass) Object.assign(options, { user, pass });
  else if (user) options.token = user;
  if (server.credsFile) options.authenticator = credsAuthenticator(latestContent(server.credsFile));
  if (server.tlsCaFile) options.tls = { caFile: server.tlsCaFile };
  else if (url.protocol === 'tls:') options.tls = {};
  return options;
}

/** The file's content at each call; while it cannot be read (a secret being replaced), the last one read. */
function latestContent(file: string): () => Uint8Array {
  let last = readFileSync(file);
  return () => {
    try {
      last = readFileSync(file);
    } catch {}
    return last;
  };
}

/** The URL with its password (or token) replaced by `***`: what logs, errors and /readyz may show. */
export function natsUrlForLogs(raw: string): string {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return '(a NATS_URL that is not a URL)';
  }
  if (url.password) url.password = '***';
  else if (url.username) url.username = '***';
  return url.toString();
}

const REFUSED_CREDENTIALS = new Set<string>([
  ErrorCode.AuthorizationViolation,
  ErrorCode.AuthenticationExpired,
  ErrorCode.BadCreds,
]);

/** Whether NATS refused the connection's credentials: a configuration to fix, not an outage. */
export const credentialsRefused = (err: unknown): boolean =>
  REFUSED_CREDENTIALS.has(String((err as { code?: unknown } | null)?.code));
