import { commonConfig, env, trustProxySetting } from '@platform/kernel';
import { z } from 'zod';

const jsonText = <S extends z.ZodType>(schema: S) =>
  z
    .string()
    .transform((text, ctx) => {
      try {
        return JSON.parse(text) as unknown;
      } catch {
        ctx.addIssue({ code: 'custom', message: 'must be valid JSON' });
        return z.NEVER;
      }
    })
    .pipe(schema);

/** a host name (letters, digits, `-`, `_`, dots) or a bracketed IPv6 address: what a request's Host names, port aside */
const HOST_NAME = /^(?:[a-z0-9_-]+(?:\.[a-z0-9_-]+)*|\[[0-9a-f:.]+\])$/;

/**
 * Host names as requests name them, in any case and with or without DNS's final dot; one with a port, a scheme, a path
 * or a space would never match a request (the port is not part of the name matched), so it is refused at start.
 */
const hostList = z
  .string()
  .default('')
  .transform((v) =>
    v
      .split(',')
      .map((h) => h.trim().toLowerCase().replace(/\.$/, ''))
      .filter(Boolean),
  )
  .refine((hosts) => hosts.every((h) => HOST_NAME.test(h)), {
    message: 'must be host names without port, scheme or path (e.g. llm.example.com), comma-separated',
  });

const pathPrefix = (fallback: string) =>
  z
    .string()
    .regex(/^\/[A-Za-z0-9._~-]+(\/[A-Za-z0-9._~-]+)*$/, 'must be a path such as /llm (no trailing slash)')
    .default(fallback);

const isoDay = z
  .string()
  .regex(/^\d{4}-\d{2}-\d{2}$/, 'must be YYYY-MM-DD')
  .refine(
    (d) =>
      !Number.isNaN(Date.parse(`${d}T00:00:00Z`)) && new Date(`${d}T00:00:00Z`).toISOString().startsWith(d),
    {
      message: 'must be a real calendar date',
    },
  );

const instantText = z
  .string()
  .refine((v) => !Number.isNaN(Date.parse(v)), 'must be an ISO 8601 date or date-time');

/** One lifecycle entry override (root/major), as given in API_VERSIONS. */
export const apiVersionOverride = z.object({
  status: z.enum(['beta', 'stable']).optional(),
  implementations: z.array(isoDay).min(1).optional(),
  deprecatedAt: instantText.nullable().optional(),
  retiredAt: instantText.nullable().optional(),
  successor: z.string().min(1).optional(),
  migrationDocUrl: z.string().min(1).optional(),
});
export type ApiVersionOverride = z.infer<typeof apiVersionOverride>;

