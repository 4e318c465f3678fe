import { runCli } from '@platform/operator-cli';
import type { Browser, Page } from 'playwright-core';
import { startFakeIdp } from '../../services/auth/test/fake-idp';
import { startMailCatcher } from '../../services/auth/test/mail-catcher';
import { callJson, startPlatformWithMail, type TestPlatform } from '../harness';
import { chromiumAvailable, launchChromium, platformPage, screenshot, step } from './chromium';

// Code inside page.evaluate runs in the browser (see widget.test.ts for why this is declared here).
// biome-ignore lint/suspicious/noExplicitAny: browser-side code, checked by the browser
declare const document: any;

/**
 * What a person meets when a form of the account pages says no, in Chromium through the edge: the answer says what
 * to do, keeps what they typed, and puts the focus on the field to correct; a mailed link that cannot work says so
 * before a password is chosen for it.
 */
const run = chromiumAvailable() ? describe : describe.skip;

run('refusals of the account pages in Chromium', () => {
  let p: TestPlatform;
  let mail: Awaited<ReturnType<typeof startMailCatcher>>;
  let browser: Browser;
  let page: Page;
  let base: string;
  let idp: Awaited<ReturnType<typeof startFakeIdp>>;
  const password = 'a long and happy password';

  beforeAll(async () => {
    let cliEnv: Record<string, string>;
    ({ p, mail, base, cliEnv } = await startPlatformWithMail({
      secret: 'page-errors-internal-secret-0123456789abcdef',
      // one live access token per person: the second is over the limit
      env: { PLATFORM_NAME: 'Acme AI Platform', ACCESS_TOKENS_PER_USER_LIMIT: '1' },
    }));
    // a company's identity provider (its login takes any name; `<name>@acme.example` is the verified email)
    const secret = 'company-secret-for-the-platform';
    const redirectUris = [`${base}/account/sso/acme/callback`];
    idp = await startFakeIdp({ clientId: 'platform', clientSecret: secret, redirectUris });
    const add = [
      'sso',
      'add',
      'acme',
      '--issuer',
      idp.url,
      '--client-id',
      'platform',
      '--client-secret',
      secret,
    ];
    const io = { out: () => undefined, err: (l: string) => console.error(l) };
    expect(await runCli([...add, '--name', 'Acme Corp'], cliEnv, io)).toBe(0);
    browser = await launchChromium();
    // (a refusal's status is an error in the console: what the pages log is not checked here)
    page = await platformPage(browser, base, []);
    page.setDefaultTimeout(10_000);
  });
  afterAll(async () => {
    await browser?.close();
    await p?.stop();
    await mail?.close();
    await idp?.close();
  });

  const shot = (name: string) => screenshot(page, name);
  /** the id of the focused element and whether it is marked invalid and described by the page's error */
  const focused = () =>
    page.evaluate(() => {
      const el = document.activeElement;
      return {
        id: el?.id ?? '',
        invalid: el?.getAttribute('aria-invalid') === 'true',
        describedByError: String(el?.getAttribute('aria-describedby') ?? '')
          .split(' ')
          .includes('form-error'),
      };
    });
  /** submits the access-token form; answers the status of its answer */
  const createToken = async (name: string, days: string) => {
    await page.locator('#token-name').fill(name);
    await page.getByLabel('Valid for (days)').fill(days);
    const answer = page.waitForResponse((r) => r.url() === `${base}/account/tokens`);
    await page.getByRole('button', { name: 'Create token' }).click();
    const status = (await answer).status();
    await page.waitForLoadState();
    return status;
  };

  it('a wrong password: the email stays, the focus is in the password, and the message links to a reset', async () => {
    const email = `linus-${Date.now()}@example.com`;
    expect((await callJson(`${base}/v2/signup`, 'POST', { body: { email, password } })).status).toBe(201);
    await step(page, 'wrong password', async () => {
      await page.goto(`${base}/account/login`);
      await page.getByLabel('Email').fill(email);
      await page.getByLabel('Password').fill('not the password');
      const answer = page.waitForResponse((r) => r.url() === `${base}/account/login`);
      await page.getByRole('button', { name: 'Sign in', exact: true }).click();
      expect((await answer).status()).toBe(401);
      const alert = page.getByRole('alert');
      await alert.getByText('Email or password is incorrect. Check both, or').waitFor();
      expect(await page.getByLabel('Email').inputValue()).toBe(email);
      expect(await focused()).toEqual({ id: 'password', invalid: false, describedByError: true });
      await shot('login-wrong-password');
      await alert.getByRole('link', { name: 'reset your password' }).click();
      await page.waitForURL(`${base}/account/forgot-password`);
    });
  });

  it('access tokens: over the limit is 409 and says to revoke one; a wrong field takes the focus; the input stays', async () => {
    await step(page, 'sign up', async () => {
      await page.goto(`${base}/account/signup`);
      await page.getByLabel('Email').fill(`ada-${Date.now()}@example.com`);
      await page.getByLabel('Password').fill(password);
      await page.getByRole('button', { name: 'Create account' }).click();
      await page.waitForURL(`${base}/account?welcome=1`);
    });

    await step(page, 'a validity out of range', async () => {
      expect(await createToken('deploy script', '999')).toBe(400);
      await page.getByRole('alert').getByText('Enter a validity of 1 to 366 days').waitFor();
      expect(await focused()).toEqual({ id: 'token-days', invalid: true, describedByError: true });
      expect(await page.locator('#token-name').inputValue()).toBe('deploy script');
      await shot('token-days-error');
    });

    await step(page, 'no name', async () => {
      // past the browser's own check of the required field (as a browser without it would send it)
      await page.locator('form[action="/account/tokens"]').evaluate((f) => f.setAttribute('novalidate', ''));
      expect(await createToken('', '30')).toBe(400);
      await page.getByRole('alert').getByText('Give the token a name').waitFor();
      expect(await focused()).toEqual({ id: 'token-name', invalid: true, describedByError: true });
    });

    await step(page, 'over the limit', async () => {
      expect(await createToken('first', '30')).toBe(201);
      await page.locator('#new-token').waitFor();
      expect(await createToken('second', '7')).toBe(409);
      const alert = page.getByRole('alert');
      await alert.getByText('Revoke one you no longer use, then create this one.').waitFor();
      expect(await alert.textContent()).toContain('You have 1 access token, the most an account can hold.');
      // what was typed stays, and the name field (the form's first) has the focus, tied to the message
      expect(await page.locator('#token-name').inputValue()).toBe('second');
      expect(await page.getByLabel('Valid for (days)').inputValue()).toBe('7');
      expect(await focused()).toEqual({ id: 'token-name', invalid: false, describedByError: true });
      await shot('token-over-limit');
    });

    await step(page, 'revoke, then create', async () => {
      await page.getByRole('button', { name: 'Revoke first' }).click();
      await page.getByText('The token is revoked.').waitFor();
      expect(await createToken('second', '7')).toBe(201);
    });
  });

  it('a used or broken password-reset link says so and offers a new one, before a password is chosen', async () => {
    const email = `grace-${Date.now()}@example.com`;
    await callJson(`${base}/v2/signup`, 'POST', { body: { email, password } });
    expect((await callJson(`${base}/v2/password/forgot`, 'POST', { body: { email } })).status).toBe(202);
    const link = new URL(await mail.linkFor(email, '/account/reset-password'));
    const token = link.searchParams.get('token')!;

    await step(page, 'a broken link', async () => {
      const answer = await page.goto(`${base}/account/reset-password?token=${token.slice(0, -4)}`);
      expect(answer?.status()).toBe(400);
      await page.getByRole('heading', { name: 'This link has expired' }).waitFor();
      expect(await page.getByLabel('New password').count()).toBe(0);
      await shot('reset-link-expired');
      await page.getByRole('link', { name: 'Ask for a new link' }).click();
      await page.waitForURL(`${base}/account/forgot-password`);
    });

    await step(page, 'a link used while its form was open', async () => {
      await page.goto(link.toString());
      // a too-short password first: the form says so and stays
      await page.getByLabel('New password').fill('short');
      await page.locator('form').evaluate((f) => f.setAttribute('novalidate', ''));
      await page.getByRole('button', { name: 'Set new password' }).click();
      await page.getByRole('alert').getByText('at least 10 characters').waitFor();
      const spent = await callJson(`${base}/v2/password/reset`, 'POST', {
        body: { token, password: 'another long password' },
      });
      expect(spent.status).toBe(204);
      await page.getByLabel('New password').fill(password);
      await page.getByRole('button', { name: 'Set new password' }).click();
      await page.getByRole('heading', { name: 'This link has expired' }).waitFor();
    });

    await step(page, 'the used link, opened again', async () => {
      await page.goto(link.toString());
      await page.getByRole('heading', { name: 'This link has expired' }).waitFor();
      expect(await page.getByLabel('New password').count()).toBe(0);
    });
  });

  it('an SSO sign-in refused for an account holding the address links to the password reset it asks for', async () => {
    // a password account with the address, not confirmed yet: the provider's sign-in may not take it over
    const signup = await callJson(`${base}/v2/signup`, 'POST', {
      body: { email: 'linus@acme.example', password },
    });
    expect(signup.status).toBe(201);
    const context = await browser.newContext({ viewport: { width: 390, height: 844 } });
    const phone = await context.newPage();
    phone.setDefaultTimeout(10_000);
    try {
      await step(phone, 'sso sign-in refused', async () => {
        await phone.goto(`${base}/account/login`);
        await phone.getByRole('link', { name: 'Sign in with Acme Corp' }).click();
        // the provider's development login, then its consent
        await phone.locator('input[name=login]').fill('linus');
        await phone.locator('input[name=password]').fill('anything');
        await phone.locator('button[type=submit]').click();
        const answer = phone.waitForResponse((r) => r.url().startsWith(`${base}/account/sso/acme/callback`));
        await phone.locator('button[type=submit]').click();
        expect((await answer).status()).toBe(403);
        await phone.getByRole('heading', { name: 'Sign-in failed' }).waitFor();
        await phone
          .getByText('its email is not confirmed: confirm it (or reset its password) first')
          .waitFor();
        await screenshot(phone, 'sso-link-refused');
        await phone.getByRole('link', { name: 'Reset your password' }).click();
        await phone.waitForURL(`${base}/account/forgot-password`);
      });
    } finally {
      await context.close();
    }
  });

  it('a sign-up with an address a single sign-on holds is 409, keeps what was typed, and links to both ways on', async () => {
    const context = await browser.newContext({ viewport: { width: 390, height: 844 } });
    const phone = await context.newPage();
    phone.setDefaultTimeout(10_000);
    try {
      await step(phone, 'first sign-in with the provider', async () => {
        await phone.goto(`${base}/account/sso/acme?next=/account`);
        await phone.locator('input[name=login]').fill('grace');
        await phone.locator('input[name=password]').fill('anything');
        await phone.locator('button[type=submit]').click();
        await phone.locator('button[type=submit]').click();
        await phone.waitForURL(`${base}/account`);
        await phone.getByRole('button', { name: 'Sign out', exact: true }).first().click();
        await phone.waitForURL(`${base}/account/login`);
      });
      await step(phone, 'sign-up refused', async () => {
        await phone.goto(`${base}/account/signup`);
        await phone.getByLabel('First name').fill('Grace');
        await phone.getByLabel('Email').fill('grace@acme.example');
        await phone.getByLabel('Password').fill(password);
        const answer = phone.waitForResponse((r) => r.url() === `${base}/account/signup`);
        await phone.getByRole('button', { name: 'Create account' }).click();
        expect((await answer).status()).toBe(409);
        const alert = phone.getByRole('alert');
        await alert.getByText('An account cannot be created with this email.').waitFor();
        expect(await phone.getByLabel('First name').inputValue()).toBe('Grace');
        expect(await phone.getByLabel('Email').inputValue()).toBe('grace@acme.example');
        expect(await phone.evaluate(() => document.activeElement?.id)).toBe('email');
        await screenshot(phone, 'signup-refused');
        expect(await alert.getByRole('link', { name: 'Sign in' }).getAttribute('href')).toBe(
          '/account/login',
        );
        await alert.getByRole('link', { name: 'reset your password' }).click();
        await phone.waitForURL(`${base}/account/forgot-password`);
      });
    } finally {
      await context.close();
    }
  });
});
