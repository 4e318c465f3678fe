import type { Clock } from '@platform/kernel';
import { startMailCatcher } from '../../services/auth/test/mail-catcher';
import { startTestPlatform } from '../harness';
import { consentedCode } from './oidc-sign-in';

/** What a client sends to authenticate in a form: its client_id, and its client_secret if it has one. */
type ClientForm = Record<string, string> & { client_id: string };

/**
 * The platform as the OpenID Connect tests need it, on `dataDir` and `clock` (the system's if not given): auth's
 * mails go to a catcher, passwords hash cheaply so that each test can sign a new person in, and a new signing key
 * is published at once. `secret` is the internal secret an operator registers clients with.
 */
export async function startOidcPlatform(options: { secret: string; dataDir: string; clock?: Clock }) {
  const mail = await startMailCatcher();
  const p = await startTestPlatform({
    dataDir: options.dataDir,
    clock: options.clock,
    env: {
      PLATFORM_INTERNAL_SECRET: options.secret,
      SMTP_URL: mail.url,
      PASSWORD_SCRYPT_N: '1024',
      PASSWORD_SCRYPT_P: '1',
      JWKS_PUBLISH_DELAY_SECONDS: '0',
    },
  }).catch(async (err) => {
    await mail.close();
    throw err;
  });
  const base = p.baseUrl;

  /** a form POST through the edge, as a client sends it to the provider's token endpoints */
  const post = (target: string, headers: Record<string, string>, form: Record<string, string>) =>
    fetch(`${base}${target}`, {
      method: 'POST',
      headers: { ...headers, 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams(form).toString(),
    });

  return {
    p,
    base,
    post,
    /** registers the client `clientId` as an operator does (201 expected): a confidential one's secret */
    async register(clientId: string, body: Record<string, unknown>): Promise<{ clientSecret?: string }> {
      const res = await fetch(`${p.upstreams.auth}/internal/oidc-clients/${clientId}`, {
        method: 'PUT',
        headers: { 'x-platform-internal-secret': options.secret, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      if (res.status !== 201) throw new Error(`registering ${clientId}: ${res.status} ${await res.text()}`);
      return (await res.json()) as { clientSecret?: string };
    },
    /** Tokens of a new person who signed in to the client `auth` authenticates as, and allowed it. */
    async tokensOf(auth: ClientForm, redirectUri: string) {
      const { code, verifier } = await consentedCode(base, {
        clientId: auth.client_id,
        redirectUri,
        scope: 'openid email offline_access',
      });
      const exchanged = await post(
        '/oidc/token',
        {},
        {
          ...auth,
          grant_type: 'authorization_code',
          code,
          code_verifier: verifier,
          redirect_uri: redirectUri,
        },
      );
      if (exchanged.status !== 200)
        throw new Error(`code exchange: ${exchanged.status} ${await exchanged.text()}`);
      return (await exchanged.json()) as { access_token: string; refresh_token: string };
    },
    /**
     * Whether a grant still holds: its refresh token refreshes (a revocation deletes the grant before it answers).
     * Answers the new refresh token, or null when the grant is gone.
     */
    async refreshed(refreshToken: string, auth: Record<string, string>): Promise<string | null> {
      const res = await post(
        '/oidc/token',
        {},
        { ...auth, grant_type: 'refresh_token', refresh_token: refreshToken },
      );
      if (res.status !== 200) return null;
      return ((await res.json()) as { refresh_token: string }).refresh_token;
    },
    async stop() {
      await p.stop();
      await mail.close();
    },
  };
}

export type OidcPlatform = Awaited<ReturnType<typeof startOidcPlatform>>;
