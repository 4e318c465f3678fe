import { ConfigError, loadConfig } from '@platform/kernel';
import { authConfigSchema } from './config';

const base = { PLATFORM_INTERNAL_SECRET: 's'.repeat(40) };
const issuesOf = (env: Record<string, string>) => {
  try {
    loadConfig(authConfigSchema, { ...base, ...env });
    return [];
  } catch (err) {
    if (err instanceof ConfigError) return err.issues;
    throw err;
  }
};

describe('auth configuration', () => {
  it('defaults to the spec values', () => {
    const config = loadConfig(authConfigSchema, base);
    expect(config).toMatchObject({
      ACCESS_TOKENS_MAX_AGE: 2_592_000,
      JWKS_ROTATION_DAYS: 30,
      JWKS_KTY: 'RSA',
      JWKS_ALG: 'RS256',
      JWKS_SIZE: 2048,
      JWT_ISSUER: 'http://localhost:8080',
      JWT_AUDIENCE: 'platform-api',
    });
  });

  it.each([
    [{ JWKS_KTY: 'OKP' }, 'JWKS_KTY'],
    [{ JWKS_ALG: 'HS256' }, 'JWKS_ALG'],
    [{ JWKS_ALG: 'ES256' }, 'JWKS_ALG'],
    [{ JWKS_SIZE: '1024' }, 'JWKS_SIZE'],
    [{ JWKS_KTY: 'EC', JWKS_ALG: 'ES256' }, 'JWKS_SIZE'],
    [{ JWKS_KTY: 'EC', JWKS_ALG: 'RS256', JWKS_SIZE: '256' }, 'JWKS_ALG'],
    [{ PRINCIPAL_CACHE_TTL_SECONDS: '61' }, 'PRINCIPAL_CACHE_TTL_SECONDS'],
    [{ SIGNING_KEYS_ENCRYPTION_KEY: 'short' }, 'SIGNING_KEYS_ENCRYPTION_KEY'],
    // mailed links are built on PUBLIC_BASE_URL, else on the issuer: one of them must be a URL
    [{ JWT_ISSUER: 'platform' }, 'PUBLIC_BASE_URL'],
  ])('refuses unsupported signing settings at start-up: %j', (env, key) => {
    expect(issuesOf(env).map((i) => i.key)).toContain(key);
  });

  it('refuses MongoDB without SIGNING_KEYS_ENCRYPTION_KEY, saying how to make one (decision 0033)', () => {
    expect(issuesOf({ MONGO_URL: 'mongodb://db:27017/auth' })).toEqual([
      {
        key: 'SIGNING_KEYS_ENCRYPTION_KEY',
        message: expect.stringMatching(/^required with MONGO_URL .*openssl rand -base64 48/),
      },
    ]);
    expect(
      issuesOf({ MONGO_URL: 'mongodb://db:27017/auth', SIGNING_KEYS_ENCRYPTION_KEY: 'k'.repeat(40) }),
    ).toEqual([]);
    // the embedded store keeps a generated secret in DATA_DIR
    expect(issuesOf({})).toEqual([]);
  });

  it.each([
    { JWKS_KTY: 'RSA', JWKS_ALG: 'PS512', JWKS_SIZE: '4096' },
    { JWKS_KTY: 'EC', JWKS_ALG: 'ES384', JWKS_SIZE: '384' },
    { JWKS_KTY: 'EC', JWKS_ALG: 'ES512', JWKS_SIZE: '521' },
  ])('accepts %j', (env) => {
    expect(issuesOf(env)).toEqual([]);
  });
});
