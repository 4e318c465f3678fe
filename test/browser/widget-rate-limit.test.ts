import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { ManualClock } from '@platform/kernel';
import type { Browser } from 'playwright-core';
import { callJson, startTestPlatform, type TestPlatform } from '../harness';
import { type CafeSite, closeSite, hostCafeSite } from './cafe-assistant';
import { chromiumAvailable, launchChromium, step } from './chromium';

/**
 * Decision 0112: when Messages answers 429, the web chat says so politely in the assistant's language, in its
 * alert line, and gives the visitor's words back to the input instead of losing them. A French assistant whose
 * visitors may send two messages a minute (the welcome and one more); the platform's clock is moved, never waited on.
 */
const OUTPUT = path.join(__dirname, '..', '..', 'test-results', 'widget');
jest.setTimeout(60_000);

(chromiumAvailable() ? describe : describe.skip)('web chat when messages come too fast', () => {
  const clock = new ManualClock('2026-11-23T10:00:00Z');
  let platform: TestPlatform;
  let browser: Browser;
  let site: CafeSite;
  let clientToken = '';

  beforeAll(async () => {
    mkdirSync(OUTPUT, { recursive: true });
    platform = await startTestPlatform({
      clock,
      env: {
        LEGACY_V1_RETIREMENT_DATE: '2099-01-01',
        LEGACY_MESSAGES_PER_USER: '2',
        // no sentences to train on: a text gets the fallback at once
        LEGACY_FIRST_MODEL_WAIT_MS: '0',
      },
    });
    const legacy = platform.legacyUrl;
    site = await hostCafeSite(
      () => `<script src="${legacy}/v1/widget.js" data-token="${clientToken}" defer></script>`,
    );
    const signup = await callJson(`${legacy}/v2/auth/signup`, 'POST', {
      body: { username: 'boulangerie', password: 'pain au chocolat' },
    });
    const created = await fetch(`${legacy}/v2/bots`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-legacy-session-token': signup.body.sessionToken },
      body: JSON.stringify({ name: 'Boulangerie du Port', lang: 'fr' }),
    });
    const bot = (await created.json()) as { clientToken: string; developerToken: string };
    clientToken = bot.clientToken;
    const welcome = {
      name: 'Bienvenue',
      isWelcome: true,
      conditionalResponses: {
        fr: { default: { default: [{ type: 'text', text: ['Bonjour ! Que puis-je pour vous ?'] }] } },
      },
    };
    expect(
      (await callJson(`${legacy}/v1/intents`, 'POST', { bearer: bot.developerToken, body: welcome })).status,
    ).toBe(200);
    const patched = await callJson(`${legacy}/v1/bots`, 'PATCH', {
      bearer: bot.developerToken,
      body: { allowedOrigins: [site.origin] },
    });
    expect(patched.status).toBe(200);
    browser = await launchChromium();
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await closeSite(site);
    await platform?.stop();
  });

  it('says politely, in French, to wait, and keeps what the visitor typed', async () => {
    const page = await browser.newPage({ viewport: { width: 1100, height: 760 } });
    page.setDefaultTimeout(10_000);
    const problems: string[] = [];
    page.on('pageerror', (err) => problems.push(`page error: ${err.message}`));
    await page.goto(`${site.origin}/`);
    const log = page.getByRole('log');
    const input = page.getByRole('textbox', { name: 'Votre message' });
    const alert = page.getByRole('alert');

    await step(page, 'welcome', async () => {
      // the page is in English; the chat speaks the assistant's language once it knows it
      await page.getByRole('button', { name: 'Open chat' }).click();
      await log.getByText('Bonjour ! Que puis-je pour vous ?').waitFor();
      // the welcome sets no placeholder of its own: the spec's default is said in French too
      expect(await input.getAttribute('placeholder')).toBe('Comment puis-je vous aider ?');
    });
    await step(page, 'second message answered', async () => {
      await input.fill('Avez-vous des croissants ?');
      await page.keyboard.press('Enter');
      await log.getByText("Désolé, je n'ai pas compris.", { exact: false }).waitFor();
    });
    await step(page, 'third message refused', async () => {
      await input.fill('Et des baguettes ?');
      await page.keyboard.press('Enter');
      await alert
        .getByText('Désolé, trop de messages ont été envoyés en peu de temps.', { exact: false })
        .waitFor();
    });
    // the words are back in the input, and not in the conversation as if they had been sent
    expect(await input.inputValue()).toBe('Et des baguettes ?');
    expect(await log.getByText('Et des baguettes ?').count()).toBe(0);
    await page.screenshot({ path: path.join(OUTPUT, '7-too-fast.png') });

    // a minute later the same words go through, and the alert is gone
    clock.advance(60_000);
    await step(page, 'sent again after the window', async () => {
      await page.getByRole('button', { name: 'Envoyer' }).click();
      await log.getByText('Et des baguettes ?').waitFor();
      await page.waitForFunction(() => {
        // biome-ignore lint/suspicious/noExplicitAny: browser-side code, checked by the browser
        const root = (globalThis as any).document.querySelector('[data-platform-chat]').shadowRoot;
        return (
          root.querySelectorAll('.msg.bot').length === 3 && root.querySelector('.error').textContent === ''
        );
      });
    });
    expect(await input.inputValue()).toBe('');

    // two messages sent one after the other, before the first is answered, both refused: neither is lost
    await step(page, 'two messages refused in a row', async () => {
      await input.fill('Un pain aux raisins');
      await page.keyboard.press('Enter');
      await log.getByText('Un pain aux raisins').waitFor();
      await page.waitForFunction(() => {
        // biome-ignore lint/suspicious/noExplicitAny: browser-side code, checked by the browser
        const root = (globalThis as any).document.querySelector('[data-platform-chat]').shadowRoot;
        return root.querySelectorAll('.msg.bot').length === 4;
      });
      // the first is held on its way until the second is typed and sent
      let release = () => {};
      const held = new Promise<void>((resolve) => {
        release = resolve;
      });
      await page.route('**/v1/Messages', async (route) => {
        await held;
        await route.continue();
      });
      await input.fill('Une tarte');
      await page.keyboard.press('Enter');
      await input.fill('Deux éclairs');
      await page.keyboard.press('Enter');
      release();
      await page.waitForFunction(() => {
        // biome-ignore lint/suspicious/noExplicitAny: browser-side code, checked by the browser
        const root = (globalThis as any).document.querySelector('[data-platform-chat]').shadowRoot;
        return root.querySelectorAll('.msg.user').length === 3 && root.querySelector('input').value !== '';
      });
      await alert.getByText('Désolé', { exact: false }).waitFor();
      // let the second refusal land too
      await page.waitForFunction(() => {
        // biome-ignore lint/suspicious/noExplicitAny: browser-side code, checked by the browser
        const root = (globalThis as any).document.querySelector('[data-platform-chat]').shadowRoot;
        return (
          !root.querySelector('.log').hasAttribute('aria-busy') &&
          root.querySelectorAll('.msg.user').length === 3
        );
      });
    });
    await page.screenshot({ path: path.join(OUTPUT, '8-too-fast-twice.png') });
    expect(await input.inputValue()).toBe('Une tarte Deux éclairs');
    expect(await log.getByText('Une tarte').count()).toBe(0);
    expect(await log.getByText('Deux éclairs').count()).toBe(0);
    expect(problems).toEqual([]);
    await page.close();
  });
});
