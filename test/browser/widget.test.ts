import { existsSync, mkdirSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { waitFor } from '@platform/testkit';
import { type Browser, chromium, type Page } from 'playwright-core';
import { callJson, startTestPlatform, type TestPlatform } from '../harness';

// Code inside page.evaluate runs in the browser: `document` is declared here rather than adding the DOM
// library to the whole program (it changes Node's own fetch, Buffer and FormData types).
// biome-ignore lint/suspicious/noExplicitAny: browser-side code, checked by the browser
declare const document: any;
// biome-ignore lint/suspicious/noExplicitAny: browser-side code, checked by the browser
declare const getComputedStyle: (element: any) => any;

/**
 * The web chat in a real Chromium, through the real edge: a site on an allowed origin embeds the
 * script, a visitor opens the chat, is welcomed, writes, follows a button, reloads and finds the
 * conversation kept; a site on another origin is refused. Screenshots go to test-results/widget/.
 */
const CHROMIUM = process.env.PLATFORM_CHROMIUM_PATH ?? '/usr/bin/chromium';
const CHROMIUM_ARGS = [
  '--no-sandbox',
  '--headless',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
];
const OUTPUT = path.join(__dirname, '..', '..', 'test-results', 'widget');
const available = existsSync(CHROMIUM);
jest.setTimeout(60_000);

if (!available) {
  console.warn(
    `\n\n*** BROWSER TEST SKIPPED: no Chromium at ${CHROMIUM} (apt-get install -y chromium, or set PLATFORM_CHROMIUM_PATH). ` +
      'Set PLATFORM_REQUIRE_BROWSER=1 to make this a failure. ***\n\n',
  );
  if (process.env.PLATFORM_REQUIRE_BROWSER === '1') {
    test('Chromium is installed (PLATFORM_REQUIRE_BROWSER=1)', () => {
      throw new Error(`PLATFORM_REQUIRE_BROWSER=1 but no Chromium at ${CHROMIUM}`);
    });
  }
}

const say = (text: string) => ({ type: 'text', text });
const button = (text: string, value: string) => ({ type: 'button', text, value });
const utterances = (...texts: string[]) => ({ en: texts.map((text) => ({ data: [{ text }] })) });
const answer = (...elements: unknown[]) => ({ en: { default: { default: elements } } });

/** A small café assistant using every item type the chat renders. */
function cafeIntents(imageBase: string) {
  return [
    {
      name: 'Welcome',
      isWelcome: true,
      conditionalResponses: answer(
        say("Hi! I'm the Harbour Café assistant. How can I help you today?"),
        button('Opening hours', 'when are you open'),
        button('See the menu', 'show me the menu'),
      ),
    },
    {
      name: 'Fallback',
      isFallback: true,
      conditionalResponses: answer(
        say("Sorry, I didn't catch that. Try one of these:"),
        button('See the menu', 'show me the menu'),
      ),
    },
    {
      name: 'Hours',
      utterances: utterances(
        'when are you open',
        'what are your opening hours',
        'are you open on sunday',
        'what time do you close',
        'opening times',
      ),
      conditionalResponses: answer(say("We're open every day from 8:00 to 18:00."), {
        type: 'link',
        text: 'Find us on the map',
        value: 'https://example.com/map',
      }),
    },
    {
      name: 'Menu',
      utterances: utterances(
        'show me the menu',
        'what do you serve',
        'menu please',
        'what food do you have',
        'can i see the menu',
      ),
      conditionalResponses: answer(say("Here is today's menu:"), {
        type: 'cards',
        cards: [
          {
            title: 'Flat white',
            text: 'Double ristretto, silky milk. €3.40',
            image: `${imageBase}/coffee.svg`,
            buttons: [{ text: 'Order one', value: 'i want to order' }],
          },
          {
            title: 'Cinnamon bun',
            text: 'Baked every morning. €2.90',
            image: `${imageBase}/bun.svg`,
            links: [{ text: 'Allergens', value: 'https://example.com/allergens' }],
          },
        ],
      }),
    },
    {
      name: 'Order',
      utterances: utterances(
        'i want to order',
        'can i order',
        'order please',
        'i would like to order something',
        'place an order',
      ),
      conditionalResponses: answer(say('Great choice! Pick it up at the counter.'), {
        type: 'event',
        text: 'Start over',
        value: 'WELCOME',
      }),
    },
  ];
}

const picture = (from: string, to: string) =>
  `<svg xmlns="http://www.w3.org/2000/svg" width="440" height="240"><defs><linearGradient id="g" x1="0" y1="0" x2="1" y2="1"><stop offset="0" stop-color="${from}"/><stop offset="1" stop-color="${to}"/></linearGradient></defs><rect width="440" height="240" fill="url(#g)"/><circle cx="220" cy="120" r="60" fill="rgba(255,255,255,.35)"/></svg>`;

/** A site on its own origin (a loopback port) whose page embeds the chat. */
async function hostSite(scriptTag: () => string): Promise<{ origin: string; server: Server }> {
  const server = createServer((req, res) => {
    if (req.url === '/coffee.svg' || req.url === '/bun.svg') {
      res.writeHead(200, { 'content-type': 'image/svg+xml' });
      res.end(req.url === '/coffee.svg' ? picture('#7c4a2d', '#d6a77a') : picture('#b45309', '#fcd34d'));
      return;
    }
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
    res.end(`<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Harbour Café</title></head>
<body style="margin:0;font-family:Georgia,serif;background:#fdf8f3;color:#3b2a1e">
<header style="padding:40px 48px;background:#3b2a1e;color:#fdf8f3"><h1 style="margin:0">Harbour Café</h1><p>Coffee and buns by the water since 1998.</p></header>
<main style="padding:32px 48px;max-width:640px"><h2>Visit us</h2><p>Questions? Our assistant answers in the chat at the bottom right.</p></main>
${scriptTag()}</body></html>`);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server };
}

(available ? describe : describe.skip)('web chat in Chromium, through the edge', () => {
  let platform: TestPlatform;
  let browser: Browser;
  let allowed: { origin: string; server: Server };
  let refused: { origin: string; server: Server };
  let bot: { clientToken: string; developerToken: string };

  beforeAll(async () => {
    mkdirSync(OUTPUT, { recursive: true });
    // The widget lives under legacy v1 and retires with it (2025-12-31 by default): keep v1 open here.
    platform = await startTestPlatform({ env: { LEGACY_V1_RETIREMENT_DATE: '2099-01-01' } });
    const legacy = platform.legacyUrl;
    const tag = () => `<script src="${legacy}/v1/widget.js" data-token="${bot.clientToken}" defer></script>`;
    allowed = await hostSite(tag);
    refused = await hostSite(tag);

    const signup = await callJson(`${legacy}/v2/auth/signup`, 'POST', {
      body: { username: 'harbour', password: 'flat white please' },
    });
    const created = await fetch(`${legacy}/v2/bots`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-legacy-session-token': signup.body.sessionToken },
      body: JSON.stringify({ name: 'Harbour Café', lang: 'en' }),
    });
    bot = (await created.json()) as typeof bot;
    for (const intent of cafeIntents(allowed.origin)) {
      const res = await callJson(`${legacy}/v1/intents`, 'POST', {
        bearer: bot.developerToken,
        body: intent,
      });
      expect(res.status).toBe(200);
    }
    const patched = await callJson(`${legacy}/v1/bots`, 'PATCH', {
      bearer: bot.developerToken,
      body: { allowedOrigins: [allowed.origin] },
    });
    expect(patched.body.allowedOrigins).toEqual([allowed.origin]);
    await waitFor(
      async () =>
        (await callJson(`${legacy}/v1/bots`, 'GET', { bearer: bot.developerToken })).body.training.upToDate,
      { timeoutMs: 20_000, intervalMs: 100, what: 'training' },
    );
    browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    for (const site of [allowed, refused]) await new Promise((resolve) => site?.server.close(resolve));
    await platform?.stop();
  });

  const openPage = async (
    url: string,
    viewport = { width: 1100, height: 760 },
  ): Promise<{ page: Page; problems: string[] }> => {
    const page = await browser.newPage({ viewport });
    page.setDefaultTimeout(10_000);
    const problems: string[] = [];
    page.on('pageerror', (err) => problems.push(`page error: ${err.message}`));
    page.on('console', (msg) => {
      if (msg.type() === 'error') problems.push(msg.text());
    });
    await page.goto(url);
    return { page, problems };
  };
  /** the element focused inside the chat's shadow root */
  const focused = (page: Page) =>
    page.evaluate(() => {
      const active = document.querySelector('[data-platform-chat]')?.shadowRoot?.activeElement;
      return active
        ? `${active.tagName.toLowerCase()}${active.id ? `#${active.id}` : ''}.${active.className}`
        : null;
    });

  it('welcomes, answers, follows a button and keeps the conversation across a reload, by keyboard and mouse', async () => {
    const { page, problems } = await openPage(`${allowed.origin}/`);
    // Before the first opening the chat does not know the assistant's name yet.
    await page.getByRole('button', { name: 'Open chat' }).waitFor();
    const launcher = page.locator('[data-platform-chat] .launcher');
    expect(await launcher.getAttribute('aria-expanded')).toBe('false');

    // Keyboard: the launcher is a real button reached with Tab; opening moves focus to the labelled input.
    await page.keyboard.press('Tab');
    expect(await focused(page)).toBe('button.launcher');
    await page.keyboard.press('Enter');
    const dialog = page.getByRole('dialog', { name: 'Harbour Café' });
    await dialog.waitFor();
    expect(await launcher.getAttribute('aria-expanded')).toBe('true');
    // the launcher now says what it does
    expect(await launcher.getAttribute('aria-label')).toBe('Close chat: Harbour Café');
    expect(await focused(page)).toBe('input#chat-input.');
    const input = page.getByRole('textbox', { name: 'Your message' });
    await input.waitFor();

    // The WELCOME event is sent on open: its reply appears in the live log.
    const log = page.getByRole('log');
    expect(await log.getAttribute('aria-live')).toBe('polite');
    await log.getByText("Hi! I'm the Harbour Café assistant.").waitFor();
    await log.getByRole('button', { name: 'Opening hours' }).waitFor();

    await input.fill('what are your opening hours');
    await page.keyboard.press('Enter');
    await log.getByText("We're open every day from 8:00 to 18:00.").waitFor();
    const map = log.getByRole('link', { name: /Find us on the map/ });
    expect(await map.getAttribute('href')).toBe('https://example.com/map');
    expect(await map.getAttribute('rel')).toContain('noopener');

    // A button sends its value as text; the card reply renders titles, images, links and buttons.
    await log.getByRole('button', { name: 'See the menu' }).first().click();
    await log.getByText("Here is today's menu:").waitFor();
    await log.getByRole('heading', { name: 'Flat white' }).waitFor();
    await log.getByRole('img', { name: 'Cinnamon bun' }).waitFor();
    await page.waitForFunction(() => {
      const images = document.querySelector('[data-platform-chat]')?.shadowRoot?.querySelectorAll('img');
      // biome-ignore lint/suspicious/noExplicitAny: browser-side code, checked by the browser
      return Array.from(images ?? []).every((img: any) => img.complete && img.naturalWidth > 0);
    });
    await page.screenshot({ path: path.join(OUTPUT, '1-menu.png') });
    await log.getByRole('button', { name: 'Order one' }).click();
    await log.getByText('Great choice! Pick it up at the counter.').waitFor();
    await log.getByRole('button', { name: 'Start over' }).waitFor();
    await page.screenshot({ path: path.join(OUTPUT, '2-conversation.png') });

    // Escape closes and gives focus back to the launcher.
    await page.keyboard.press('Escape');
    await dialog.waitFor({ state: 'hidden' });
    expect(await focused(page)).toBe('button.launcher');

    // After a reload the conversation is still there (and no second welcome is sent).
    await page.reload();
    await page.getByRole('button', { name: 'Open chat: Harbour Café' }).click();
    await log.getByText('Great choice! Pick it up at the counter.').waitFor();
    expect(await log.getByText("Hi! I'm the Harbour Café assistant.").count()).toBe(1);
    expect(await log.getByText('what are your opening hours').count()).toBe(1);
    await page.screenshot({ path: path.join(OUTPUT, '3-after-reload.png') });

    // The event chip sends its event: the welcome answers again.
    await log.getByRole('button', { name: 'Start over' }).click();
    await waitFor(async () => (await log.getByText("Hi! I'm the Harbour Café assistant.").count()) === 2, {
      what: 'second welcome',
    });
    expect(problems).toEqual([]);
    await page.close();
  });

  it('refuses a site whose origin the assistant does not allow: Messages is blocked by CORS and the chat says so', async () => {
    const { page } = await openPage(`${refused.origin}/`);
    const blocked: string[] = [];
    page.on('requestfailed', (req) => blocked.push(req.url()));
    await page.getByRole('button', { name: /Open chat/ }).click();
    const alert = page.getByRole('alert');
    await alert.getByText('The assistant cannot be reached from this page.').waitFor();
    expect(blocked.some((url) => url.endsWith('/v1/Messages'))).toBe(true);
    expect(await page.getByRole('log').getByText('Harbour Café assistant').count()).toBe(0);
    await page.screenshot({ path: path.join(OUTPUT, '4-refused-origin.png') });
    await page.close();
  });

  it('on a phone, fills the screen with the chat, nothing covering Send, and closes from its header', async () => {
    const { page, problems } = await openPage(`${allowed.origin}/`, { width: 375, height: 667 });
    await page.getByRole('button', { name: /Open chat/ }).click();
    const log = page.getByRole('log');
    await log.getByText("Hi! I'm the Harbour Café assistant.").first().waitFor();
    /** what a tap at the middle of the element would hit, inside the chat's shadow root */
    const hitAtCentreOf = (selector: string) =>
      page.evaluate((sel) => {
        const root = document.querySelector('[data-platform-chat]')!.shadowRoot!;
        const box = root.querySelector(sel)!.getBoundingClientRect();
        const hit = root.elementFromPoint(box.x + box.width / 2, box.y + box.height / 2);
        return hit ? `${hit.tagName.toLowerCase()}.${hit.className}` : null;
      }, selector);
    expect(await hitAtCentreOf('.send')).toBe('button.send');
    await page.getByRole('textbox', { name: 'Your message' }).fill('what are your opening hours');
    await page.getByRole('button', { name: 'Send' }).click();
    await log.getByText("We're open every day from 8:00 to 18:00.").waitFor();
    await page.screenshot({ path: path.join(OUTPUT, '6-phone.png') });
    await page.getByRole('button', { name: 'Close chat' }).first().click();
    await page.getByRole('dialog').waitFor({ state: 'hidden' });
    await page.getByRole('button', { name: 'Open chat: Harbour Café' }).waitFor();
    expect(problems).toEqual([]);
    await page.close();
  });

  it('with a token that names no assistant, tells the visitor the chat cannot be reached, and the developer in the console', async () => {
    const site = await hostSite(
      () =>
        `<script src="${platform.legacyUrl}/v1/widget.js" data-token="lct_not-a-real-token" defer></script>`,
    );
    const { page } = await openPage(`${site.origin}/`);
    const consoleLines: string[] = [];
    page.on('console', (msg) => {
      if (msg.type() === 'warning' || msg.type() === 'error') consoleLines.push(msg.text());
    });
    await page.getByRole('button', { name: 'Open chat' }).click();
    await page.getByRole('alert').getByText('The assistant cannot be reached from this page.').waitFor();
    expect(await page.getByRole('alert').textContent()).not.toMatch(/token|Bearer/i);
    // no assistant allows this origin, so the browser itself says why (its CORS refusal of the call)
    await waitFor(() => consoleLines.some((line) => /CORS|token/i.test(line)), {
      what: 'the reason in the console',
    });
    await page.close();
    await new Promise((resolve) => site.server.close(resolve));
  });

  it('shows the demo page under its strict policy, with the chat working', async () => {
    const { page, problems } = await openPage(
      `${platform.legacyUrl}/v1/widget-demo?token=${encodeURIComponent(bot.clientToken)}`,
    );
    await page.getByRole('heading', { name: 'Web chat demo' }).waitFor();
    await page.getByRole('button', { name: 'Open chat' }).click();
    await page.getByRole('log').getByText("Hi! I'm the Harbour Café assistant.").waitFor();
    // Styles are applied under the CSP (the launcher is a round, coloured button).
    const radius = await page.evaluate(() => {
      const launcher = document.querySelector('[data-platform-chat]')?.shadowRoot?.querySelector('.launcher');
      return launcher ? getComputedStyle(launcher).borderRadius : null;
    });
    expect(radius).toBe('50%');
    await page.screenshot({ path: path.join(OUTPUT, '5-demo-page.png') });
    expect(problems).toEqual([]);
    await page.close();
  });
});
