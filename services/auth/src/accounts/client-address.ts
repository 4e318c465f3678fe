import { forwardedViewOf } from '@platform/kernel';
import type { Request } from 'express';

/**
 * The client's address, as limits see it: X-Forwarded-For is believed only from peers trusted by
 * TRUST_PROXY (the kernel's one reader of forwarding headers), so a client cannot choose it.
 */
export function clientAddress(req: Request): string {
  return forwardedViewOf(req).clientAddress || 'unknown';
}
