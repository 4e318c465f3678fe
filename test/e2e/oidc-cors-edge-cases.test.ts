import { request } from 'node:http';
import path from 'node:path';
import { createEmbeddedStore } from '@platform/store';
import { tempDir } from '@platform/testkit';
import type { OidcClientDoc } from '../../services/auth/src/oidc/clients';
import { callJson } from '../harness';
import { type OidcPlatform, startOidcPlatform } from '../support/oidc-platform';
import { consentedCode } from '../support/oidc-sign-in';

/**
 * The CORS of {base_url}/oidc through the edge, at its edges: origins a browser sends that no registered page has
 * (`null`, another spelling of one), a client stored before redirect URIs were checked, a backend that sends an
 * Origin, the headers a page needs to read an answer, and what else a preflight could reach.
 */

const SECRET = 'oidc-cors-edge-cases-internal-secret-0123456789';
const APP = 'https://app.example';
const LOOPBACK = 'http://[::1]:8080';

describe('OpenID Connect CORS at its edges', () => {
  const data = tempDir('oidc-cors-edge-cases-');
  let oidc: OidcPlatform;
  let base: string;
  let backendSecret: string;

  beforeAll(async () => {
    // a native app's client, stored by an earlier version that took any redirect URI (its own scheme, a typo)
    const store = createEmbeddedStore({ dataDir: path.join(data.dir, 'auth'), compactionIntervalMs: 0 });
    const now = new Date();
    await store.collection<OidcClientDoc>('oidc_clients').insertOne({
      _id: 'native-legacy',
      metadata: {
        client_id: 'native-legacy',
        redirect_uris: ['com.example.app:/cb', 'not a uri'],
        grant_types: ['authorization_code', 'refresh_token'],
        response_types: ['code'],
        token_endpoint_auth_method: 'none',
        scope: 'openid email profile offline_access',
      },
      firstParty: false,
      createdAt: now,
      updatedAt: now,
      revision: 'stored-before-validation',
    });
    await store.close();

    oidc = await startOidcPlatform({ secret: SECRET, dataDir: data.dir });
    base = oidc.base;
    await oidc.register('spa', { redirectUris: [`${APP}/callback`, `${LOOPBACK}/cb`] });
    backendSecret = (
      await oidc.register('backend', {
        redirectUris: ['https://backend.example/callback'],
        confidential: true,
      })
    ).clientSecret!;
  });
  afterAll(async () => {
    await oidc?.stop();
    data.remove();
  });

  const preflight = (target: string, origin: string, method = 'POST') =>
    fetch(`${base}${target}`, {
      method: 'OPTIONS',
      headers: {
        origin,
        'access-control-request-method': method,
        'access-control-request-headers': 'authorization',
      },
    });
  const allowed = (res: Response) => res.headers.get('access-control-allow-origin');

  /** A request with its target as written (fetch would resolve `..` before sending it). */
  const raw = (target: string, method: string, headers: Record<string, string>) =>
    new Promise<{ status: number; headers: Record<string, unknown> }>((resolve, reject) => {
      const url = new URL(base);
      const req = request({ host: url.hostname, port: url.port, method, path: target, headers }, (res) => {
        res.resume();
        res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers }));
      });
      req.on('error', reject);
      req.end();
    });

  /** A person who signed in to `clientId` and allowed it: the code its callback got, and its PKCE verifier. */
  const authorizationCode = (clientId: string, redirectUri: string) =>
    consentedCode(base, { clientId, redirectUri, scope: 'openid email' });

  it('the `null` origin of sandboxed frames and file pages is no registered page, even beside a native app’s own scheme', async () => {
    for (const target of ['/oidc/token', '/oidc/token/revocation', '/oidc/me']) {
      const asked = await preflight(target, 'null');
      expect([target, asked.status, allowed(asked)]).toEqual([target, 204, null]);
      expect(asked.headers.get('vary')).toMatch(/origin/i);
    }
    const me = await fetch(`${base}/oidc/me`, {
      headers: { origin: 'null', authorization: 'Bearer not-a-token' },
    });
    expect(me.status).toBe(401);
    expect(allowed(me)).toBeNull();
  });

  it('an origin matches as a browser serializes it: default port and case left out, no path; IPv6 loopback works', async () => {
    for (const other of [
      'https://app.example:443',
      'HTTPS://APP.EXAMPLE',
      'https://app.example/',
      'http://app.example',
    ]) {
      expect([other, allowed(await preflight('/oidc/token', other))]).toEqual([other, null]);
    }
    for (const origin of [APP, LOOPBACK]) {
      const asked = await preflight('/oidc/token', origin);
      expect([origin, asked.status, allowed(asked)]).toEqual([origin, 204, origin]);
      expect(asked.headers.get('access-control-max-age')).toBe('3600');
    }
  });

  it('an application registered while pages of its origin are refused: its next preflight is allowed', async () => {
    const LATE = 'https://late.example';
    expect(allowed(await preflight('/oidc/token', LATE))).toBeNull();
    await oidc.register('late-spa', { redirectUris: [`${LATE}/callback`] });
    expect(allowed(await preflight('/oidc/token', LATE))).toBe(LATE);
  });

  it('userinfo’s 401 carries the Bearer challenge, and the app’s page may read it', async () => {
    const refused = await fetch(`${base}/oidc/me`, {
      headers: { origin: APP, authorization: 'Bearer not-a-token' },
    });
    expect(refused.status).toBe(401);
    expect(allowed(refused)).toBe(APP);
    expect(refused.headers.get('www-authenticate')).toMatch(/^Bearer /);
    expect(refused.headers.get('access-control-expose-headers')).toMatch(/www-authenticate/i);
  });

  it('a preflight reaches only the preflight of the listed endpoints: variants of their paths, or others, do not pass', async () => {
    const asking = { origin: APP, 'access-control-request-method': 'POST' };
    expect((await raw('/OIDC/Me/', 'OPTIONS', asking)).headers['access-control-allow-origin']).toBe(APP);
    for (const [target, status] of [
      // dot segments, plain or encoded, never pass the edge; an encoded slash names no listed path
      ['/oidc/me/../../v2/me', 400],
      ['/oidc/me/%2e%2e/%2e%2e/v2/me', 400],
      ['/oidc/me%2f..%2f..%2fv2%2fme', 401],
      // the provider's other endpoints, and the rest of the platform, still need a credential
      ['/oidc/interaction/x/login', 401],
      ['/oidc/auth', 401],
      ['/oidc/.well-known/oauth-authorization-server', 401],
      ['/v2/me', 401],
      // the edge ignores every trailing slash, auth's routes one: its router answers 404
      ['/oidc/token//', 404],
    ] as const) {
      const answer = await raw(target, 'OPTIONS', asking);
      expect([target, answer.status]).toEqual([target, status]);
      expect([target, answer.headers['access-control-allow-origin']]).toEqual([target, undefined]);
    }
  });

  it('a confidential client’s backend that sends an Origin (or none) exchanges its code and revokes its token; no page reads them', async () => {
    const redirectUri = 'https://backend.example/callback';
    const backendPost = (target: string, headers: Record<string, string>, form: Record<string, string>) =>
      oidc.post(target, headers, { client_id: 'backend', client_secret: backendSecret, ...form });
    for (const headers of [{ origin: 'https://backend.example' }, {}] as Record<string, string>[]) {
      const { code, verifier } = await authorizationCode('backend', redirectUri);
      const form = {
        grant_type: 'authorization_code',
        code,
        code_verifier: verifier,
        redirect_uri: redirectUri,
      };
      const exchanged = await backendPost('/oidc/token', headers, form);
      const tokens = (await exchanged.json()) as { access_token: string; error_description?: string };
      expect([headers, exchanged.status, tokens.error_description]).toEqual([headers, 200, undefined]);
      if (headers.origin) expect(allowed(exchanged)).toBeNull();

      const me = async () =>
        (await callJson(`${base}/oidc/me`, 'GET', { bearer: tokens.access_token })).status;
      expect(await me()).toBe(200);
      const revoked = await backendPost('/oidc/token/revocation', headers, { token: tokens.access_token });
      expect([headers, revoked.status]).toEqual([headers, 200]);
      expect(allowed(revoked)).toBeNull();
      expect(await me()).toBe(401);
    }
  });
});
