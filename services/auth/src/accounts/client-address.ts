import type { Request } from 'express';

/**
 * The client's address, as limits see it: express's `req.ip`, which walks X-Forwarded-For from the
 * right past TRUSTED_PROXIES (the edge, a load balancer), so a client cannot choose it. One function,
 * so the kernel's shared helper can replace it in one place.
 */
export function clientAddress(req: Request): string {
  return req.ip ?? 'unknown';
}
