/**
 * What a member sees in the console (Chromium): their own account only, no
 * operator screen; and the session's defences as the browser meets them: a
 * cookie planted before sign-in is replaced, a change without the CSRF token
 * is refused.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestApp, type TestApp } from '../support/app';
import { createAccount } from '../../src/auth/accounts';
import { createUser, launchBrowser, skipBrowser, type Browser } from './browser';

const MEMBER = { email: 'dev@example.com', role: 'member' as const, account: 'default', password: 'a long member password' };
const PLANTED = 'A'.repeat(43);

describe('console: a member in Chromium', { skip: skipBrowser }, () => {
  let app: TestApp;
  let browser: Browser;
  before(async () => {
    app = await startTestApp();
    await createAccount(app.db, 'other', app.deps.clock.now());
    await createUser(app, MEMBER);
    browser = await launchBrowser({ width: 390, height: 844 });
  });
  after(async () => {
    await browser?.close();
    await app?.stop();
  });

  it('signs in with the keyboard alone, focus visible; a session id planted before is not the session after', async () => {
    await browser.context.addCookies([{ name: 'pigeon_session', value: PLANTED, url: app.http.url }]);
    const { page } = browser;
    await page.goto(`${app.http.url}/`);
    await page.getByLabel('Email').waitFor();
    await page.keyboard.press('Tab');
    const focused = await page.evaluate(`(() => {
      const el = document.activeElement;
      return { label: el.labels && el.labels[0] ? el.labels[0].textContent : '', outline: getComputedStyle(el).outlineStyle };
    })()`);
    assert.deepEqual(focused, { label: 'Email', outline: 'solid' }, 'the first Tab reaches Email, with a visible focus ring');
    await page.keyboard.type(MEMBER.email);
    await page.keyboard.press('Tab');
    await page.keyboard.type(MEMBER.password);
    await page.keyboard.press('Enter');
    await page.getByRole('button', { name: 'Sign out' }).waitFor();
    const cookie = (await browser.context.cookies()).find((c) => c.name === 'pigeon_session');
    assert.ok(cookie && cookie.value !== PLANTED, 'a new session id');
    const res = await fetch(`${app.http.url}/v1/session`, { headers: { cookie: `pigeon_session=${PLANTED}` } });
    assert.equal(res.status, 401);
  });

  it('sees neither the operator screen nor an account switcher, and cannot act for another account', async () => {
    const { page } = browser;
    await page.getByRole('button', { name: 'Menu' }).click(); // phone width: the navigation is behind the menu button
    const nav = page.getByRole('navigation', { name: 'Main' });
    await nav.getByRole('link', { name: 'Messages' }).waitFor();
    assert.equal(await nav.getByRole('link', { name: 'Operator' }).count(), 0);
    assert.equal(await page.getByLabel('Account').count(), 0);
    await page.goto(`${app.http.url}/#/operator`);
    await page.getByRole('heading', { name: 'Not found' }).waitFor();
    const answers = await page.evaluate(`(async () => {
      const other = await fetch('/v1/account', { headers: { 'x-pigeon-account': 'other' } });
      const operator = await fetch('/v1/operator/users');
      return [other.status, operator.status];
    })()`);
    assert.deepEqual(answers, [403, 403]);
  });

  it('a change without the CSRF token is refused, with the right one it goes through', async () => {
    const { page } = browser;
    const result = (await page.evaluate(`(async () => {
      const body = JSON.stringify({ name: 'forged.example.com' });
      const headers = { 'content-type': 'application/json' };
      const forged = await fetch('/v1/domains', { method: 'POST', headers, body });
      const wrong = await fetch('/v1/domains', { method: 'POST', headers: { ...headers, 'x-csrf-token': 'not-the-token' }, body });
      const token = (await (await fetch('/v1/session')).json()).csrf_token;
      const real = await fetch('/v1/domains', { method: 'POST', headers: { ...headers, 'x-csrf-token': token }, body });
      return [forged.status, (await forged.json()).error.code, wrong.status, real.status];
    })()`)) as [number, string, number, number];
    assert.deepEqual(result, [403, 'csrf_failed', 403, 201]);
  });
});
