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

/** The body of a seal whose MAC is right; null when the format or the MAC is wrong. */
function openSealBody(sealed: string, secret: string): SealBody | null {
  const dot = sealed.indexOf('.');
  if (dot <= 0) return null;
  const payload = sealed.slice(0, dot);
  const given = Buffer.from(sealed.slice(dot + 1));
  const expected = Buffer.from(mac(secret, payload));
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return null;
  try {
    const body = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as SealBody;
    return typeof body === 'object' && body !== null && typeof body.iat === 'number' ? body : null;
  } catch {
    return null;
  }
}

const fresh = (body: SealBody, clock: Clock) =>
  Math.abs(Math.floor(clock.now().getTime() / 1000) - body.iat) <= MAX_SEAL_AGE_SECONDS;

/** Opens a seal; null when the signature, the format or the age is wrong. */
export function openPrincipal(sealed: string, secret: string, clock: Clock = systemClock): Principal | null {
  const body = openSealBody(sealed, secret);
  return body && fresh(body, clock) ? body.p : null;
}

function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const child of Object.values(value)) deepFreeze(child);
  }
  return value;
}

/**
 * Opened seals by their exact text, bounded (least recently used out first). The edge keeps one seal
 * per principal for up to a minute, so most requests carry a seal this service opened before; the
 * text is MACed, so a hit is exactly as trustworthy as a fresh check. The age is checked on every
 * hit, and a cached principal is frozen: no request can change what another one receives.
 */
export class OpenedSeals {
  private readonly entries = new Map<string, SealBody>();

  constructor(
    private readonly secret: string,
    private readonly clock: Clock = systemClock,
    private readonly maxEntries = 1000,
  ) {}

  open(sealed: string): Principal | null {
    let body = this.entries.get(sealed);
    if (body) {
      this.entries.delete(sealed);
    } else {
      body = openSealBody(sealed, this.secret) ?? undefined;
      if (!body) return null;
      deepFreeze(body);
    }
    if (!fresh(body, this.clock)) return null;
    this.entries.set(sealed, body);
    if (this.entries.size > this.maxEntries) this.entries.delete(this.entries.keys().next().value!);
    return body.p;
  }

  get size(): number {
    return this.entries.size;
  }
}

/**
 * Service-side: verifies the edge's seal and sets `req.principal` (null when there is none).
 * A seal that fails the check is refused with 401: a service never trusts identity it cannot check.
 */
export const edgePrincipal = (secret: string, clock: Clock = systemClock): RequestHandler => {
  const seals = new OpenedSeals(secret, clock);
  return (req, _res, next) => {
    const sealed = req.headers[PRINCIPAL_HEADER];
    if (sealed === undefined) {
      req.principal = null;
      return next();
    }
    const principal = typeof sealed === 'string' ? seals.open(sealed) : null;
    if (!principal) return next(new Unauthenticated('Identity was not issued by the edge'));
    if ((principal.user.id ?? '') !== (req.headers[USER_ID_HEADER] ?? '')) {
      return next(new Unauthenticated('Identity headers disagree'));
    }
    req.principal = principal;
    next();
  };
};

/** The principal of a request that must be authenticated; 401 otherwise. */
export function requirePrincipal(req: { principal?: Principal | null }): Principal {
  if (!req.principal) throw new Unauthenticated();
  return req.principal;
}
