import { forwardedViewOf, RateLimited } from '@platform/kernel';
import type { Router } from 'express';
import { RateLimiterRes } from 'rate-limiter-flexible';
import { z } from 'zod';
import { clearSessionCookies } from '../accounts/cookies';
import { publicBaseUrl } from '../accounts/public-url';
import { revokeSession } from '../accounts/sessions';
import type { AuthContext } from '../context';
import { createStoreRateLimiter } from '../data/store-rate-limiter';
import { loadCaller, requireSession } from '../domain/caller';
import { anonymousLogin } from '../domain/sessions';

/** 200 of POST /v2/login/anonymous (spec 2.4). */
export const AnonymousSessionSchema = z
  .looseObject({
    userId: z.string(),
    sessionId: z.string(),
    token: z.string().meta({ description: 'session JWT (spec 2.5 claims)' }),
  })
  .meta({ id: 'AnonymousSession', description: 'Anonymous session (spec 2.4)' });

/**
 * POST /v2/login/anonymous (spec 2.4), rate limited per client address, and POST /v2/logout.
 * The client address is the kernel's forwarded view: X-Forwarded-For walked from the right past
 * TRUST_PROXY (the edge, which itself believes a client's X-Forwarded-For only from its own trusted
 * proxies), so a client cannot choose it. The counts live in the store: every auth instance shares them.
 */
export function mountLoginRoutes(router: Router, c: AuthContext): void {
  const limiter = createStoreRateLimiter({
    store: c.store,
    clock: c.clock,
    keyPrefix: 'anonymous-login',
    points: c.config.ANONYMOUS_LOGIN_RATE_LIMIT,
    durationSeconds: c.config.ANONYMOUS_LOGIN_RATE_WINDOW_SECONDS,
  });

  router.post('/v2/login/anonymous', async (req, res) => {
    try {
      await limiter.consume(forwardedViewOf(req).clientAddress || 'unknown');
    } catch (err) {
      if (err instanceof RateLimiterRes) {
        throw new RateLimited(
          Math.max(1, Math.ceil(err.msBeforeNext / 1000)),
          'Too many anonymous logins from this address',
        );
      }
      throw err;
    }
    const issued = await anonymousLogin(c);
    res.status(200).json({ userId: issued.userId, sessionId: issued.sessionId, token: issued.token });
  });

  router.post('/v2/logout', async (req, res) => {
    const caller = requireSession(await loadCaller(c.collections, c.clock, req));
    // one revocation for every way out (decision 0060): refresh tokens, an OIDC grant, the removal time, the edges
    await revokeSession(c, caller.credentialId);
    clearSessionCookies(res, publicBaseUrl(c.config));
    res.status(204).end();
  });
}
