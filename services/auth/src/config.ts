import { commonConfig, env } from '@platform/kernel';
import { z } from 'zod';

/** Signature algorithms per key family; the size of an EC key is fixed by its curve. */
export const SUPPORTED_SIGNING = {
  RSA: { algs: ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512'], sizes: [2048, 3072, 4096] },
  EC: { algs: ['ES256', 'ES384', 'ES512'], sizes: [256, 384, 521] },
} as const;

/** EC algorithm -> (curve, size in bits). */
export const EC_CURVES: Record<string, { curve: string; size: number }> = {
  ES256: { curve: 'P-256', size: 256 },
  ES384: { curve: 'P-384', size: 384 },
  ES512: { curve: 'P-521', size: 521 },
};

/** Why auth does not start on MongoDB without SIGNING_KEYS_ENCRYPTION_KEY (decision 0033), and what to do. */
export const SIGNING_KEYS_ENCRYPTION_KEY_REQUIRED =
  'required with MONGO_URL (it encrypts the private signing keys stored in MongoDB): the same random secret of ' +
  '32+ characters in every auth instance, e.g. `openssl rand -base64 48`';

/** auth's configuration; every key is an environment variable, documented in the README. */
export const authConfigSchema = z
  .object({
    ...commonConfig,
    /** `iss` of session JWTs (shared with the edge, which checks it) */
    JWT_ISSUER: z.string().min(1).default('http://localhost:8080'),
    /** `aud` of session JWTs (shared with the edge, which checks it) */
    JWT_AUDIENCE: z.string().min(1).default('platform-api'),
    /** lifetime of session JWTs in seconds; also how long a rotated key keeps verifying (spec 8) */
    ACCESS_TOKENS_MAX_AGE: env.int(2_592_000, 60),
    /** `client_id` claim of tokens issued by the anonymous login */
    ANONYMOUS_CLIENT_ID: z.string().min(1).default('platform-anonymous'),
    /** `scope` claim (space-separated) of tokens issued by the anonymous login */
    ANONYMOUS_SCOPE: z.string().min(1).default('openid'),
    /** anonymous logins allowed per client address per window */
    ANONYMOUS_LOGIN_RATE_LIMIT: env.int(20, 1),
    /** the rate-limit window of the anonymous login, seconds */
    ANONYMOUS_LOGIN_RATE_WINDOW_SECONDS: env.int(60, 1),
    /** signing-key family (spec 8) */
    JWKS_KTY: z.enum(['RSA', 'EC']).default('RSA'),
    /** signature algorithm (spec 8) */
    JWKS_ALG: z.string().default('RS256'),
    /** key size in bits (spec 8); for EC it must match the curve of JWKS_ALG (256, 384, 521) */
    JWKS_SIZE: z.coerce.number().int().default(2048),
    /** a new signing key is made every this many days (spec 8) */
    JWKS_ROTATION_DAYS: z.coerce.number().positive().default(30),
    /** seconds a new key is published in the JWKS before it signs, so every edge knows it first */
    JWKS_PUBLISH_DELAY_SECONDS: env.int(120, 0),
    /** seconds added to a retired key's retention beyond ACCESS_TOKENS_MAX_AGE (clock skew, slow instances) */
    JWKS_RETENTION_SKEW_SECONDS: env.int(300, 0),
    /** how often each instance re-checks rotation, activation and removal, ms */
    JWKS_CHECK_INTERVAL_MS: env.int(30_000, 10),
    /**
     * secret (32+ characters) encrypting private signing keys at rest (AES-256-GCM); required with MONGO_URL,
     * the same in every instance
     */
    SIGNING_KEYS_ENCRYPTION_KEY: z.string().min(32, 'must be at least 32 characters').optional(),
    /** seconds the edge may cache an answer of POST /internal/principal (at most 60) */
    PRINCIPAL_CACHE_TTL_SECONDS: z.coerce.number().int().min(0).max(60).default(30),
    /** longest lifetime a user access token may be given, days */
    ACCESS_TOKEN_MAX_LIFETIME_DAYS: env.int(366, 1),
    /** most live access tokens one user may hold */
    ACCESS_TOKENS_PER_USER_LIMIT: env.int(100, 1),
    /** most organizations one user may have created and not deleted (anonymous users included) */
    ORGANIZATIONS_PER_USER_LIMIT: env.int(100, 1),
    /** public root of the platform ({base_url}) for mailed links, SSO callbacks and cookie flags; unset: JWT_ISSUER */
    PUBLIC_BASE_URL: z.url().optional(),
    /** `client_id` claim of sessions from POST /v2/login and /v2/signup */
    PASSWORD_CLIENT_ID: z.string().min(1).default('platform-password'),
    /** `scope` claim of sessions from POST /v2/login and /v2/signup */
    PASSWORD_SCOPE: z.string().min(1).default('openid email profile'),
    /** scrypt cost N of password hashes (a power of two); with r=8, p=3 the OWASP-equivalent of 2^17/8/1 */
    PASSWORD_SCRYPT_N: z.coerce
      .number()
      .int()
      .min(1024)
      .refine((n) => (n & (n - 1)) === 0, 'must be a power of two')
      .default(32_768),
    /** scrypt block size r of password hashes */
    PASSWORD_SCRYPT_R: env.int(8, 1),
    /** scrypt parallelism p of password hashes */
    PASSWORD_SCRYPT_P: env.int(3, 1),
    /** shortest password accepted at signup and reset */
    PASSWORD_MIN_LENGTH: env.int(10, 8),
    /** failed logins allowed per account per LOGIN_FAILURE_WINDOW_SECONDS before it is locked */
    LOGIN_ACCOUNT_MAX_FAILURES: env.int(10, 1),
    /** failed logins allowed per client address per LOGIN_FAILURE_WINDOW_SECONDS before it is locked */
    LOGIN_ADDRESS_MAX_FAILURES: env.int(100, 1),
    /** the window failed logins are counted in, seconds */
    LOGIN_FAILURE_WINDOW_SECONDS: env.int(900, 1),
    /** how long a locked account or address stays locked, seconds */
    LOGIN_LOCK_SECONDS: env.int(900, 1),
    /** signups, password-reset and verification mails allowed per client address per hour */
    ACCOUNT_MAIL_RATE_LIMIT: env.int(20, 1),
    /** lifetime of an email-verification link, seconds */
    EMAIL_VERIFICATION_TTL_SECONDS: env.int(172_800, 60),
    /** lifetime of a password-reset link, seconds */
    PASSWORD_RESET_TTL_SECONDS: env.int(3_600, 60),
    /** lifetime of a v2 session's refresh token (each refresh rotates it), seconds */
    REFRESH_TOKENS_MAX_AGE: env.int(7_776_000, 60),
    /**
     * how long a session, access token, API key, refresh token or mailed link is kept once it can no longer be used,
     * seconds; an anonymous user with nothing left goes this long after ACCESS_TOKENS_MAX_AGE (decision 0094)
     */
    RETENTION_GRACE_SECONDS: env.int(86_400, 60),
    /** how often one auth instance dates older records for removal and removes abandoned anonymous users, ms */
    RETENTION_INTERVAL_MS: env.int(3_600_000, 10),
    /**
     * SMTP server for account mails, e.g. smtp://user:pass@mail.example.com:587; unset: on the embedded store
     * mails go to the log, on MongoDB they are not sent
     */
    SMTP_URL: z.string().min(1).optional(),
    /** sender of account mails */
    MAIL_FROM: z.string().min(1).default('AI Platform <no-reply@localhost>'),
    /** lifetime of access tokens (session JWTs) issued by the OpenID Connect provider, seconds */
    OIDC_ACCESS_TOKEN_TTL_SECONDS: env.int(3_600, 60),
    /** redirect URIs (comma-separated) of the first-party client `platform-web`; default: {base_url}/account/callback */
    OIDC_FIRST_PARTY_REDIRECT_URIS: z.string().optional(),
    /** the platform name shown by GET / */
    PLATFORM_NAME: z.string().min(1).default('ai-platform'),
  })
  .superRefine((config, ctx) => {
    // Whoever reads the database must not be able to sign sessions; the embedded store keeps a local secret.
    if (config.MONGO_URL && !config.SIGNING_KEYS_ENCRYPTION_KEY) {
      ctx.addIssue({
        code: 'custom',
        path: ['SIGNING_KEYS_ENCRYPTION_KEY'],
        message: SIGNING_KEYS_ENCRYPTION_KEY_REQUIRED,
      });
    }
    // the public root mailed links and cookies are built on (accounts/public-url.ts)
    if (!config.PUBLIC_BASE_URL && !/^https?:\/\/[^/]/i.test(config.JWT_ISSUER)) {
      ctx.addIssue({
        code: 'custom',
        path: ['PUBLIC_BASE_URL'],
        message: "required when JWT_ISSUER is not the platform's http(s) URL",
      });
    }
    const family = SUPPORTED_SIGNING[config.JWKS_KTY];
    if (!(family.algs as readonly string[]).includes(config.JWKS_ALG)) {
      ctx.addIssue({
        code: 'custom',
        path: ['JWKS_ALG'],
        message: `unsupported with JWKS_KTY=${config.JWKS_KTY}; use one of ${family.algs.join(', ')}`,
      });
      return;
    }
    if (config.JWKS_KTY === 'RSA' && !(family.sizes as readonly number[]).includes(config.JWKS_SIZE)) {
      ctx.addIssue({
        code: 'custom',
        path: ['JWKS_SIZE'],
        message: `RSA keys must be one of ${family.sizes.join(', ')}`,
      });
    }
    if (config.JWKS_KTY === 'EC' && EC_CURVES[config.JWKS_ALG]!.size !== config.JWKS_SIZE) {
      ctx.addIssue({
        code: 'custom',
        path: ['JWKS_SIZE'],
        message: `${config.JWKS_ALG} needs JWKS_SIZE=${EC_CURVES[config.JWKS_ALG]!.size}`,
      });
    }
  });
export type AuthConfig = z.infer<typeof authConfigSchema>;
