import { createHash, timingSafeEqual } from 'node:crypto';
import type { RequestHandler } from 'express';
import { Unauthenticated } from './errors';

/** Header carrying PLATFORM_INTERNAL_SECRET on internal routes (edge → auth, operators → services). */
export const INTERNAL_SECRET_HEADER = 'x-platform-internal-secret';

const digest = (value: string) => createHash('sha256').update(value).digest();

/** Internal routes answer only to the shared secret, compared in constant time (digests hide its length). */
export const requireInternalSecret =
  (secret: string): RequestHandler =>
  (req, _res, next) => {
    const given = req.headers[INTERNAL_SECRET_HEADER];
    if (typeof given !== 'string' || !timingSafeEqual(digest(given), digest(secret))) {
      return next(new Unauthenticated('Internal route: missing or wrong internal secret'));
    }
    next();
  };
