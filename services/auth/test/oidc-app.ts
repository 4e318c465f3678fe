import { createHash, randomBytes } from 'node:crypto';
import { sealPrincipal } from '@platform/kernel';
import { type AuthHarness, INTERNAL_SECRET, randomAddress } from './helpers';

export const APP_REDIRECT = 'http://127.0.0.1:7/callback';
const PASSWORD = 'correct horse battery';

/** Registers a relying party as the operator CLI does; answers the route's body (`clientSecret` once). */
export async function registerApp(h: AuthHarness, clientId: string, confidential = false) {
  const res = await h.http
    .put(`/internal/oidc-clients/${clientId}`)
    .set('x-platform-internal-secret', INTERNAL_SECRET)
    .send({ name: clientId, redirectUris: [APP_REDIRECT], confidential });
  if (res.status !== 200 && res.status !== 201) throw new Error(`registration: ${res.status} ${res.text}`);
  return res.body as { result: string; clientSecret?: string; tokenEndpointAuthMethod: string };
}

/** A person with a password who signed in to the platform (a session of PASSWORD_CLIENT_ID). */
export async function signUp(h: AuthHarness, email = `${randomBytes(6).toString('hex')}@example.com`) {
  const res = await h.http
    .post('/v2/signup')
    .set('x-forwarded-for', randomAddress())
    .send({ email, password: PASSWORD });
  if (res.status !== 201) throw new Error(`signup: ${res.status} ${res.text}`);
  return { email, userId: res.body.userId as string, sessionId: res.body.sessionId as string };
}

/**
 * An application's code + PKCE authorization at auth's provider, in a browser where `person` is signed in to the
 * platform: the edge's part is played as `AuthHarness.call` does (the session sealed into every request), cookies
 * are kept by name, the consent page is allowed. Answers the code and how to redeem it at the token endpoint.
 */
export async function authorizeApp(
  h: AuthHarness,
  person: { userId: string; sessionId: string },
  clientId: string,
  scope: string,
  /** sees the consent page before it is allowed */
  onConsent?: (page: string) => void,
) {
  const { principal } = await h.service.context.introspection.resolve(
    { kind: 'session', userId: person.userId, sessionId: person.sessionId },
    null,
    'test',
  );
  const sealed = sealPrincipal(principal, INTERNAL_SECRET, h.clock);
  const jar = new Map<string, string>();
  const verifier = randomBytes(32).toString('base64url');
  const query = new URLSearchParams({
    client_id: clientId,
    redirect_uri: APP_REDIRECT,
    response_type: 'code',
    scope,
    code_challenge: createHash('sha256').update(verifier).digest('base64url'),
    code_challenge_method: 'S256',
    state: randomBytes(8).toString('hex'),
  });
  let step: { path: string; form?: Record<string, string> } = { path: `/oidc/auth?${query}` };
  let code: string | null = null;
  for (let hops = 0; hops < 20 && code === null; hops++) {
    let req = step.form ? h.http.post(step.path).type('form').send(step.form) : h.http.get(step.path);
    req = req.set('x-platform-principal', sealed).set('x-platform-user-id', person.userId);
    if (jar.size > 0) req = req.set('cookie', [...jar].map(([k, v]) => `${k}=${v}`).join('; '));
    const res = await req;
    for (const line of (res.headers['set-cookie'] as unknown as string[] | undefined) ?? []) {
      const [pair, ...attrs] = line.split(';');
      const [name, value] = [pair!.slice(0, pair!.indexOf('=')).trim(), pair!.slice(pair!.indexOf('=') + 1)];
      if (value === '' || attrs.some((a) => /expires=Thu, 01 Jan 1970/i.test(a))) jar.delete(name);
      else jar.set(name, value);
    }
    const location = res.headers.location;
    if (location?.startsWith(APP_REDIRECT)) {
      code = new URL(location).searchParams.get('code');
    } else if (location) {
      const next = new URL(location, 'http://auth.invalid');
      step = { path: `${next.pathname}${next.search}` };
    } else if (res.text.includes('Allow access?')) {
      onConsent?.(res.text);
      const action = /action="(\/oidc\/interaction\/[^"]+\/confirm)"/.exec(res.text)![1]!;
      const csrf = /name="csrf" value="([^"]+)"/.exec(res.text.slice(res.text.indexOf(action)))![1]!;
      step = { path: action, form: { csrf } };
    } else {
      throw new Error(`unexpected answer ${res.status} at ${step.path}: ${res.text.slice(0, 500)}`);
    }
  }
  if (!code) throw new Error('no code reached the application');
  return {
    code,
    /** the token request; `clientSecret` by client_secret_post */
    redeem: (clientSecret?: string) =>
      h.http
        .post('/oidc/token')
        .type('form')
        .send({
          grant_type: 'authorization_code',
          code: code!,
          redirect_uri: APP_REDIRECT,
          code_verifier: verifier,
          client_id: clientId,
          ...(clientSecret ? { client_secret: clientSecret } : {}),
        }),
  };
}

/** GET /oidc/me with an access token of ours, as the edge forwards it (its session sealed). */
export async function userinfo(h: AuthHarness, accessToken: string) {
  const claims = JSON.parse(Buffer.from(accessToken.split('.')[1]!, 'base64url').toString());
  return h.call(
    { credential: { kind: 'session', userId: claims.sub, sessionId: claims.platformSessionId } },
    'get',
    '/oidc/me',
  );
}
