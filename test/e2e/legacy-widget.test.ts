import { waitFor } from '@platform/testkit';
import type { Page } from 'playwright-core';
import { chromiumAvailable, launchChromium, screenshot } from '../browser/chromium';
import { callJson, startTestPlatform, type TestPlatform } from '../harness';

/**
 * The web chat's HTTP side through the real edge (the browser test drives it in Chromium): preflights
 * reach legacy-agent and come back with or without CORS headers, the script and demo page keep their
 * headers, and everything retires with legacy v1.
 */
describe('web chat through the edge', () => {
  let platform: TestPlatform;
  let bot: { clientToken: string; developerToken: string };
  const SHOP = 'https://shop.example';

  beforeAll(async () => {
    platform = await startTestPlatform({ env: { LEGACY_V1_RETIREMENT_DATE: '2099-01-01' } });
    const legacy = platform.legacyUrl;
    const signup = await callJson(`${legacy}/v2/auth/signup`, 'POST', {
      body: { username: 'shopkeeper', password: 'open all hours' },
    });
    const created = await fetch(`${legacy}/v2/bots`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-legacy-session-token': signup.body.sessionToken },
      body: JSON.stringify({ name: 'Shop', lang: 'fr' }),
    });
    bot = (await created.json()) as typeof bot;
    const patched = await callJson(`${legacy}/v1/bots`, 'PATCH', {
      bearer: bot.developerToken,
      body: { allowedOrigins: [SHOP] },
    });
    expect(patched.status).toBe(200);
  });
  afterAll(() => platform.stop());

  const preflight = (origin: string) =>
    fetch(`${platform.legacyUrl}/v1/Messages`, {
      method: 'OPTIONS',
      headers: {
        origin,
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'authorization,content-type',
      },
    });

  it('passes preflights through to legacy-agent: CORS headers for an allowed origin only', async () => {
    const ok = await preflight(SHOP);
    expect(ok.status).toBe(204);
    expect(ok.headers.get('access-control-allow-origin')).toBe(SHOP);
    expect(ok.headers.get('access-control-allow-headers')).toContain('authorization');
    const refused = await preflight('https://evil.example');
    expect(refused.headers.get('access-control-allow-origin')).toBeNull();
  });

  it('answers Messages and the widget config to the allowed origin, and 403 to another', async () => {
    const headers = { authorization: `Bearer ${bot.clientToken}`, 'content-type': 'application/json' };
    const body = JSON.stringify({ userId: 'v1', platform: 'web', event: 'WELCOME' });
    const ok = await fetch(`${platform.legacyUrl}/v1/Messages`, {
      method: 'POST',
      headers: { ...headers, origin: SHOP },
      body,
    });
    expect(ok.status).toBe(200);
    expect(ok.headers.get('access-control-allow-origin')).toBe(SHOP);
    const config = await fetch(`${platform.legacyUrl}/v1/widget/config`, {
      headers: { ...headers, origin: SHOP },
    });
    expect(await config.json()).toEqual({ name: 'Shop', lang: 'fr', photo: null });
    const refused = await fetch(`${platform.legacyUrl}/v1/Messages`, {
      method: 'POST',
      headers: { ...headers, origin: 'https://evil.example' },
      body,
    });
    expect(refused.status).toBe(403);
    expect(refused.headers.get('access-control-allow-origin')).toBeNull();
  });

  it('serves the script and the demo page with their own caching and CSP through the edge', async () => {
    const script = await fetch(`${platform.legacyUrl}/v1/widget.js`, {
      headers: { 'accept-encoding': 'gzip, br' },
    });
    expect(script.status).toBe(200);
    expect(script.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
    expect(script.headers.get('cache-control')).toContain('max-age=86400');
    // the edge's own headers (a CSP on a script answer does not apply to the script) leave it working
    expect(script.headers.get('x-content-type-options')).toBe('nosniff');
    // sent compressed to a browser that takes brotli, whole to one that takes nothing
    expect(script.headers.get('content-encoding')).toBe('br');
    expect(script.headers.get('vary')).toMatch(/accept-encoding/i);
    const text = await script.text();
    expect(text).toMatch(/^\/\* Platform web chat/);
    const plain = await fetch(`${platform.legacyUrl}/v1/widget.js`, {
      headers: { 'accept-encoding': 'identity' },
    });
    expect(plain.headers.get('content-encoding')).toBeNull();
    expect(await plain.text()).toBe(text);
    expect(plain.headers.get('etag')).not.toBe(script.headers.get('etag'));
    const demo = await fetch(`${platform.legacyUrl}/v1/widget-demo?token=${bot.clientToken}`);
    expect(demo.status).toBe(200);
    expect(demo.headers.get('content-security-policy')).toContain("script-src 'self'");
    // the embed line names the script's real address, not a placeholder
    expect(await demo.text()).toContain(`&lt;script src="${platform.legacyUrl}/v1/widget.js"`);
  });
});

