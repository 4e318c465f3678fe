import { createPrivateKey, createPublicKey, createSign, generateKeyPairSync, randomUUID } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { type Principal, permissionTree } from '@platform/contracts';

export const BENCH_SECRET = 'bench-internal-secret-0123456789abcdef0123456789';
export const ACCESS_TOKEN = 'at:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA';
export const ORG_KEY = 'iak_bench_00000000-0000-4000-8000-000000000000';

/** Writes a fresh RSA key for one benchmark run; the children read it through BENCH_KEY_FILE. */
export function writeBenchKey(file: string): void {
  // encoded by the generation job: a KeyObject straight from it can deadlock Node 20 when read (decision 0087)
  const { privateKey } = generateKeyPairSync('rsa', {
    modulusLength: 2048,
    publicKeyEncoding: { type: 'spki', format: 'pem' },
    privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
  });
  writeFileSync(file, privateKey);
}

export function benchCredentials() {
  const pem = readFileSync(process.env.BENCH_KEY_FILE!, 'utf8');
  const privateKey = createPrivateKey(pem);
  const kid = 'bench-key';
  const jwk = { ...createPublicKey(privateKey).export({ format: 'jwk' }), kid, alg: 'RS256', use: 'sig' };
  const principalFor = (kind: string): Principal => ({
    credential: {
      kind: kind === 'api_key' ? 'org_api_key' : (kind as Principal['credential']['kind']),
      id: 'cred-1',
    },
    session: {
      id: kind === 'session' ? 'session-1' : null,
      org: {
        slug: 'bench',
        name: 'Bench',
        role: { slug: 'admin', permissions: ['models:read'], scopes: [] },
        groups: [],
        settings: {},
        subscription: null,
      },
    },
    user: {
      id: kind === 'api_key' ? null : 'user-1',
      email: 'u@example.com',
      anonymous: false,
      role: null,
    },
    run: {
      permissions: permissionTree(['models:read']),
      scopes: [],
      correlationId: '',
      sourceWorkspaceId: null,
    },
  });
  const b64 = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url');
  const sessionJwt = () => {
    const iat = Math.floor(Date.now() / 1000);
    const input = `${b64({ alg: 'RS256', typ: 'JWT', kid })}.${b64({
      sub: 'user-1',
      platformSessionId: 'session-1',
      jti: randomUUID(),
      scope: 'openid',
      client_id: 'platform',
      iss: 'http://localhost:8080',
      aud: 'platform-api',
      iat,
      exp: iat + 3600,
    })}`;
    return `${input}.${createSign('RSA-SHA256').update(input).sign(privateKey).toString('base64url')}`;
  };
  return { jwk, principalFor, sessionJwt };
}
