import type { Router } from 'express';
import type { AuthContext } from '../context';

/**
 * GET {base_url}/oidc/jwks — public parts of every key that may verify a live token (pending, active,
 * retired-but-kept). No credentials. Short client caching; edges refetch on gateway.jwks.updated anyway.
 */
export const JWKS_MAX_AGE_SECONDS = 30;

export function mountJwksRoutes(router: Router, c: AuthContext): void {
  router.get('/oidc/jwks', async (_req, res) => {
    const keys = await c.keys.publicKeys();
    res.setHeader('cache-control', `public, max-age=${JWKS_MAX_AGE_SECONDS}, must-revalidate`);
    res.json({ keys });
  });
}
