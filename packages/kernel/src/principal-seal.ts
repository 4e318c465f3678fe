import { createHmac, timingSafeEqual } from 'node:crypto';
import type { Principal } from '@platform/contracts';
import type { RequestHandler } from 'express';
import { type Clock, systemClock } from './clock';
import { Unauthenticated } from './errors';

/** Header carrying the sealed principal from the edge to a service. */
export const PRINCIPAL_HEADER = 'x-platform-principal';
export const USER_ID_HEADER = 'x-platform-user-id';

/** How far a seal's issue time may be from a service's clock (skew between hosts, slow upstreams). */
const MAX_SEAL_AGE_SECONDS = 300;

interface SealBody {
  p: Principal;
  iat: number;
}

const mac = (secret: string, payload: string) =>
  createHmac('sha256', secret).update(payload).digest('base64url');

/**
 * Seals a principal as `base64url(json).hmac` with the secret only the edge and the services hold,
 * so a service can check that identity came from the edge.
 */
export function sealPrincipal(principal: Principal, secret: string, clock: Clock = systemClock): string {
  const body: SealBody = { p: principal, iat: Math.floor(clock.now().getTime() / 1000) };
  const payload = Buffer.from(JSON.stringify(body)).toString('base64url');
  return `${payload}.${mac(secret, payload)}`;
}

/** Opens a seal; null when the signature, the format or the age is wrong. */
export function openPrincipal(sealed: string, secret: string, clock: Clock = systemClock): Principal | null {
  const dot = sealed.indexOf('.');
  if (dot <= 0) return null;
  const payload = sealed.slice(0, dot);
  const given = Buffer.from(sealed.slice(dot + 1));
  const expected = Buffer.from(mac(secret, payload));
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return null;
  try {
    const body = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as SealBody;
    const age = Math.abs(Math.floor(clock.now().getTime() / 1000) - body.iat);
    return age <= MAX_SEAL_AGE_SECONDS ? body.p : null;
  } catch {
    return null;
  }
}

/**
 * Service-side: verifies the edge's seal and sets `req.principal` (null when there is none).
 * A seal that fails the check is refused with 401: a service never trusts identity it cannot check.
 */
export const edgePrincipal =
  (secret: string, clock: Clock = systemClock): RequestHandler =>
  (req, _res, next) => {
    const sealed = req.headers[PRINCIPAL_HEADER];
    if (sealed === undefined) {
      req.principal = null;
      return next();
    }
    const principal = typeof sealed === 'string' ? openPrincipal(sealed, secret, clock) : null;
    if (!principal) return next(new Unauthenticated('Identity was not issued by the edge'));
    if ((principal.user.id ?? '') !== (req.headers[USER_ID_HEADER] ?? '')) {
      return next(new Unauthenticated('Identity headers disagree'));
    }
    req.principal = principal;
    next();
  };

/** The principal of a request that must be authenticated; 401 otherwise. */
export function requirePrincipal(req: { principal?: Principal | null }): Principal {
  if (!req.principal) throw new Unauthenticated();
  return req.principal;
}
