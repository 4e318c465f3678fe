import type { Request } from 'express';
import type { AuthConfig } from '../config';

/**
 * `{base_url}` as the client sees it, for mailed links and cookie flags: PUBLIC_BASE_URL, else the
 * edge's forwarded protocol and host (express reads them from trusted proxies only).
 */
export function publicBaseUrl(config: Readonly<AuthConfig>, req: Request): string {
  if (config.PUBLIC_BASE_URL) return config.PUBLIC_BASE_URL.replace(/\/+$/, '');
  return `${req.protocol}://${req.host}`;
}