/** The edge's configuration; every key is an environment variable, documented in the README. */
export const edgeConfigSchema = z.object({
  ...commonConfig,
  /** where auth listens */
  AUTH_URL: z.url(),
  /** where llm-quota listens ({gateway_url}/v1/quotas/...) */
  LLM_QUOTA_URL: z.url(),
  /** where llm-gateway listens (the rest of {gateway_url}); unset: the whole root goes to llm-quota */
  LLM_GATEWAY_URL: z.url().optional(),
  /** where legacy-agent listens */
  LEGACY_AGENT_URL: z.url(),

  /** path prefix of {gateway_url} on the edge's own host */
  GATEWAY_PATH_PREFIX: pathPrefix('/llm'),
  /** path prefix of {legacy_url} on the edge's own host */
  LEGACY_PATH_PREFIX: pathPrefix('/legacy'),
  /** host names (comma-separated) that serve {gateway_url} at their root, without the prefix */
  GATEWAY_HOSTS: hostList,
  /** host names (comma-separated) that serve {legacy_url} at their root, without the prefix */
  LEGACY_HOSTS: hostList,

  /** `iss` every session JWT must carry */
  JWT_ISSUER: z.string().min(1).default('http://localhost:8080'),
  /** `aud` every session JWT must carry */
  JWT_AUDIENCE: z.string().min(1).default('platform-api'),
  /**
   * the one signature algorithm session JWTs may use (must match auth's JWKS_ALG); `none`, HMAC and
   * every other algorithm are always refused
   */
  JWT_ALGORITHM: z
    .enum(['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512'])
    .default('RS256'),
  /** clock skew tolerated on `exp`/`nbf`/`iat` (at most 60 s) */
  JWT_CLOCK_SKEW_SECONDS: z.coerce.number().int().min(0).max(60).default(60),
  /** verified JWTs remembered (by sha256 of the token) so a repeated token costs a lookup */
  JWT_CACHE_MAX_ENTRIES: env.int(50_000, 1),
  /** JWKS document; default `{AUTH_URL}/oidc/jwks` */
  JWKS_URL: z.url().optional(),
  /** periodic JWKS reconciliation, heals a missed `gateway.jwks.updated` */
  JWKS_RECONCILE_INTERVAL_MS: env.int(60_000, 50),
  /** an unknown `kid` refetches the JWKS at most once per this period */
  JWKS_UNKNOWN_KID_COOLDOWN_MS: env.int(5_000, 0),
  /** timeout of one JWKS fetch */
  JWKS_FETCH_TIMEOUT_MS: env.int(5_000, 100),

  /** timeout of one `POST {AUTH_URL}/internal/principal` call */
  PRINCIPAL_LOOKUP_TIMEOUT_MS: env.int(5_000, 100),
  /** resolved principals remembered (by sha256 of the credential + path org) */
  PRINCIPAL_CACHE_MAX_ENTRIES: env.int(50_000, 1),
  /** upper bound of a cached principal's life, whatever auth answers (at most 60 s) */
  PRINCIPAL_CACHE_MAX_TTL_SECONDS: z.coerce.number().int().min(0).max(60).default(60),
  /** where a verified session JWT's principal comes from: auth's introspection, or the JWT alone */
  SESSION_PRINCIPAL_SOURCE: z.enum(['auth', 'jwt']).default('auth'),

  /** largest request body accepted (bytes); Content-Length is checked up front, chunked bodies as they stream */
  BODY_LIMIT_BYTES: env.int(10 * 1024 * 1024, 0),
  /** largest body of an upload route (audio transcriptions: OpenAI's 25 MiB file plus its form), checked the same way */
  UPLOAD_BODY_LIMIT_BYTES: env.int(26 * 1024 * 1024, 0),
  /** an upstream silent for this long answers 504; a client's request body that stops arriving this long, 408 */
  UPSTREAM_TIMEOUT_MS: env.int(30_000, 1),
  /**
   * llm-gateway silent for this long answers 504: a completion says nothing until its model answers, which may
   * take each model's `timeout_ms` (60 s by default) along its failover chain, plus retry waits (decision 0050)
   */
  GATEWAY_UPSTREAM_TIMEOUT_MS: env.int(300_000, 1),
  /** most sockets the edge opens to one upstream (kept alive between requests) */
  UPSTREAM_MAX_SOCKETS: env.int(512, 1),

  /** deprecation instant of {legacy_url}/v1 */
  LEGACY_V1_DEPRECATION_DATE: env.instant('2024-12-31T00:00:00Z'),
  /** retirement instant of {legacy_url}/v1: from then on it answers 410 */
  LEGACY_V1_RETIREMENT_DATE: env.instant('2025-12-31T00:00:00Z'),
  /** migration guide linked from legacy v1 deprecation headers and 410 answers */
  LEGACY_V1_MIGRATION_DOC_URL: z
    .string()
    .min(1)
    .default('https://docs.platform.example/migrations/legacy-v1-to-v2'),
  /** JSON overrides of the version lifecycle table, keyed `root/major` (see README) */
  API_VERSIONS: jsonText(
    z.record(z.string().regex(/^(base|gateway|legacy)\/v\d+$/), apiVersionOverride),
  ).optional(),

  /**
   * whose X-Forwarded-For/-Host/-Proto/-Prefix the edge believes: `false` (clients connect directly),
   * or the load balancers in front of it (addresses, CIDRs, `loopback`, `linklocal`, `uniquelocal`)
   */
  TRUST_PROXY: trustProxySetting('false'),
  /** Strict-Transport-Security max-age sent on answers to clients that came over TLS (0: never sent) */
  HSTS_MAX_AGE_SECONDS: env.int(31_536_000, 0),
  /** fraction (0..1) of successful requests written to the access log; answers >= 400 are always logged */
  ACCESS_LOG_SAMPLE_RATE: z.coerce.number().min(0).max(1).default(0.01),
  /** MongoDB database holding the shared rate-limit counters (when MONGO_URL is set) */
  RATE_LIMIT_MONGO_DB: z.string().min(1).default('platform_edge'),
});
export type EdgeConfig = z.infer<typeof edgeConfigSchema>;
