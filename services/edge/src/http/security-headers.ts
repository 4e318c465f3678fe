import type { ServerResponse } from 'node:http';
import { FIXED_SECURITY_HEADERS } from '@platform/kernel';

/**
 * Headers on every answer of the edge (its own errors and proxied answers alike). An upstream that
 * sets one of them itself (a page with its own Content-Security-Policy, a cacheable document) wins:
 * the proxy replaces the edge's value with the service's. `Cache-Control: no-store` is the default
 * because API answers carry identities and secrets; JWKS and OpenAPI documents say otherwise.
 */
export interface SecurityHeaders {
  /** sets the headers; HSTS only when the client came over TLS (the edge's own, or a trusted proxy's) */
  apply(res: ServerResponse, https: boolean): void;
}

export function createSecurityHeaders(options: { hstsMaxAgeSeconds: number }): SecurityHeaders {
  const hsts =
    options.hstsMaxAgeSeconds > 0 ? `max-age=${options.hstsMaxAgeSeconds}; includeSubDomains` : null;
  return {
    apply(res, https) {
      for (const [name, value] of FIXED_SECURITY_HEADERS) res.setHeader(name, value);
      if (https && hsts) res.setHeader('strict-transport-security', hsts);
    },
  };
}
