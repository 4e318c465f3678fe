import { existsSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { waitFor } from '@platform/testkit';
import { type Browser, chromium, type Page } from 'playwright-core';
import { callJson, startTestPlatform, type TestPlatform } from '../harness';
import { type CafeSite, closeSite, createCafeAssistant, hostCafeSite } from './cafe-assistant';

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

(available ? describe : describe.skip)('web chat in Chromium, through the edge', () => {
  let platform: TestPlatform;
  let browser: Browser;
  let allowed: CafeSite;
  let refused: CafeSite;
  let bot: { clientToken: string; developerToken: string };

  beforeAll(async () => {
    mkdirSync(OUTPUT, { recursive: true });
    // The widget lives under legacy v1 and retires with it (2025-12-31 by default): keep v1 open here.
    platform = await startTestPlatform({ env: { LEGACY_V1_RETIREMENT_DATE: '2099-01-01' } });
    const legacy = platform.legacyUrl;
    const tag = () => `<script src="${legacy}/v1/widget.js" data-token="${bot.clientToken}" defer></script>`;
    allowed = await hostCafeSite(tag);
    refused = await hostCafeSite(tag);

    bot = await createCafeAssistant(legacy, allowed.origin, [allowed.origin]);
    browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    for (const site of [allowed, refused]) await closeSite(site);
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
    const site = await hostCafeSite(
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
    await closeSite(site);
  });

  it('on a page whose language is a name every object has, speaks English rather than showing undefined', async () => {
    // no assistant answers this token, so the page's own language is all the chat has to go by
    const site = await hostCafeSite(
      () =>
        `<script src="${platform.legacyUrl}/v1/widget.js" data-token="lct_not-a-real-token" defer></script>`,
      'constructor',
    );
    const { page } = await openPage(`${site.origin}/`);
    await page.getByRole('button', { name: 'Open chat' }).click();
    await page.getByRole('alert').getByText('The assistant cannot be reached from this page.').waitFor();
    await page.close();
    await closeSite(site);
  });

  it('keeps one conversation across two tabs of the site: what one tab says is not wiped by the other', async () => {
    const context = await browser.newContext({ viewport: { width: 1100, height: 760 } });
    context.setDefaultTimeout(10_000);
    const first = await context.newPage();
    await first.goto(`${allowed.origin}/`);
    await first.getByRole('button', { name: 'Open chat' }).click();
    const firstLog = first.getByRole('log');
    await firstLog.getByText("Hi! I'm the Harbour Café assistant.").waitFor();
    // a second tab of the same site, opened before the visitor goes on chatting in the first
    const second = await context.newPage();
    await second.goto(`${allowed.origin}/`);
    const secondLog = second.getByRole('log');
    await secondLog.getByText("Hi! I'm the Harbour Café assistant.").waitFor();

    await first.getByRole('textbox', { name: 'Your message' }).fill('what are your opening hours');
    await first.keyboard.press('Enter');
    await firstLog.getByText("We're open every day from 8:00 to 18:00.").waitFor();
    // the other tab shows the same conversation, and closing its chat keeps it
    await secondLog.getByText("We're open every day from 8:00 to 18:00.").waitFor();
    await second.getByRole('button', { name: 'Close chat' }).first().click();
    await second.getByRole('dialog').waitFor({ state: 'hidden' });

    await first.reload();
    await first.getByRole('button', { name: 'Open chat: Harbour Café' }).click();
    await first.getByRole('log').getByText("We're open every day from 8:00 to 18:00.").waitFor();
    expect(await first.getByRole('log').getByText('what are your opening hours').count()).toBe(1);
    await context.close();
  });

  /** The café's table booking, whose reply asks for a number of people with buttons and disables the input. */
  let tableIntent: Promise<void> | undefined;
  const addTableIntent = () => {
    tableIntent ??= (async () => {
      const created = await callJson(`${platform.legacyUrl}/v1/intents`, 'POST', {
        bearer: bot.developerToken,
        body: {
          name: 'Table',
          utterances: {
            en: [
              'book a table',
              'reserve a table',
              'i want a table',
              'table for two',
              'can i book a table',
            ].map((text) => ({ data: [{ text }] })),
          },
          conditionalResponses: {
            en: {
              default: {
                default: [
                  { type: 'text', text: 'For how many people?' },
                  { type: 'button', text: 'Two', value: 'table for two' },
                  { type: 'button', text: 'Four', value: 'table for four' },
                ],
              },
            },
          },
          settings: { en: { disableInput: true } },
        },
      });
      expect(created.status).toBe(200);
      await waitFor(
        async () =>
          (await callJson(`${platform.legacyUrl}/v1/bots`, 'GET', { bearer: bot.developerToken })).body
            .training.upToDate,
        { timeoutMs: 20_000, intervalMs: 100, what: 'training' },
      );
    })();
    return tableIntent;
  };
  /** the text of the element focused inside the chat's shadow root */
  const focusedText = (page: Page) =>
    page.evaluate(
      () => document.querySelector('[data-platform-chat]')?.shadowRoot?.activeElement?.textContent,
    );

  it('keeps keyboard focus in the chat when a reply disables the input, so the visitor can answer with its buttons', async () => {
    await addTableIntent();
    const { page, problems } = await openPage(`${allowed.origin}/`);
    await page.getByRole('button', { name: 'Open chat' }).click();
    const log = page.getByRole('log');
    await log.getByText("Hi! I'm the Harbour Café assistant.").waitFor();
    const input = page.getByRole('textbox', { name: 'Your message' });
    await input.fill('can i book a table');
    await page.keyboard.press('Enter');
    await log.getByText('For how many people?').waitFor();
    expect(await input.isDisabled()).toBe(true);
    // focus moves to the reply's first choice rather than falling out of the chat with the disabled input
    expect(await focused(page)).toBe('button.chip');
    await page.keyboard.press('Tab');
    await page.keyboard.press('Enter');
    await waitFor(async () => (await log.getByText('For how many people?').count()) === 2, {
      what: 'the reply to the second choice',
    });
    await page.keyboard.press('Escape');
    await page.getByRole('dialog').waitFor({ state: 'hidden' });
    expect(await focused(page)).toBe('button.launcher');
    // opened again while the input is still disabled, the chat takes focus on its conversation
    await page.keyboard.press('Enter');
    await page.getByRole('dialog').waitFor();
    expect(await focused(page)).toBe('div.log');
    expect(problems).toEqual([]);
    await page.close();
  });

  it('greets once when the chat is closed and opened again before the welcome came back', async () => {
    const { page, problems } = await openPage(`${allowed.origin}/`);
    const events: string[] = [];
    let release: () => void = () => undefined;
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    // the welcome is held on its way until the chat has been closed and opened again
    await page.route('**/v1/Messages', async (route) => {
      const body = route.request().postDataJSON() as { event?: string; text?: string };
      events.push(body.event ?? `text: ${body.text}`);
      if (body.event) await held;
      await route.continue();
    });
    const launcher = page.locator('[data-platform-chat] .launcher');
    await launcher.click();
    await waitFor(() => events.length === 1, { what: 'the welcome sent' });
    await launcher.click();
    await page.getByRole('dialog').waitFor({ state: 'hidden' });
    await launcher.click();
    await page.getByRole('dialog').waitFor();
    release();
    const log = page.getByRole('log');
    await log.getByText("Hi! I'm the Harbour Café assistant.").waitFor();
    // messages go one after another: anything sent on the second opening went before this one
    await page.getByRole('textbox', { name: 'Your message' }).fill('what are your opening hours');
    await page.keyboard.press('Enter');
    await log.getByText("We're open every day from 8:00 to 18:00.").waitFor();
    expect(events).toEqual(['WELCOME', 'text: what are your opening hours']);
    expect(await log.getByText("Hi! I'm the Harbour Café assistant.").count()).toBe(1);
    expect(problems).toEqual([]);
    await page.close();
  });

  it('disables the input in every open tab while the last reply asks for a choice, and enables it with a later reply', async () => {
    await addTableIntent();
    const context = await browser.newContext({ viewport: { width: 1100, height: 760 } });
    context.setDefaultTimeout(10_000);
    const problems: string[] = [];
    const first = await context.newPage();
    const second = await context.newPage();
    for (const page of [first, second])
      page.on('pageerror', (err) => problems.push(`page error: ${err.message}`));
    await first.goto(`${allowed.origin}/`);
    await first.getByRole('button', { name: 'Open chat' }).click();
    const firstLog = first.getByRole('log');
    await firstLog.getByText("Hi! I'm the Harbour Café assistant.").waitFor();
    await second.goto(`${allowed.origin}/`);
    const secondLog = second.getByRole('log');
    await secondLog.getByText("Hi! I'm the Harbour Café assistant.").waitFor();
    // the visitor has started writing in the second tab
    const secondInput = second.getByRole('textbox', { name: 'Your message' });
    await secondInput.fill('for');

    await first.getByRole('textbox', { name: 'Your message' }).fill('can i book a table');
    await first.keyboard.press('Enter');
    await firstLog.getByText('For how many people?').waitFor();
    await secondLog.getByText('For how many people?').waitFor();
    // the second tab asks for a choice too: its input and Send are disabled, and its focus moved to the first choice
    expect(await secondInput.isDisabled()).toBe(true);
    expect(await second.getByRole('button', { name: 'Send' }).isDisabled()).toBe(true);
    expect(await focused(second)).toBe('button.chip');
    expect(await focusedText(second)).toBe('Two');
    await second.screenshot({ path: path.join(OUTPUT, '7-second-tab-choice.png') });
    // what the first tab writes next (its chat closed) draws the conversation here again, the focus kept on its choice
    const drawn = await second.evaluateHandle(() =>
      document.querySelector('[data-platform-chat]').shadowRoot.querySelector('.log > *'),
    );
    await first.keyboard.press('Escape');
    await second.waitForFunction((node) => !node.isConnected, drawn);
    expect(await focusedText(second)).toBe('Two');
    await first.keyboard.press('Enter');
    await first.getByRole('dialog').waitFor();
    // a tab opened now follows the conversation too; reloading one enables the input again in every tab
    const third = await context.newPage();
    third.on('pageerror', (err) => problems.push(`page error: ${err.message}`));
    await third.goto(`${allowed.origin}/`);
    await third.getByRole('log').getByText('For how many people?').waitFor();
    expect(await third.getByRole('textbox', { name: 'Your message' }).isDisabled()).toBe(true);
    await third.reload();
    await third.getByRole('log').getByText('For how many people?').waitFor();
    for (const page of [first, second, third])
      await page.getByRole('textbox', { name: 'Your message', disabled: false }).waitFor();
    await first.getByRole('textbox', { name: 'Your message' }).fill('can i book a table');
    await first.keyboard.press('Enter');
    await waitFor(async () => (await secondLog.getByText('For how many people?').count()) === 2, {
      what: 'the second question in the second tab',
    });
    expect(await secondInput.isDisabled()).toBe(true);

    // a reply that lets the visitor write, asked from the second tab, enables the input in every tab, the draft kept
    await secondLog.getByRole('button', { name: 'Opening hours' }).click();
    await secondLog.getByText("We're open every day from 8:00 to 18:00.").waitFor();
    await firstLog.getByText("We're open every day from 8:00 to 18:00.").waitFor();
    for (const page of [first, second, third]) {
      await page.getByRole('textbox', { name: 'Your message', disabled: false }).waitFor();
      await page.getByRole('button', { name: 'Send', disabled: false }).waitFor();
    }
    expect(await secondInput.inputValue()).toBe('for');
    expect(problems).toEqual([]);
    await context.close();
  });

  it('greets once when two tabs open the chat while the welcome of the other is on its way', async () => {
    const context = await browser.newContext({ viewport: { width: 1100, height: 760 } });
    context.setDefaultTimeout(10_000);
    const first = await context.newPage();
    const second = await context.newPage();
    await first.goto(`${allowed.origin}/`);
    await second.goto(`${allowed.origin}/`);
    const sent: string[] = [];
    let release: () => void = () => undefined;
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    // the first tab's welcome is held on its way until the second tab has opened its chat
    await context.route('**/v1/Messages', async (route) => {
      const body = route.request().postDataJSON() as { event?: string; text?: string };
      const tab = route.request().frame().page() === first ? 'first' : 'second';
      sent.push(`${tab}: ${body.event ?? body.text}`);
      if (body.event) await held;
      await route.continue();
    });
    // the second tab's settings are told apart, to know when it has read them: it welcomes, or not, right then
    await second.route('**/v1/widget/config', async (route) => {
      const response = await route.fetch();
      await route.fulfill({ response, json: { ...(await response.json()), name: 'Harbour Café, tab 2' } });
    });
    await first.getByRole('button', { name: 'Open chat' }).click();
    await waitFor(() => sent.length === 1, { what: 'the welcome sent' });
    await second.getByRole('button', { name: 'Open chat' }).click();
    await second.getByRole('dialog', { name: 'Harbour Café, tab 2' }).waitFor();
    release();
    const welcome = "Hi! I'm the Harbour Café assistant.";
    await first.getByRole('log').getByText(welcome).first().waitFor();
    await second.getByRole('log').getByText(welcome).first().waitFor();
    // messages of a tab go one after another: a welcome the second tab sent went before this one
    await second.getByRole('textbox', { name: 'Your message' }).fill('what are your opening hours');
    await second.keyboard.press('Enter');
    await first.getByRole('log').getByText("We're open every day from 8:00 to 18:00.").waitFor();
    expect(sent).toEqual(['first: WELCOME', 'second: what are your opening hours']);
    for (const page of [first, second])
      expect(await page.getByRole('log').getByText(welcome).count()).toBe(1);
    await context.close();
  });

  it('greets when the chat is opened again after a reload that left the welcome on its way', async () => {
    const { page, problems } = await openPage(`${allowed.origin}/`);
    const sent: string[] = [];
    // the first welcome never comes back: the page is reloaded with it on its way
    await page.route('**/v1/Messages', async (route) => {
      sent.push(route.request().postDataJSON().event);
      if (sent.length === 1) return;
      await route.continue();
    });
    await page.getByRole('button', { name: 'Open chat' }).click();
    await waitFor(() => sent.length === 1, { what: 'the welcome sent' });
    await page.reload();
    // the chat comes back open; closed and opened again, it greets
    const launcher = page.locator('[data-platform-chat] .launcher');
    await page.getByRole('dialog').waitFor();
    await launcher.click();
    await page.getByRole('dialog').waitFor({ state: 'hidden' });
    await launcher.click();
    await page.getByRole('log').getByText("Hi! I'm the Harbour Café assistant.").waitFor();
    expect(sent).toEqual(['WELCOME', 'WELCOME']);
    expect(problems).toEqual([]);
    await page.close();
  });

  it('greets in another tab once the welcome of a tab that crashed on its way is given up', async () => {
    const context = await browser.newContext({ viewport: { width: 1100, height: 760 } });
    context.setDefaultTimeout(10_000);
    const first = await context.newPage();
    await first.goto(`${allowed.origin}/`);
    const sent: string[] = [];
    // the first tab's welcome never comes back: the visitor closes the chat, and the tab crashes with it on its way
    await first.route('**/v1/Messages', () => {
      sent.push('WELCOME');
      return new Promise<void>(() => undefined);
    });
    const launcher = first.locator('[data-platform-chat] .launcher');
    await launcher.click();
    await waitFor(() => sent.length === 1, { what: 'the welcome sent' });
    await launcher.click();
    await first.getByRole('dialog').waitFor({ state: 'hidden' });
    const crashed = new Promise((resolve) => first.once('crash', resolve));
    await first.goto('chrome://crash').catch(() => undefined);
    await crashed;
    await first.close();
    // a minute later, in another tab, the visitor opens the chat: it greets
    const second = await context.newPage();
    await second.clock.setFixedTime(Date.now() + 60_000);
    await second.goto(`${allowed.origin}/`);
    await second.getByRole('button', { name: 'Open chat' }).click();
    const log = second.getByRole('log');
    await log.getByText("Hi! I'm the Harbour Café assistant.").waitFor();
    expect(await log.getByText("Hi! I'm the Harbour Café assistant.").count()).toBe(1);
    await context.close();
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
