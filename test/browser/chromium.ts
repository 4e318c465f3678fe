import { existsSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { type Browser, chromium, type Page } from 'playwright-core';
import { tracked } from '../support/live-platforms';

/** Debian's chromium package (`apt-get install -y chromium`); a browser is never downloaded. */
export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
export const SCREENSHOTS = path.resolve(__dirname, 'screenshots');

/**
 * Whether browser tests can run. Without Chromium they say so loudly and skip, unless
 * PLATFORM_REQUIRE_BROWSER=1 (CI), which makes the missing browser a failure.
 */
export function chromiumAvailable(): boolean {
  if (existsSync(CHROMIUM)) return true;
  const message = `Chromium not found at ${CHROMIUM}: browser tests SKIPPED. Install it with: apt-get install -y chromium`;
  if (process.env.PLATFORM_REQUIRE_BROWSER === '1')
    throw new Error(`${message} (PLATFORM_REQUIRE_BROWSER=1)`);
  console.warn(`\n*** ${message} ***\n`);
  return false;
}

export function launchChromium(): Promise<Browser> {
  const launching = chromium.launch({
    executablePath: CHROMIUM,
    args: [
      '--no-sandbox',
      '--headless',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--no-first-run',
    ],
  });
  // A beforeAll that timed out before its browser was up leaves its afterAll nothing to close, and the browser kept
  // jest from exiting (a loaded CI run waited on it for good): closed after the test file, as a platform is.
  tracked(launching.then((browser) => ({ stop: () => browser.close() })));
  return launching;
}

/** Runs one step of a flow; when it fails, the page's screenshot is kept in test/browser/screenshots. */
export async function step<T>(page: Page, name: string, run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (err) {
    mkdirSync(SCREENSHOTS, { recursive: true });
    const file = path.join(SCREENSHOTS, `${name.replace(/[^a-z0-9-]+/gi, '-')}-failed.png`);
    await page.screenshot({ path: file, fullPage: true }).catch(() => undefined);
    throw new Error(`step "${name}" failed (screenshot: ${file}): ${(err as Error).message}`);
  }
}

/**
 * A page in `browser` at a laptop's size, noting in `errors` what the platform's own pages (those under `base`) log
 * as errors.
 */
export async function platformPage(browser: Browser, base: string, errors: string[]): Promise<Page> {
  const page = await browser.newPage({ viewport: { width: 1100, height: 900 } });
  page.on('console', (msg) => {
    if (msg.type() === 'error' && msg.location().url.startsWith(base)) errors.push(msg.text());
  });
  return page;
}

/** Keeps a full-page screenshot named `name` in test/browser/screenshots when BROWSER_SCREENSHOTS=1. */
export const screenshot = (page: Page, name: string) =>
  process.env.BROWSER_SCREENSHOTS === '1'
    ? page.screenshot({ path: path.join(SCREENSHOTS, `${name}.png`), fullPage: true })
    : Promise.resolve();
