import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { runCli } from '@platform/operator-cli';
import * as oidc from 'openid-client';
import * as OTPAuth from 'otpauth';
import type { Browser, Page } from 'playwright-core';
import { startMailCatcher } from '../../services/auth/test/mail-catcher';
import { callJson, startPlatformWithMail, type TestPlatform } from '../harness';
import { chromiumAvailable, launchChromium, platformPage, screenshot, step } from './chromium';

/**
 * A person in Chromium, through the edge: sign up, confirm the email from the mail, sign in, turn on
 * TOTP, sign out, then sign in to a client app with a TOTP code and consent to the API; the app's tokens
 * answer GET /v2/me with the email.
 */
const run = chromiumAvailable() ? describe : describe.skip;

run('sign-in pages in Chromium', () => {
  let p: TestPlatform;
  let mail: Awaited<ReturnType<typeof startMailCatcher>>;
  let browser: Browser;
  let page: Page;
  const consoleErrors: string[] = [];
  let base: string;
  let app: Server;
  let callbackUrl: string;
  const callbacks: string[] = [];

  beforeAll(async () => {
    app = createServer((req, res) => {
      callbacks.push(req.url ?? '');
      res.setHeader('content-type', 'text/html');
      res.end('<!doctype html><title>Notes</title><h1>Signed in to Notes</h1>');
    });
    app.listen(0, '127.0.0.1');
    await once(app, 'listening');
    callbackUrl = `http://127.0.0.1:${(app.address() as AddressInfo).port}/callback`;
    let cliEnv: Record<string, string>;
    ({ p, mail, base, cliEnv } = await startPlatformWithMail({
      secret: 'browser-test-internal-secret-0123456789abcdef',
      env: { PLATFORM_NAME: 'Acme AI Platform' },
    }));
    const io = { out: () => undefined, err: (l: string) => console.error(l) };
    const add = ['oidc-client', 'add', 'notes-app', '--redirect-uri', callbackUrl, '--name', 'Notes'];
    expect(await runCli(add, cliEnv, io)).toBe(0);
    browser = await launchChromium();
    // what the platform's own pages log as errors (a missing favicon was one, on every page)
    page = await platformPage(browser, base, consoleErrors);
  });
  afterAll(async () => {
    await browser?.close();
    await p?.stop();
    await mail?.close();
    app?.close();
  });

  const shot = (name: string) => screenshot(page, name);

  it('sign up → confirm by mail → sign in → TOTP → sign out → sign in to an app with TOTP and consent', async () => {
    const email = `ada-${Date.now()}@example.com`;
    const password = 'a long and happy password';

    await step(page, 'sign-up', async () => {
      await page.goto(`${base}/account/signup`);
      await shot('1-signup');
      await page.getByLabel('First name').fill('Ada');
      await page.getByLabel('Last name').fill('Lovelace');
      await page.getByLabel('Email').fill(email);
      await page.getByLabel('Password').fill(password);
      await page.getByRole('button', { name: 'Create account' }).click();
      await page.waitForURL(`${base}/account?welcome=1`);
      await page.getByText('Welcome! Your account is ready.').waitFor();
      await shot('2-account');
    });

    await step(page, 'confirm-email', async () => {
      const link = await mail.linkFor(email, '/account/verify-email');
      await page.goto(link);
      await page.getByRole('heading', { name: 'Email confirmed' }).waitFor();
    });

    await step(page, 'sign-out-and-in', async () => {
      await page.goto(`${base}/account`);
      await page.getByText('email confirmed').waitFor();
      await page.getByRole('button', { name: 'Sign out', exact: true }).first().click();
      await page.waitForURL(`${base}/account/login`);
      await shot('3-login');
      await page.getByLabel('Email').fill(email);
      await page.getByLabel('Password').fill(password);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.waitForURL(`${base}/account`);
    });

    let totp: OTPAuth.TOTP;
    await step(page, 'enrol-totp', async () => {
      await page.getByRole('link', { name: 'Set up two-step verification' }).click();
      await page.waitForURL(`${base}/account/mfa`);
      await shot('4-mfa-setup');
      const secret = (await page.locator('#totp-secret').textContent())!.trim();
      totp = new OTPAuth.TOTP({ secret: OTPAuth.Secret.fromBase32(secret), digits: 6, period: 30 });
      await page.getByLabel('Code from the app').fill(totp.generate());
      await page.getByRole('button', { name: 'Turn on' }).click();
      await page.getByRole('heading', { name: 'Two-step verification is on' }).waitFor();
      expect(await page.locator('#recovery-codes li').count()).toBe(10);
      await shot('5-recovery-codes');
    });

    await step(page, 'sign-out', async () => {
      await page.goto(`${base}/account`);
      await page.getByRole('button', { name: 'Sign out', exact: true }).first().click();
      await page.waitForURL(`${base}/account/login`);
    });

    const config = await oidc.discovery(new URL(`${base}/oidc`), 'notes-app', undefined, oidc.None(), {
      execute: [oidc.allowInsecureRequests],
    });
    const verifier = oidc.randomPKCECodeVerifier();
    const state = oidc.randomState();
    const authorizationUrl = oidc.buildAuthorizationUrl(config, {
      redirect_uri: callbackUrl,
      // `api`: without it the app's token reads userinfo only (decision 0109)
      scope: 'openid email profile offline_access api',
      code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
      state,
      prompt: 'consent',
    });

    await step(page, 'app-sign-in-with-totp', async () => {
      await page.goto(authorizationUrl.toString());
      await page.getByText('to continue to Notes').waitFor();
      await shot('6-app-login');
      await page.getByLabel('Email').fill(email);
      await page.getByLabel('Password').fill(password);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.waitForURL(/\/account\/login\/mfa/);
      await shot('7-mfa-code');
      // The enrolment used this time step; the next one is within the accepted drift and not a replay.
      await page.getByLabel('Code').fill(totp.generate({ timestamp: Date.now() + 30_000 }));
      await page.getByRole('button', { name: 'Verify' }).click();
      await page.getByRole('heading', { name: 'Allow access?' }).waitFor();
      await shot('8-consent');
    });

    await step(page, 'consent', async () => {
      await page.getByRole('button', { name: 'Allow' }).click();
      await page.waitForURL(/\/callback\?/);
    });

    const callback = new URL(callbacks.filter((u) => u.startsWith('/callback')).at(-1)!, callbackUrl);
    expect(callback.searchParams.get('code')).toBeTruthy();
    const tokens = await oidc.authorizationCodeGrant(config, callback, {
      pkceCodeVerifier: verifier,
      expectedState: state,
    });
    const me = await callJson(`${base}/v2/me`, 'GET', { bearer: tokens.access_token });
    expect(me.status).toBe(200);
    expect(me.body).toMatchObject({ email, anonymous: false });
    expect(consoleErrors).toEqual([]);
  });
});
