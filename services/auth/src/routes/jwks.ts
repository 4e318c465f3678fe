import type { Router } from 'express';
import { z } from 'zod';
import type { AuthContext } from '../context';

/** One public signing key (RFC 7517): RSA keys carry `n` and `e`, EC keys `crv`, `x` and `y`. */
export const PublicJwkSchema = z
  .looseObject({
    kty: z.enum(['RSA', 'EC']),
    kid: z.string(),
    alg: z.string(),
    use: z.literal('sig'),
    n: z.string().optional(),
    e: z.string().optional(),
    crv: z.string().optional(),
    x: z.string().optional(),
    y: z.string().optional(),
  })
  .meta({ id: 'PublicJwk' });

export const JwksSchema = z
  .looseObject({ keys: z.array(PublicJwkSchema) })
  .meta({ id: 'Jwks', description: 'JSON Web Key Set (RFC 7517)' });

/**
 * GET {base_url}/oidc/jwks — public parts of every key that may verify a live token (pending, active,
 * retired-but-kept). No credentials, from any origin. Short client caching; edges refetch on gateway.jwks.updated
 * anyway.
 */
export const JWKS_MAX_AGE_SECONDS = 30;

export function mountJwksRoutes(router: Router, c: AuthContext): void {
  router.get('/oidc/jwks', async (_req, res) => {
    const keys = await c.keys.publicKeys();
    res.setHeader('cache-control', `public, max-age=${JWKS_MAX_AGE_SECONDS}, must-revalidate`);
    // public keys, asked without credentials: any page may verify an ID token with them
    res.setHeader('access-control-allow-origin', '*');
    res.json({ keys });
  });
}
