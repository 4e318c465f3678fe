import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { runCli } from '@platform/operator-cli';
import type { Browser, Page } from 'playwright-core';
import { startMailCatcher } from '../../services/auth/test/mail-catcher';
import { chromiumAvailable, launchChromium, step } from '../browser/chromium';
import { callJson, startPlatformWithMail, type TestPlatform } from '../harness';

/**
 * A single-page application in Chromium, on its own loopback origin: it signs its user in with code + PKCE, then
 * redeems the code and reads userinfo with fetch() from its page, through the edge, as any SPA library does. A page of
 * an origin no client registered is stopped by the browser.
 */
const run = chromiumAvailable() ? describe : describe.skip;

const PASSWORD = 'correct horse battery';

/** The app: `/` sends the browser to sign in, `/callback` redeems the code and shows whom userinfo names. */
const appPage = (base: string) => `<!doctype html><title>Notes</title><p id="out">working</p>
<script type="module">
const out = document.getElementById('out');
const redirectUri = location.origin + '/callback';
const b64url = (bytes) =>
  btoa(String.fromCharCode(...new Uint8Array(bytes))).replace(/\\+/g, '-').replace(/\\//g, '_').replace(/=+$/, '');
try {
  if (location.pathname === '/') {
    const verifier = b64url(crypto.getRandomValues(new Uint8Array(32)));
    sessionStorage.setItem('verifier', verifier);
    const challenge = b64url(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(verifier)));
    const query = new URLSearchParams({ client_id: 'spa', response_type: 'code', redirect_uri: redirectUri,
      scope: 'openid email', code_challenge: challenge, code_challenge_method: 'S256' });
    location.assign('${base}/oidc/auth?' + query);
  } else {
    const body = new URLSearchParams({ grant_type: 'authorization_code', client_id: 'spa', redirect_uri: redirectUri,
      code: new URLSearchParams(location.search).get('code'), code_verifier: sessionStorage.getItem('verifier') });
    const tokens = await (await fetch('${base}/oidc/token', { method: 'POST', body })).json();
    // Authorization is no simple header: the browser sends a preflight first
    const me = await fetch('${base}/oidc/me', { headers: { authorization: 'Bearer ' + tokens.access_token } });
    out.textContent = 'signed in as ' + (await me.json()).email;
  }
} catch (err) {
  out.textContent = 'failed: ' + err.message;
}
</script>`;

run('an application’s page of another origin calls OpenID Connect in Chromium', () => {
  let p: TestPlatform;
  let mail: Awaited<ReturnType<typeof startMailCatcher>>;
  let base: string;
  let browser: Browser;
  let page: Page;
  const servers: Server[] = [];

  /** A web server on a loopback port of its own (an origin): answers `html` on every path. */
  async function site(html: () => string): Promise<string> {
    const server = createServer((_req, res) => {
      res.setHeader('content-type', 'text/html');
      res.end(html());
    });
    servers.push(server);
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  }

  beforeAll(async () => {
    let cliEnv: Record<string, string>;
    ({ p, mail, base, cliEnv } = await startPlatformWithMail({
      secret: 'oidc-cors-chromium-internal-secret-0123456789abcdef',
    }));
    const app = await site(() => appPage(base));
    const io = { out: () => undefined, err: (l: string) => console.error(l) };
    const add = ['oidc-client', 'add', 'spa', '--redirect-uri', `${app}/callback`, '--name', 'Notes'];
    expect(await runCli(add, cliEnv, io)).toBe(0);
    browser = await launchChromium();
    page = await browser.newPage();
    await page.goto(app);
  });
  afterAll(async () => {
    await browser?.close();
    for (const server of servers) server.close();
    await p?.stop();
    await mail?.close();
  });

  it('the app signs its user in and reads userinfo from its page; a page elsewhere cannot', async () => {
    const email = `spa-${Date.now()}@example.com`;
    expect(
      (await callJson(`${base}/v2/signup`, 'POST', { body: { email, password: PASSWORD } })).status,
    ).toBe(201);
    await step(page, 'oidc-cors-sign-in', async () => {
      await page.getByLabel('Email').fill(email);
      await page.getByLabel('Password').fill(PASSWORD);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.getByRole('heading', { name: 'Allow access?' }).waitFor();
      await page.getByRole('button', { name: 'Allow' }).click();
    });
    await step(page, 'oidc-cors-app-page', async () => {
      const out = page.locator('#out', { hasText: /signed in|failed/ });
      await out.waitFor();
      expect(await out.textContent()).toBe(`signed in as ${email}`);
    });

    // the same calls from an origin no client registered: the browser withholds every answer
    const elsewhere = await browser.newPage();
    await elsewhere.goto(await site(() => '<!doctype html><title>Elsewhere</title>'));
    const outcomes = await elsewhere.evaluate(async (platform) => {
      const attempt = (path: string, init: RequestInit) =>
        fetch(`${platform}${path}`, init).then(
          (res) => `answered ${res.status}`,
          (err: Error) => `blocked: ${err.name}`,
        );
      const refresh = { grant_type: 'refresh_token', client_id: 'spa', refresh_token: 'a-token' };
      return [
        // a preflight first (Authorization), then none (a form): neither answer reaches the page
        await attempt('/oidc/me', { headers: { authorization: 'Bearer a-token' } }),
        await attempt('/oidc/token', { method: 'POST', body: new URLSearchParams(refresh) }),
      ];
    }, base);
    expect(outcomes).toEqual(['blocked: TypeError', 'blocked: TypeError']);
  });
});
