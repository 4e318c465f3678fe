import { createHash, timingSafeEqual } from 'node:crypto';
import { Forbidden, INTERNAL_SECRET_HEADER, Unauthenticated } from '@platform/kernel';
import type { Request } from 'express';
import type { Actor } from './catalogue-admin';

const digest = (value: string) => createHash('sha256').update(value).digest();

/** whether the request carries the operator's credential (PLATFORM_INTERNAL_SECRET) */
export function hasOperatorCredential(req: Request, secret: string): boolean {
  const given = req.headers[INTERNAL_SECRET_HEADER];
  return typeof given === 'string' && timingSafeEqual(digest(given), digest(secret));
}

/** A platform administrator (`pnpm platform admin grant`) or the operator's credential; null for anyone else. */
export function catalogueAdmin(req: Request, secret: string): Actor | null {
  if (req.principal?.user.platformAdmin === true && req.principal.user.id)
    return { kind: 'platform_admin', userId: req.principal.user.id };
  if (hasOperatorCredential(req, secret)) return { kind: 'operator', userId: null };
  return null;
}

/** Catalogue writes: a platform administrator or the operator; 401 without credentials, else 403. */
export function requireCatalogueAdmin(req: Request, secret: string): Actor {
  const actor = catalogueAdmin(req, secret);
  if (actor) return actor;
  if (!req.principal) throw new Unauthenticated();
  throw new Forbidden('Changing the model catalogue needs a platform administrator', {
    error: 'PLATFORM_ADMIN_REQUIRED',
    code: 'PLATFORM_ADMIN_REQUIRED',
  });
}
