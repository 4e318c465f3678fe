import { waitFor } from '@platform/testkit';
import type { Browser, Page } from 'playwright-core';
import { startMailCatcher } from '../../services/auth/test/mail-catcher';
import { callJson, startTestPlatform, type TestPlatform } from '../harness';
import { chromiumAvailable, launchChromium, platformPage, screenshot, step } from './chromium';

/**
 * A person in Chromium, through the edge, leaves for good (decision 0099): the account page's "Delete my account"
 * first names the organization they must hand over, then what goes with the account and what they leave; a wrong
 * password is refused; the right one deletes it, signs them out, and the email signs up again.
 */
const run = chromiumAvailable() ? describe : describe.skip;

run('deleting an account in Chromium', () => {
  let p: TestPlatform;
  let mail: Awaited<ReturnType<typeof startMailCatcher>>;
  let browser: Browser;
  let page: Page;
  let base: string;
  const consoleErrors: string[] = [];
  const password = 'a long and happy password';

  beforeAll(async () => {
    mail = await startMailCatcher();
    p = await startTestPlatform({
      env: {
        SMTP_URL: mail.url,
        PASSWORD_SCRYPT_N: '1024',
        PASSWORD_SCRYPT_P: '1',
        PLATFORM_NAME: 'Acme AI Platform',
      },
    });
    base = p.baseUrl;
    browser = await launchChromium();
    page = await platformPage(browser, base, consoleErrors);
  });
  afterAll(async () => {
    await browser?.close();
    await p?.stop();
    await mail?.close();
  });

  const shot = (name: string) => screenshot(page, name);
  const api = (method: string, route: string, bearer: string, body?: unknown) =>
    callJson(`${base}${route}`, method, { bearer, body });

  it('blocked while the last owner of a team, then deleted with the password; the email signs up again', async () => {
    const email = `ada-${Date.now()}@example.com`;
    await step(page, 'sign up', async () => {
      await page.goto(`${base}/account/signup`);
      await page.getByLabel('Email').fill(email);
      await page.getByLabel('Password').fill(password);
      await page.getByRole('button', { name: 'Create account' }).click();
      await page.waitForURL(`${base}/account?welcome=1`);
    });
    // the mail saying the account was deleted goes to a confirmed address only (decision 0103)
    await fetch(await mail.linkFor(email, '/account/verify-email'));
    // the session the browser holds, and organizations made through the API with it
    const token = (await page.context().cookies()).find((c) => c.name === 'access-token')!.value;
    const me = (await api('GET', '/v2/me', token)).body as { id: string };
    const colleague = (await callJson(`${base}/v2/login/anonymous`, 'POST')).body as {
      userId: string;
      token: string;
    };
    const lab = `ada-lab-${Date.now()}`;
    const team = `ada-team-${Date.now()}`;
    const theirs = `their-org-${Date.now()}`;
    expect((await api('POST', '/v2/orgs', token, { slug: lab, name: 'Ada Lab' })).status).toBe(201);
    expect((await api('POST', '/v2/orgs', token, { slug: team, name: 'Ada Team' })).status).toBe(201);
    await api('POST', `/v2/orgs/${team}/members`, token, { userId: colleague.userId, role: 'member' });
    await api('POST', '/v2/orgs', colleague.token, { slug: theirs, name: 'Their Org' });
    await api('POST', `/v2/orgs/${theirs}/members`, colleague.token, { userId: me.id, role: 'member' });

    await step(page, 'the account page leads to deletion, which names what to hand over first', async () => {
      await page.goto(`${base}/account`);
      await page.getByRole('link', { name: 'Delete my account…' }).click();
      await page.waitForURL(`${base}/account/delete`);
      await page.getByText('Not yet: you are the last owner of what other people still use.').waitFor();
      await page
        .getByRole('listitem')
        .filter({ hasText: `Ada Team (${team}): 2 members` })
        .waitFor();
      expect(await page.getByRole('button', { name: 'Delete my account' }).count()).toBe(0);
      await shot('account-delete-blocked');
    });

    await api('POST', `/v2/orgs/${team}/members`, token, { userId: colleague.userId, role: 'owner' });

    await step(page, 'handed over: what goes and what stays, and a wrong password refused', async () => {
      await page.reload();
      await page.getByText(`This deletes the account ${email} for good.`).waitFor();
      await page
        .getByRole('listitem')
        .filter({ hasText: 'because you are their only member: Ada Lab' })
        .waitFor();
      await page
        .getByRole('listitem')
        .filter({
          hasText: `You leave Ada Team (${team}) and Their Org (${theirs}), which go on without you.`,
        })
        .waitFor();
      await page.getByLabel('Your password').fill('not my password');
      await page.getByRole('button', { name: 'Delete my account' }).click();
      await page.getByRole('alert').getByText('That password is not right.').waitFor();
      expect(await page.title()).toMatch(/^Error: Delete your account/);
      expect(
        await page.evaluate(
          () =>
            (globalThis as unknown as { document: { activeElement: { id: string } } }).document.activeElement
              .id,
        ),
      ).toBe('password');
      await shot('account-delete-error');
    });

    await step(page, 'the right password deletes it and signs the browser out', async () => {
      await page.getByLabel('Your password').fill(password);
      await page.getByRole('button', { name: 'Delete my account' }).click();
      await page.waitForURL(`${base}/account/deleted`);
      await page.getByRole('heading', { name: 'Your account is deleted' }).waitFor();
      await shot('account-deleted');
      expect((await page.context().cookies()).find((c) => c.name === 'access-token')).toBeUndefined();
      await page.goto(`${base}/account`);
      await page.waitForURL(/\/account\/login/);
    });
    expect((await api('GET', '/v2/me', token)).status).toBe(401);
    expect((await api('GET', `/v2/orgs/${team}`, colleague.token)).body).toMatchObject({ name: 'Ada Team' });
    expect((await api('GET', `/v2/orgs/${lab}`, colleague.token)).status).toBe(404);
    await waitFor(
      () => mail.mails.some((m) => m.to.includes(email) && m.raw.includes('Your account was deleted')),
      {
        what: 'the mail saying the account was deleted',
      },
    );

    await step(page, 'the same email makes a new account', async () => {
      await page.goto(`${base}/account/signup`);
      await page.getByLabel('Email').fill(email);
      await page.getByLabel('Password').fill(password);
      await page.getByRole('button', { name: 'Create account' }).click();
      await page.waitForURL(`${base}/account?welcome=1`);
    });
    // the refused password's answer is a 403 page, which Chromium reports as such; nothing else went wrong
    expect(consoleErrors.filter((e) => !/status of 403/.test(e))).toEqual([]);
  });
});
