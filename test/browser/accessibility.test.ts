import { once } from 'node:events';
import { mkdirSync, readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { runCli } from '@platform/operator-cli';
import type { AxeResults } from 'axe-core';
import * as oidc from 'openid-client';
import * as OTPAuth from 'otpauth';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { startMailCatcher } from '../../services/auth/test/mail-catcher';
import { callJson, startPlatformWithMail, type TestPlatform } from '../harness';
import { type CafeSite, closeSite, createCafeAssistant, hostCafeSite } from './cafe-assistant';
import { chromiumAvailable, launchChromium } from './chromium';

// Code inside page.evaluate runs in the browser (see widget.test.ts for why these are declared here).
// biome-ignore lint/suspicious/noExplicitAny: browser-side code, checked by the browser
declare const window: any;
// biome-ignore lint/suspicious/noExplicitAny: browser-side code, checked by the browser
declare const document: any;
// biome-ignore lint/suspicious/noExplicitAny: browser-side code, checked by the browser
declare const getComputedStyle: (element: any) => any;

/**
 * Every page a person sees, in every state that matters, checked in Chromium the way a person using a
 * keyboard, a screen reader, dark mode or a small phone meets it:
 * - axe-core finds no WCAG 2.1 A/AA violation, in light mode, in dark mode and 320 px wide
 *   (docs/decisions/0093-accessibility-checks-with-axe-core.md);
 * - Tab reaches every control, in document order, and the focused control shows a ring;
 * - at 320 px wide nothing makes the page scroll sideways or is cut off;
 * - a form's error is in the page's title and describes the field that has the focus;
 * - the web chat opens and closes with the keyboard and Escape, and gives focus back to its launcher.
 * Auth's pages are audited under their own strict CSP: axe is evaluated over the DevTools protocol, which
 * the policy does not govern, so the styles audited are the ones a visitor gets.
 * Screenshots of each state (light, dark, 320 px) go to test-results/a11y/.
 */
const run = chromiumAvailable() ? describe : describe.skip;
jest.setTimeout(240_000);

const AXE_SOURCE = readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8');
const WCAG_TAGS = ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa'];
const OUTPUT = path.join(__dirname, '..', '..', 'test-results', 'a11y');
const DESKTOP = { width: 1100, height: 800 };
const PHONE = { width: 320, height: 640 };

/** Installs, in the page, what the checks below ask of it. Runs in the browser. */
function browserHelpers() {
  const FOCUSABLE =
    'a[href], area[href], button:not([disabled]), input:not([type="hidden"]):not([disabled]), select:not([disabled]), textarea:not([disabled]), summary, [tabindex]:not([tabindex="-1"])';
  const visible = (el: typeof document) =>
    el.getClientRects().length > 0 && getComputedStyle(el).visibility !== 'hidden';
  /** every element, shadow roots included, in document order */
  const all = () => {
    const out: (typeof document)[] = [];
    const walk = (root: typeof document) => {
      for (const el of root.querySelectorAll('*')) {
        out.push(el);
        if (el.shadowRoot) walk(el.shadowRoot);
      }
    };
    walk(document);
    return out;
  };
  const parentOf = (el: typeof document) => el.parentElement ?? el.getRootNode()?.host ?? null;
  const deepActive = () => {
    let active = document.activeElement;
    while (active?.shadowRoot?.activeElement) active = active.shadowRoot.activeElement;
    return active === document.body || active === document.documentElement ? null : active;
  };
  const describe = (el: typeof document) => {
    const label =
      el.getAttribute('aria-label') ||
      el.labels?.[0]?.textContent ||
      el.textContent ||
      el.getAttribute('placeholder') ||
      el.getAttribute('name') ||
      '';
    const cls = typeof el.className === 'string' && el.className ? `.${el.className.split(' ')[0]}` : '';
    return `${el.tagName.toLowerCase()}${el.id ? `#${el.id}` : cls} "${label.trim().replace(/\s+/g, ' ').slice(0, 40)}"`;
  };
  /** what shows focus: an outline of 2 px or more, or a box shadow (compared with the one at rest) */
  const ring = (el: typeof document) => {
    const s = getComputedStyle(el);
    return {
      outline:
        s.outlineStyle !== 'none' && Number.parseFloat(s.outlineWidth) >= 2
          ? `${s.outlineStyle} ${s.outlineWidth} ${s.outlineColor}`
          : '',
      shadow: s.boxShadow as string,
    };
  };
  /** a box that scrolls or clips what is wider than it (what it clips is found by the check below) */
  const containsSideways = (el: typeof document) => getComputedStyle(el).overflowX !== 'visible';
  /** elements that stick out of the viewport (outside a box that scrolls or clips) or are cut off by their box */
  const overflow = () => {
    const width = document.documentElement.clientWidth;
    const found: string[] = [];
    for (const el of all()) {
      const box = el.getBoundingClientRect();
      // visually hidden text (a 1 px clipped box) is for screen readers: it neither sticks out nor is cut off
      if (!visible(el) || box.width <= 1 || box.height <= 1) continue;
      let contained = false;
      for (let p = parentOf(el); p && !contained; p = parentOf(p)) contained = containsSideways(p);
      if (!contained && box.width > 0 && (box.right > width + 1 || box.left < -1))
        found.push(`${describe(el)} spans ${Math.round(box.left)}..${Math.round(box.right)} px`);
      const s = getComputedStyle(el);
      if (
        /hidden|clip/.test(s.overflowX) &&
        s.textOverflow !== 'ellipsis' &&
        el.scrollWidth > el.clientWidth + 1
      )
        found.push(`${describe(el)} cuts off its content (${el.scrollWidth} px in ${el.clientWidth} px)`);
    }
    const page = document.scrollingElement.scrollWidth;
    if (page > width) found.unshift(`the page is ${page} px wide in a ${width} px viewport`);
    return found;
  };
  window.__a11y = {
    all,
    deepActive,
    describe,
    ring,
    overflow,
    focusables: () =>
      all()
        .filter(visible)
        .filter((el) => el.matches(FOCUSABLE)),
  };
}

async function helpers(page: Page): Promise<void> {
  if (!(await page.evaluate(() => Boolean(window.__a11y)))) await page.evaluate(browserHelpers);
}

/** axe-core's WCAG 2.1 A/AA violations on the page, one line per rule and element. */
async function axeViolations(page: Page): Promise<string[]> {
  if (!(await page.evaluate(() => Boolean(window.axe)))) await page.evaluate(`${AXE_SOURCE}\n;undefined`);
  const results: AxeResults = await page.evaluate(
    (tags) =>
      window.axe.run(document, { runOnly: { type: 'tag', values: tags }, resultTypes: ['violations'] }),
    WCAG_TAGS,
  );
  return results.violations.flatMap((v) =>
    v.nodes.map(
      (n) =>
        `${v.id} (${v.impact}) ${n.target.join(' ')}: ${(n.failureSummary ?? v.help).replace(/\s+/g, ' ')}`,
    ),
  );
}

/**
 * Tabs through the whole page (twice round): every visible control must be reached, in document order,
 * and show a focus ring. Answers what is wrong.
 */
async function keyboardProblems(page: Page): Promise<string[]> {
  await helpers(page);
  const names: string[] = await page.evaluate(() => {
    const h = window.__a11y;
    h.deepActive()?.blur();
    window.__stops = h.focusables();
    window.__atRest = window.__stops.map(h.ring);
    return window.__stops.map(h.describe);
  });
  const problems: string[] = [];
  const firstVisits: number[] = [];
  for (let press = 0; press < names.length * 2 + 2; press++) {
    await page.keyboard.press('Tab');
    const at = await page.evaluate(() => {
      const h = window.__a11y;
      const active = h.deepActive();
      if (!active) return null;
      const index = window.__stops.indexOf(active);
      const ring = h.ring(active);
      const rest = index >= 0 ? window.__atRest[index] : { shadow: 'none' };
      return {
        index,
        name: h.describe(active),
        ring: Boolean(ring.outline) || (ring.shadow !== 'none' && ring.shadow !== rest.shadow),
      };
    });
    if (!at) continue;
    if (at.index < 0) problems.push(`Tab focuses ${at.name}, which is not a visible control`);
    else if (!firstVisits.includes(at.index)) {
      firstVisits.push(at.index);
      if (!at.ring) problems.push(`${at.name} shows no focus ring`);
    }
  }
  for (const [i, name] of names.entries())
    if (!firstVisits.includes(i)) problems.push(`Tab never reaches ${name}`);
  const start = firstVisits.indexOf(0);
  const order = [...firstVisits.slice(start), ...firstVisits.slice(0, start)];
  if (order.some((v, i) => i > 0 && v < order[i - 1]!))
    problems.push(`Tab order differs from the document's: ${order.map((i) => names[i]).join(' → ')}`);
  await page.evaluate(() => window.__a11y.deepActive()?.blur());
  return problems;
}

async function overflowProblems(page: Page): Promise<string[]> {
  await helpers(page);
  return page.evaluate(() => window.__a11y.overflow());
}

/**
 * A page answering a form with an error says so in its title (what a screen reader reads first), and puts the
 * focus in a field that the error message describes, so that a person lands where the correction is made.
 */
async function errorProblems(page: Page): Promise<string[]> {
  // the focus moves as the page loads: 10 s let a loaded machine's browser get there (a page that never moves it
  // is reported below)
  await page
    .waitForFunction(() => document.activeElement !== document.body, null, { timeout: 10_000 })
    .catch(() => undefined);
  return page.evaluate(() => {
    const problems: string[] = [];
    if (!/^Error\b/.test(document.title))
      problems.push(`the title "${document.title}" does not say there is an error`);
    const message = document.querySelector('[role="alert"]');
    const active = document.activeElement;
    const describedBy = String(active?.getAttribute('aria-describedby') ?? '').split(' ');
    if (!message?.id || !describedBy.includes(message.id))
      problems.push(
        `the field focused on load (${active?.id || active?.tagName}) is not described by the error message`,
      );
    return problems;
  });
}

/** Waits until every image of the page (shadow roots included) has loaded. */
const imagesLoaded = (page: Page) =>
  page.waitForFunction(() => {
    const imgs: (typeof document)[] = [];
    const walk = (root: typeof document) => {
      for (const el of root.querySelectorAll('*')) {
        if (el.tagName === 'IMG') imgs.push(el);
        if (el.shadowRoot) walk(el.shadowRoot);
      }
    };
    walk(document);
    return imgs.every((img) => img.complete);
  });

/**
 * Audits the page as it stands: the error (`error: true`), axe in light mode, the keyboard, axe in dark mode,
 * 320 px wide; keeps a screenshot of each. Adds what is wrong to `problems`, each line naming the state.
 */
async function audit(
  page: Page,
  state: string,
  problems: string[],
  options: { error?: boolean } = {},
): Promise<void> {
  const add = (kind: string, lines: string[]) => {
    for (const line of lines) problems.push(`[${state}] ${kind}: ${line}`);
  };
  const shot = (variant: string) =>
    page.screenshot({ path: path.join(OUTPUT, `${state}-${variant}.png`), fullPage: true });
  await page.waitForLoadState();
  await imagesLoaded(page);
  if (options.error) add('error', await errorProblems(page));
  add('axe', await axeViolations(page));
  await shot('light');
  add('keyboard', await keyboardProblems(page));
  await page.emulateMedia({ colorScheme: 'dark' });
  add('axe, dark mode', await axeViolations(page));
  await shot('dark');
  await page.emulateMedia({ colorScheme: 'light' });
  await page.setViewportSize(PHONE);
  add('320 px', await overflowProblems(page));
  add('axe, 320 px', await axeViolations(page));
  await shot('mobile');
  await page.setViewportSize(DESKTOP);
}

/** A page that records what its policy refused (a fix must keep working under the CSP) and page errors. */
async function newPage(context: BrowserContext, problems: string[]): Promise<Page> {
  const page = await context.newPage();
  page.setDefaultTimeout(10_000);
  page.on('pageerror', (err) => problems.push(`page error: ${err.message}`));
  page.on('console', (msg) => {
    if (msg.type() === 'error' && /Content Security Policy/i.test(msg.text())) problems.push(msg.text());
  });
  return page;
}

const report = (problems: string[]) => (problems.length ? `\n${problems.join('\n')}\n` : '');

run('every page is usable with a keyboard, a screen reader, dark mode and a small screen', () => {
  let p: TestPlatform;
  let mail: Awaited<ReturnType<typeof startMailCatcher>>;
  let browser: Browser;
  let base: string;
  let app: Server;
  let callbackUrl: string;
  let authorizationUrl: () => Promise<string>;
  let cafe: CafeSite;
  let badToken: CafeSite;
  let bot: { clientToken: string };
  const contexts: BrowserContext[] = [];
  const context = async () => {
    const created = await browser.newContext({ viewport: DESKTOP, colorScheme: 'light' });
    contexts.push(created);
    return created;
  };
  const email = `grace-${Date.now()}@example.com`;
  const password = 'a long and happy password';

  beforeAll(async () => {
    mkdirSync(OUTPUT, { recursive: true });
    app = createServer((_req, res) => {
      res.setHeader('content-type', 'text/html');
      res.end('<!doctype html><title>Notes</title><h1>Signed in to Notes</h1>');
    });
    app.listen(0, '127.0.0.1');
    await once(app, 'listening');
    callbackUrl = `http://127.0.0.1:${(app.address() as AddressInfo).port}/callback`;
    let cli: Record<string, string>;
    ({
      p,
      mail,
      base,
      cliEnv: cli,
    } = await startPlatformWithMail({
      secret: 'a11y-test-internal-secret-0123456789abcdef',
      env: {
        PLATFORM_NAME: 'Acme AI Platform',
        // the web chat lives under legacy v1 and retires with it: keep v1 open here
        LEGACY_V1_RETIREMENT_DATE: '2099-01-01',
      },
    }));
    const io = { out: () => undefined, err: (l: string) => console.error(l) };
    const add = ['oidc-client', 'add', 'notes-app', '--redirect-uri', callbackUrl, '--name', 'Notes'];
    expect(await runCli(add, cli, io)).toBe(0);
    // a single sign-on button on the sign-in forms (its issuer is never called here)
    const sso = ['sso', 'add', 'acme-sso', '--issuer', 'https://sso.example.com', '--client-id', 'acme'];
    expect(await runCli([...sso, '--name', 'Acme SSO'], cli, io)).toBe(0);

    const config = await oidc.discovery(new URL(`${base}/oidc`), 'notes-app', undefined, oidc.None(), {
      execute: [oidc.allowInsecureRequests],
    });
    authorizationUrl = async () =>
      oidc
        .buildAuthorizationUrl(config, {
          redirect_uri: callbackUrl,
          scope: 'openid email profile offline_access api',
          code_challenge: await oidc.calculatePKCECodeChallenge(oidc.randomPKCECodeVerifier()),
          code_challenge_method: 'S256',
          state: oidc.randomState(),
          prompt: 'consent',
        })
        .toString();

    const legacy = p.legacyUrl;
    const tag = (token: () => string) => () =>
      `<script src="${legacy}/v1/widget.js" data-token="${token()}" defer></script>`;
    cafe = await hostCafeSite(tag(() => bot.clientToken));
    badToken = await hostCafeSite(tag(() => 'lct_not-a-real-token'));
    bot = await createCafeAssistant(legacy, cafe.origin, [cafe.origin]);
    browser = await launchChromium();
  }, 120_000);

  afterAll(async () => {
    for (const c of contexts) await c.close().catch(() => undefined);
    await browser?.close();
    await closeSite(cafe);
    await closeSite(badToken);
    await p?.stop();
    await mail?.close();
    app?.close();
  });

  it('signed out: sign-in, sign-up, password reset and OIDC sign-in pages, empty and with an error', async () => {
    const problems: string[] = [];
    const page = await newPage(await context(), problems);

    await page.goto(`${base}/account/login`);
    await audit(page, 'sign-in', problems);
    // what the focus ring looks like (Tab, so that the browser shows it)
    await page.getByRole('button', { name: 'Sign in', exact: true }).focus();
    await page.keyboard.press('Tab');
    await page.keyboard.press('Shift+Tab');
    await page.screenshot({ path: path.join(OUTPUT, 'sign-in-focus-light.png') });
    await page.getByLabel('Email').fill('nobody@example.com');
    await page.getByLabel('Password').fill('not the password');
    await page.getByRole('button', { name: 'Sign in', exact: true }).click();
    await page.getByRole('alert').waitFor();
    await audit(page, 'sign-in-error', problems, { error: true });

    await page.goto(`${base}/account/signup`);
    await audit(page, 'sign-up', problems);
    await page.getByLabel('Email').fill('ada@localhost');
    await page.getByLabel('Password').fill(password);
    await page.getByRole('button', { name: 'Create account' }).click();
    await page.getByRole('alert').getByText('Enter a valid email address.').waitFor();
    await audit(page, 'sign-up-error', problems, { error: true });
    // an address with an account: the refusal links to signing in and to a password reset
    const taken = 'taken@example.com';
    expect((await callJson(`${base}/v2/signup`, 'POST', { body: { email: taken, password } })).status).toBe(
      201,
    );
    await page.getByLabel('Email').fill(taken);
    await page.getByLabel('Password').fill(password);
    await page.getByRole('button', { name: 'Create account' }).click();
    await page.getByRole('alert').getByRole('link', { name: 'reset your password' }).waitFor();
    await audit(page, 'sign-up-refused', problems, { error: true });

    await page.goto(`${base}/account/forgot-password`);
    await audit(page, 'forgot-password', problems);
    await page.getByLabel('Email').fill('nobody@example.com');
    await page.getByRole('button', { name: 'Send the link' }).click();
    await page.getByRole('heading', { name: 'Check your email' }).waitFor();
    await audit(page, 'forgot-password-sent', problems);

    // (the form itself, and its error, are audited with a live link below)
    await page.goto(`${base}/account/reset-password?token=not-a-token`);
    await page.getByRole('heading', { name: 'This link has expired' }).waitFor();
    await audit(page, 'reset-password-expired', problems);

    await page.goto(`${base}/account/verify-email?token=not-a-token`);
    await audit(page, 'verify-email-invalid', problems);

    await page.goto(await authorizationUrl());
    await page.getByText('to continue to Notes').waitFor();
    await audit(page, 'oidc-sign-in', problems);
    await page.getByRole('button', { name: 'Sign in', exact: true }).click();
    await page.getByRole('alert').waitFor();
    await audit(page, 'oidc-sign-in-error', problems, { error: true });

    await page.goto(`${base}/oidc/interaction/not-an-interaction`);
    await page.getByRole('heading', { name: 'This sign-in request is no longer valid' }).waitFor();
    await audit(page, 'oidc-interaction-invalid', problems);

    expect(report(problems)).toBe('');
  });

  it('signed in: the account page in each state, two-step verification, the MFA step, consent, a new password', async () => {
    const problems: string[] = [];
    const page = await newPage(await context(), problems);

    await page.goto(`${base}/account/signup`);
    await page.getByLabel('First name').fill('Grace');
    await page.getByLabel('Last name').fill('Hopper');
    await page.getByLabel('Email').fill(email);
    await page.getByLabel('Password').fill(password);
    await page.getByRole('button', { name: 'Create account' }).click();
    await page.waitForURL(`${base}/account?welcome=1`);
    await audit(page, 'account-welcome', problems);

    await page.goto(await mail.linkFor(email, '/account/verify-email'));
    await page.getByRole('heading', { name: 'Email confirmed' }).waitFor();
    await audit(page, 'verify-email', problems);

    await page.goto(`${base}/account`);
    await page.locator('#token-name').fill('deploy script on the build machine');
    await page.getByRole('button', { name: 'Create token' }).click();
    await page.locator('#new-token').waitFor();
    await audit(page, 'account-token-created', problems);

    await page.getByLabel('Valid for (days)').fill('999');
    await page.locator('#token-name').fill('too long');
    await page.getByRole('button', { name: 'Create token' }).click();
    await page.getByRole('alert').waitFor();
    await audit(page, 'account-error', problems, { error: true });

    await page.goto(`${base}/account`);
    await page.locator('form[action="/account/profile"] input[name="csrf"]').evaluate((el) => {
      el.value = 'expired';
    });
    await page.getByRole('button', { name: 'Save profile' }).click();
    await page.getByRole('heading', { name: 'The form expired' }).waitFor();
    await audit(page, 'account-form-expired', problems);

    await page.goto(`${base}/account/mfa`);
    await audit(page, 'mfa-setup', problems);
    const secret = (await page.locator('#totp-secret').textContent())!.trim();
    const totp = new OTPAuth.TOTP({ secret: OTPAuth.Secret.fromBase32(secret), digits: 6, period: 30 });
    const wrong = (code: string) => (code === '000000' ? '111111' : '000000');
    await page.getByLabel('Code from the app').fill(wrong(totp.generate()));
    await page.getByRole('button', { name: 'Turn on' }).click();
    await page.getByRole('alert').waitFor();
    await audit(page, 'mfa-setup-error', problems, { error: true });
    await page.getByLabel('Code from the app').fill(totp.generate());
    await page.getByRole('button', { name: 'Turn on' }).click();
    await page.getByRole('heading', { name: 'Two-step verification is on' }).waitFor();
    await audit(page, 'mfa-recovery-codes', problems);

    await page.goto(`${base}/account`);
    await audit(page, 'account-mfa-on', problems);

    await page.getByRole('button', { name: 'Sign out', exact: true }).first().click();
    await page.waitForURL(`${base}/account/login`);
    await page.getByLabel('Email').fill(email);
    await page.getByLabel('Password').fill(password);
    await page.getByRole('button', { name: 'Sign in', exact: true }).click();
    await page.waitForURL(/\/account\/login\/mfa/);
    await audit(page, 'mfa-step', problems);
    await page.getByLabel('Code').fill(wrong(totp.generate({ timestamp: Date.now() + 30_000 })));
    await page.getByRole('button', { name: 'Verify' }).click();
    await page.getByRole('alert').waitFor();
    await audit(page, 'mfa-step-error', problems, { error: true });
    // the enrolment used this time step; the next one is within the accepted drift and not a replay
    await page.getByLabel('Code').fill(totp.generate({ timestamp: Date.now() + 30_000 }));
    await page.getByRole('button', { name: 'Verify' }).click();
    await page.waitForURL(`${base}/account`);

    await page.goto(await authorizationUrl());
    await page.getByRole('heading', { name: 'Allow access?' }).waitFor();
    await audit(page, 'oidc-consent', problems);

    // last: a new password signs the person out everywhere
    await page.goto(`${base}/account/forgot-password`);
    await page.getByLabel('Email').fill(email);
    await page.getByRole('button', { name: 'Send the link' }).click();
    await page.getByRole('heading', { name: 'Check your email' }).waitFor();
    await page.goto(await mail.linkFor(email, '/account/reset-password'));
    await audit(page, 'reset-password', problems);
    // too short (past the browser's own check of the field, to the page's answer)
    await page.getByLabel('New password').fill('short');
    await page.locator('form').evaluate((form) => form.setAttribute('novalidate', ''));
    await page.getByRole('button', { name: 'Set new password' }).click();
    await page.getByRole('alert').waitFor();
    await audit(page, 'reset-password-error', problems, { error: true });
    await page.getByLabel('New password').fill(`${password} again`);
    await page.getByRole('button', { name: 'Set new password' }).click();
    await page.getByRole('heading', { name: 'Password changed' }).waitFor();
    await audit(page, 'password-changed', problems);

    expect(report(problems)).toBe('');
  });

  it('deleting an account: blocked by an organization, the confirmation with a second factor, a wrong password, deleted', async () => {
    const problems: string[] = [];
    const page = await newPage(await context(), problems);
    const leaving = `ada-${Date.now()}@example.com`;
    await page.goto(`${base}/account/signup`);
    await page.getByLabel('Email').fill(leaving);
    await page.getByLabel('Password').fill(password);
    await page.getByRole('button', { name: 'Create account' }).click();
    await page.waitForURL(`${base}/account?welcome=1`);
    await page.goto(`${base}/account/mfa`);
    const secret = (await page.locator('#totp-secret').textContent())!.trim();
    const totp = new OTPAuth.TOTP({ secret: OTPAuth.Secret.fromBase32(secret), digits: 6, period: 30 });
    await page.getByLabel('Code from the app').fill(totp.generate());
    await page.getByRole('button', { name: 'Turn on' }).click();
    await page.getByRole('heading', { name: 'Two-step verification is on' }).waitFor();
    // an organization with a colleague in it, which the person owns alone
    const token = (await page.context().cookies()).find((c) => c.name === 'access-token')!.value;
    const colleague = (await callJson(`${base}/v2/login/anonymous`, 'POST')).body;
    const slug = `ada-team-${Date.now()}`;
    const asAda = (method: string, route: string, body: unknown) =>
      callJson(`${base}${route}`, method, { bearer: token, body });
    await asAda('POST', '/v2/orgs', { slug, name: 'Ada Team' });
    await asAda('POST', `/v2/orgs/${slug}/members`, { userId: colleague.userId, role: 'member' });

    await page.goto(`${base}/account`);
    await page.getByRole('link', { name: 'Delete my account…' }).click();
    await page.getByText('Not yet: you are the last owner of what other people still use.').waitFor();
    await audit(page, 'account-delete-blocked', problems);

    await asAda('POST', `/v2/orgs/${slug}/members`, { userId: colleague.userId, role: 'owner' });
    await page.reload();
    await page.getByLabel('Code from your authenticator app').waitFor();
    await audit(page, 'account-delete', problems);
    await page.getByLabel('Your password').fill('not the password');
    await page
      .getByLabel('Code from your authenticator app')
      .fill(totp.generate({ timestamp: Date.now() + 30_000 }));
    await page.getByRole('button', { name: 'Delete my account' }).click();
    await page.getByRole('alert').waitFor();
    await audit(page, 'account-delete-error', problems, { error: true });
    await page.getByLabel('Your password').fill(password);
    await page
      .getByLabel('Code from your authenticator app')
      .fill(totp.generate({ timestamp: Date.now() + 30_000 }));
    await page.getByRole('button', { name: 'Delete my account' }).click();
    await page.getByRole('heading', { name: 'Your account is deleted' }).waitFor();
    await audit(page, 'account-deleted', problems);

    expect(report(problems)).toBe('');
  });

  it('the web chat: closed, open, a conversation with every reply item, an error; by keyboard and Escape', async () => {
    const problems: string[] = [];
    const page = await newPage(await context(), problems);
    const panel = page.getByRole('dialog');
    const launcher = page.locator('[data-platform-chat] .launcher');
    const log = page.getByRole('log');
    const focusedClass = () =>
      page.evaluate(() => {
        let active = document.activeElement;
        while (active?.shadowRoot?.activeElement) active = active.shadowRoot.activeElement;
        return active?.className ?? null;
      });

    await page.goto(`${p.legacyUrl}/v1/widget-demo`);
    await audit(page, 'widget-demo-no-token', problems);
    await page.goto(`${p.legacyUrl}/v1/widget-demo?token=${encodeURIComponent(bot.clientToken)}`);
    await launcher.waitFor();
    await audit(page, 'widget-demo-closed', problems);
    await launcher.click();
    await log.getByText("Hi! I'm the Harbour Café assistant.").waitFor();
    await audit(page, 'widget-demo-open', problems);

    await page.goto(`${cafe.origin}/`);
    await launcher.waitFor();
    await audit(page, 'widget-closed', problems);

    // The keyboard alone: Tab reaches the launcher, Enter opens and puts focus in the input, Escape closes
    // and gives focus back; Space opens again, the header's close button closes.
    await page.keyboard.press('Tab');
    expect(await focusedClass()).toBe('launcher');
    await page.keyboard.press('Enter');
    await panel.waitFor();
    expect(await focusedClass()).toBe('');
    await log.getByText("Hi! I'm the Harbour Café assistant.").waitFor();
    await audit(page, 'widget-open', problems);
    await log.getByRole('button', { name: 'Opening hours' }).focus();
    await page.screenshot({ path: path.join(OUTPUT, 'widget-focus-light.png') });
    await page.keyboard.press('Escape');
    await panel.waitFor({ state: 'hidden' });
    expect(await focusedClass()).toBe('launcher');
    await page.keyboard.press('Space');
    await panel.waitFor();
    for (let i = 0; i < 30 && (await focusedClass()) !== 'close'; i++) await page.keyboard.press('Shift+Tab');
    await page.keyboard.press('Enter');
    await panel.waitFor({ state: 'hidden' });
    expect(await focusedClass()).toBe('launcher');

    // Every reply item: text and quick replies (the welcome), a link, cards with pictures, links and
    // buttons, an event; the visitor's own messages.
    await page.keyboard.press('Enter');
    await page.getByRole('textbox', { name: 'Your message' }).fill('what are your opening hours');
    await page.keyboard.press('Enter');
    await log.getByText("We're open every day from 8:00 to 18:00.").waitFor();
    await log.getByRole('button', { name: 'See the menu' }).first().click();
    await log.getByRole('heading', { name: 'Flat white' }).waitFor();
    await log.getByRole('button', { name: 'Order one' }).click();
    await log.getByRole('button', { name: 'Start over' }).waitFor();
    await audit(page, 'widget-conversation', problems);
    // scrolled up to the menu: the cards and their pictures in view
    await log.getByRole('heading', { name: 'Flat white' }).scrollIntoViewIfNeeded();
    await page.screenshot({ path: path.join(OUTPUT, 'widget-cards-light.png') });

    const refused = await newPage(await context(), problems);
    await refused.goto(`${badToken.origin}/`);
    await refused.getByRole('button', { name: 'Open chat' }).click();
    await refused.getByRole('alert').getByText('The assistant cannot be reached from this page.').waitFor();
    await audit(refused, 'widget-error', problems);

    expect(report(problems)).toBe('');
  });
});
