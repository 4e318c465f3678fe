import type { AuthConfig } from '../config';

/**
 * `{base_url}` as the client sees it, for mailed links, SSO callbacks and cookie flags: PUBLIC_BASE_URL, else
 * JWT_ISSUER (the platform's public root too). Never the request's Host: a client could forge it and have the
 * platform mail a victim a reset link to the client's own host.
 */
export function publicBaseUrl(config: Readonly<Pick<AuthConfig, 'PUBLIC_BASE_URL' | 'JWT_ISSUER'>>): string {
  return (config.PUBLIC_BASE_URL ?? config.JWT_ISSUER).replace(/\/+$/, '');
}
