import * as oidc from 'openid-client';
import { BrowserAgent, formFields } from './browser-agent';

/**
 * A new person signs up on the platform at `base`, signs in to `clientId` through the provider's pages (the
 * authorization code flow with PKCE, `prompt=consent`) and allows it: the code its redirect URI got, and the PKCE
 * verifier that redeems it.
 */
export async function consentedCode(
  base: string,
  { clientId, redirectUri, scope }: { clientId: string; redirectUri: string; scope: string },
): Promise<{ code: string; verifier: string }> {
  const email = `oidc-${Date.now()}-${Math.random().toString(36).slice(2, 8)}@example.com`;
  const password = 'a long and happy password';
  const signup = await fetch(`${base}/v2/signup`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ email, password }),
  });
  if (signup.status !== 201) throw new Error(`signup: ${signup.status} ${await signup.text()}`);
  const verifier = oidc.randomPKCECodeVerifier();
  const query = new URLSearchParams({
    client_id: clientId,
    response_type: 'code',
    redirect_uri: redirectUri,
    scope,
    code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
    code_challenge_method: 'S256',
    prompt: 'consent',
  });
  const browser = new BrowserAgent(base);
  const signIn = await browser.go(`/oidc/auth?${query}`);
  const uid = /\/oidc\/interaction\/([^/"]+)\/login/.exec(signIn.text)?.[1];
  if (!uid) throw new Error(`no sign-in form: ${signIn.text.slice(0, 500)}`);
  const consent = await browser.go(`/oidc/interaction/${uid}/login`, {
    method: 'POST',
    form: { ...formFields(signIn.text, `/oidc/interaction/${uid}/login`), email, password },
  });
  const confirm = /\/oidc\/interaction\/[^/"]+\/confirm/.exec(consent.text)?.[0];
  if (!confirm || !consent.text.includes('Allow access?'))
    throw new Error(`no consent: ${consent.text.slice(0, 500)}`);
  const callback = await browser.go(confirm, { method: 'POST', form: formFields(consent.text, confirm) });
  const code = callback.url.startsWith(redirectUri) ? new URL(callback.url).searchParams.get('code') : null;
  if (!code) throw new Error(`no code at the redirect URI: ${callback.url}`);
  return { code, verifier };
}
