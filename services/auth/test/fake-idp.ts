import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import Provider from 'oidc-provider';
import type { AuthHarness } from './helpers';

/**
 * A company's identity provider: an oidc-provider on this machine whose development login accepts any name
 * (`<name>@acme.example` is its verified email). Its one client is the platform, by client_secret_post, so a
 * token request with another secret is refused.
 */
export async function startFakeIdp(options: {
  clientId: string;
  clientSecret: string;
  redirectUris: string[];
  /** of the email its people have (`<name>@acme.example` unless given) */
  emailDomain?: string;
}) {
  const server = createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const provider = new Provider(url, {
    clients: [
      {
        client_id: options.clientId,
        client_secret: options.clientSecret,
        redirect_uris: options.redirectUris,
        token_endpoint_auth_method: 'client_secret_post',
      },
    ],
    claims: { email: ['email', 'email_verified'], profile: ['given_name'] },
    async findAccount(_ctx, sub) {
      return {
        accountId: sub,
        claims: async () => ({
          sub,
          email: `${sub}@${options.emailDomain ?? 'acme.example'}`,
          email_verified: true,
          given_name: sub,
        }),
      };
    },
    pkce: { required: () => true },
    ttl: {
      AccessToken: 600,
      AuthorizationCode: 60,
      Grant: 600,
      IdToken: 600,
      Interaction: 600,
      Session: 600,
    },
  });
  server.on('request', provider.callback());
  return { url, close: () => new Promise<void>((done) => server.close(() => done())) };
}

/**
 * A person signs in to auth with the external provider `slug` as `name`: auth's `/account/sso/:slug` sends
 * them to the provider (its pending-request cookie kept), they sign in and allow there, and the provider's
 * redirect is brought to auth's callback. Answers the callback's answer.
 */
export async function signInWith(h: AuthHarness, slug: string, name: string) {
  const start = await h.http.get(`/account/sso/${slug}?next=/account`);
  if (start.status !== 303) throw new Error(`sign-in start: ${start.status} ${start.text.slice(0, 300)}`);
  const state = (start.headers['set-cookie'] as unknown as string[]).find((c) => c.startsWith('sso-state='))!;
  const jar = new Map<string, string>();
  let url = new URL(start.headers.location!);
  const idp = url.origin;
  let init: RequestInit = {};
  for (let hops = 0; hops < 20 && url.origin === idp; hops++) {
    const res = await fetch(url, {
      ...init,
      redirect: 'manual',
      headers: { ...init.headers, cookie: [...jar].map(([k, v]) => `${k}=${v}`).join('; ') },
    });
    for (const line of res.headers.getSetCookie()) {
      const pair = line.split(';')[0]!;
      jar.set(pair.slice(0, pair.indexOf('=')), pair.slice(pair.indexOf('=') + 1));
    }
    const location = res.headers.get('location');
    if (location) {
      url = new URL(location, url);
      init = {};
      continue;
    }
    // the development login, then the consent
    const text = await res.text();
    const action = /action="([^"]+)"/.exec(text)?.[1];
    const prompt = /name="prompt" value="([^"]+)"/.exec(text)?.[1];
    if (!action || !prompt) throw new Error(`the provider answered ${res.status}: ${text.slice(0, 300)}`);
    url = new URL(action, url);
    init = {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams(
        prompt === 'login' ? { prompt, login: name, password: 'x' } : { prompt },
      ).toString(),
    };
  }
  return h.http.get(`${url.pathname}${url.search}`).set('cookie', state.split(';')[0]!);
}
