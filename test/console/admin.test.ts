/**
 * The console in Chromium, as an admin: sign in, add a domain and copy a
 * record, upload a suppression CSV, watch a sandbox message sent through the
 * API appear in the log and open it (attempt and events), sign out.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestApp, type TestApp } from '../support/app';
import { createUser, launchBrowser, signIn, skipBrowser, type Browser } from './browser';

const ADMIN = { email: 'admin@example.com', role: 'admin' as const, account: 'default', password: 'a long admin password' };

describe('console: admin in Chromium', { skip: skipBrowser }, () => {
  let app: TestApp;
  let browser: Browser;
  before(async () => {
    app = await startTestApp();
    await createUser(app, ADMIN);
    browser = await launchBrowser();
    await browser.context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: app.http.url });
  });
  after(async () => {
    await browser?.close();
    await app?.stop();
  });

  it('signs in with the labelled form; a wrong password shows the error and no session', async () => {
    const { page } = browser;
    await page.goto(`${app.http.url}/`);
    await page.getByLabel('Email').fill(ADMIN.email);
    await page.getByLabel('Password').fill('not the password at all');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('alert').waitFor();
    assert.equal((await browser.context.cookies()).filter((c) => c.name === 'pigeon_session').length, 0);
    await signIn(page, app.http.url, ADMIN.email, ADMIN.password);
    assert.equal(await page.getByRole('link', { name: 'Operator' }).count(), 1, 'an admin sees the operator screen');
  });

  it('adds a domain and copies a DNS record value to the clipboard', async () => {
    const { page } = browser;
    await page.getByRole('link', { name: 'Domains' }).click();
    await page.getByLabel('Domain name').fill('mail.example.com');
    await page.getByRole('button', { name: 'Add domain' }).click();
    const dkim = page.getByRole('article', { name: 'dkim record' }).first();
    await dkim.waitFor();
    const domain = (await app.api.get('/v1/domains/mail.example.com')).body;
    const record = domain.dns_records.find((r: { purpose: string }) => r.purpose === 'dkim');
    await dkim.getByRole('button', { name: /^Copy value/ }).click();
    await dkim.getByRole('button', { name: /^Copied: v=DKIM1/ }).waitFor();
    assert.equal(await page.evaluate('navigator.clipboard.readText()'), record.value);
    assert.match(await page.getByLabel('Zone file lines', { exact: true }).textContent() ?? '', new RegExp(`^${record.host.replace(/\./g, '\\.')}\\. 3600 IN TXT "v=DKIM1;`, 'm'));
  });

  it('uploads a suppression CSV and lists the addresses', async () => {
    const { page } = browser;
    await page.getByRole('link', { name: 'Suppressions' }).click();
    const csv = 'email,reason\nann@example.org,\nbob@example.org,complaint\nnot-an-address,\n';
    await page.getByLabel('CSV file').setInputFiles({ name: 'list.csv', mimeType: 'text/csv', buffer: Buffer.from(csv) });
    await page.getByLabel('Reason for rows without one').fill('imported from old ESP');
    await page.getByRole('button', { name: 'Upload', exact: true }).click();
    await page.getByText(/Upload finished: 3 rows, 2 added/).waitFor();
    const table = page.getByRole('table', { name: 'Suppressed addresses' });
    await table.getByRole('cell', { name: 'bob@example.org' }).waitFor();
    assert.equal(await table.getByRole('cell', { name: 'imported from old ESP' }).count(), 1);
  });

  // The Sandbox switch sends X-Pigeon-Mode: test, so the session acts as a sandbox caller and sees sandbox mail.
  it('shows a sandbox message sent through the API as it arrives, and its attempt and events', async () => {
    const { page } = browser;
    await page.getByLabel('Mode').selectOption('test');
    await page.getByRole('link', { name: 'Messages' }).click();
    await page.getByText(/messages · refreshes/).waitFor();
    const sent = await app.api.post('/v1/messages/send', {
      from: 'app@example.com', to: ['ada@example.org'], subject: 'Your receipt',
      html: '<p>Hello <b>Ada</b></p><script>parent.document.title = "script ran"</script>', text: 'Hello Ada',
    });
    assert.equal(sent.status, 202);
    const link = page.getByRole('link', { name: 'ada@example.org' });
    await link.waitFor(); // the list refreshes by itself
    await link.click();
    await page.getByRole('heading', { name: 'Your receipt', level: 1 }).waitFor();
    const attempt = page.getByRole('article', { name: 'Attempt 1' });
    await attempt.waitFor();
    assert.match(await attempt.textContent() ?? '', /sandbox\.pigeon\.invalid/);
    const events = page.getByRole('list', { name: 'Events' });
    await events.getByText('delivered', { exact: true }).waitFor();
    assert.match(await events.textContent() ?? '', /queued.*sent.*delivered/s);
  });

  let setPasswordLink = '';
  it('creates a member on the operator screen and gets a one-time link', async () => {
    const { page } = browser;
    await page.getByLabel('Mode').selectOption('live');
    await page.getByRole('link', { name: 'Operator' }).click();
    await page.getByLabel('User email').fill('new.member@example.com');
    await page.getByLabel('Role').selectOption('member');
    await page.getByLabel('User account').fill('default');
    await page.getByRole('button', { name: 'Create user' }).click();
    setPasswordLink = (await page.getByText(/\/#\/set-password\//).textContent()) ?? '';
    assert.match(setPasswordLink, /\/#\/set-password\/[A-Za-z0-9_-]+$/);
    await page.getByRole('table', { name: 'Users' }).getByRole('cell', { name: 'new.member@example.com' }).waitFor();
  });

  it('signs out: the form comes back and the old cookie is refused', async () => {
    const { page } = browser;
    const cookie = (await browser.context.cookies()).find((c) => c.name === 'pigeon_session');
    assert.ok(cookie, 'signed in with a session cookie');
    assert.equal(cookie.httpOnly, true);
    assert.equal(cookie.sameSite, 'Strict');
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByRole('button', { name: 'Sign in' }).waitFor();
    const res = await fetch(`${app.http.url}/v1/session`, { headers: { cookie: `pigeon_session=${cookie.value}` } });
    assert.equal(res.status, 401);
  });

  it('the one-time link sets a password the new member then signs in with', async () => {
    const { page } = browser;
    await page.goto(app.http.url + setPasswordLink.slice(setPasswordLink.indexOf('/#/')));
    await page.getByLabel('New password').fill('a brand new long password');
    await page.getByLabel('Repeat the password').fill('a brand new long password');
    await page.getByRole('button', { name: 'Set password' }).click();
    await page.getByRole('link', { name: 'Sign in' }).click();
    await signIn(page, app.http.url, 'new.member@example.com', 'a brand new long password');
    assert.equal(await page.getByRole('link', { name: 'Operator' }).count(), 0, 'a member has no operator screen');
  });
});