describe('web chat in Chromium on the demo page, through the edge', () => {
  let platform: TestPlatform;
  let bot: { clientToken: string; developerToken: string };
  const WELCOME = 'Bonjour ! Que puis-je faire pour vous ?';

  beforeAll(async () => {
    platform = await startTestPlatform({ env: { LEGACY_V1_RETIREMENT_DATE: '2099-01-01' } });
    const legacy = platform.legacyUrl;
    const signup = await callJson(`${legacy}/v2/auth/signup`, 'POST', {
      body: { username: 'baker', password: 'bread every morning' },
    });
    const created = await callJson(`${legacy}/v2/bots`, 'POST', {
      bearer: signup.body.sessionToken,
      body: { name: 'Boulangerie', lang: 'fr' },
    });
    bot = created.body;
    const welcome = await callJson(`${legacy}/v1/intents`, 'POST', {
      bearer: bot.developerToken,
      body: {
        name: 'Bienvenue',
        isWelcome: true,
        conditionalResponses: { fr: { default: { default: [{ type: 'text', text: [WELCOME] }] } } },
      },
    });
    expect(welcome.status).toBe(200);
  });
  afterAll(() => platform.stop());

  it('greets a visitor whose chat comes back open after a reload with an empty conversation', async () => {
    if (!chromiumAvailable()) return;
    const browser = await launchChromium();
    try {
      const page = await browser.newPage({ viewport: { width: 1000, height: 760 } });
      page.setDefaultTimeout(10_000);
      const problems: string[] = [];
      page.on('pageerror', (err) => problems.push(err.message));
      const sent: string[] = [];
      // the first welcome is lost on its way (the network drops it); the chat stays open, its conversation empty
      await page.route('**/v1/Messages', (route) => {
        sent.push(route.request().postDataJSON().event);
        return sent.length === 1 ? route.abort() : route.continue();
      });
      await page.goto(`${platform.legacyUrl}/v1/widget-demo?token=${bot.clientToken}`);
      await page.locator('[data-platform-chat] .launcher').click();
      await page.getByRole('alert').getByText("L'assistant est injoignable depuis cette page.").waitFor();
      await page.reload();
      await page.getByRole('dialog', { name: 'Boulangerie' }).waitFor();
      await page.getByRole('log').getByText(WELCOME).waitFor();
      expect(sent).toEqual(['WELCOME', 'WELCOME']);
      await screenshot(page, 'legacy-widget-greets-after-reload');
      // reloaded again, the conversation it now has is shown, not greeted again
      await page.reload();
      await page.getByRole('log').getByText(WELCOME).waitFor();
      expect(await page.getByRole('log').getByText(WELCOME).count()).toBe(1);
      expect(sent).toEqual(['WELCOME', 'WELCOME']);
      expect(problems).toEqual([]);
    } finally {
      await browser.close();
    }
  });

  it('greets once when two tabs come back open at once with an empty conversation (a browser restoring its tabs)', async () => {
    if (!chromiumAvailable()) return;
    const browser = await launchChromium();
    try {
      const context = await browser.newContext({ viewport: { width: 1000, height: 760 } });
      context.setDefaultTimeout(10_000);
      // tabs restored at once have not heard from each other when they greet: here, not until let
      await context.addInitScript(`
        const late = new Set();
        let holding = true;
        addEventListener('storage', (e) => {
          if (!holding) return;
          e.stopImmediatePropagation();
          late.add(e.key);
        }, true);
        // what the other tab wrote arrives: the storage as it stands now
        window.letStorageEvents = () => {
          holding = false;
          for (const key of late) dispatchEvent(new StorageEvent('storage', { key, newValue: localStorage.getItem(key) }));
        };
      `);
      const demo = `${platform.legacyUrl}/v1/widget-demo?token=${bot.clientToken}`;
      const first = await context.newPage();
      const second = await context.newPage();
      const tab = (page: Page) => (page === first ? 'onglet 1' : 'onglet 2');
      const sent: string[] = [];
      let release: () => void = () => undefined;
      const held = new Promise<void>((resolve) => {
        release = resolve;
      });
      // the first welcome is lost on its way (the chat is left open, its conversation empty); the next ones are held
      await context.route('**/v1/Messages', async (route) => {
        const body = route.request().postDataJSON() as { event?: string; text?: string };
        sent.push(body.event ?? (body.text as string));
        if (sent.length === 1) return route.abort();
        if (body.event) await held;
        await route.continue();
      });
      await first.goto(demo);
      await first.locator('[data-platform-chat] .launcher').click();
      await first.getByRole('alert').getByText("L'assistant est injoignable depuis cette page.").waitFor();
      // each tab's settings are told apart, to know when it has read them: it greets, or not, right then
      await context.route('**/v1/widget/config', async (route) => {
        const response = await route.fetch();
        const name = `Boulangerie, ${tab(route.request().frame().page())}`;
        await route.fulfill({ response, json: { ...(await response.json()), name } });
      });
      await Promise.all([first.reload(), second.goto(demo)]);
      for (const page of [first, second])
        await page.getByRole('dialog', { name: `Boulangerie, ${tab(page)}` }).waitFor();
      release();
      const welcomed = async (page: Page) => (await page.getByRole('log').getByText(WELCOME).count()) > 0;
      await waitFor(async () => (await welcomed(first)) || (await welcomed(second)), {
        what: 'a welcome shown',
      });
      for (const page of [first, second]) await page.evaluate('window.letStorageEvents()');
      // messages of a tab go one after another: a welcome either tab sent went before its own message
      for (const [page, text] of [
        [first, 'merci'],
        [second, 'au revoir'],
      ] as const) {
        await page.getByRole('log').getByText(WELCOME).waitFor();
        await page.getByRole('textbox').fill(text);
        await page.keyboard.press('Enter');
        await waitFor(() => sent.includes(text), { what: `${text} sent` });
      }
      await screenshot(second, 'legacy-widget-two-tabs-restored');
      expect(sent).toEqual(['WELCOME', 'WELCOME', 'merci', 'au revoir']);
      for (const page of [first, second])
        expect(await page.getByRole('log').getByText(WELCOME).count()).toBe(1);
    } finally {
      await browser.close();
    }
  });
});

describe('web chat after legacy v1 retires (the default date, 2025-12-31)', () => {
  let platform: TestPlatform;
  beforeAll(async () => {
    platform = await startTestPlatform();
  });
  afterAll(() => platform.stop());

  it('answers 410 for the script, the demo page and the config: the chat retires with v1', async () => {
    for (const path of ['/v1/widget.js', '/v1/widget-demo?token=x', '/v1/widget/config']) {
      const res = await fetch(`${platform.legacyUrl}${path}`);
      expect(res.status).toBe(410);
      expect(((await res.json()) as { error?: string }).error).toBeDefined();
    }
  });
});
