import { test } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import MailComposer from 'nodemailer/lib/mail-composer';
import { FakeClock } from '../../src/clock';
import { instrumentMessage } from '../../src/tracking/instrument';
import { signToken, trackingKey } from '../../src/tracking/tokens';
import { MAX_EVENTS_PER_TYPE } from '../../src/tracking/record';
import type { Mode } from '../../src/auth/scopes';
import { startTestApp, TestApp } from '../support/app';
import { parseMail } from '../support/mail';
import { defaultAccountId, insertMessage, SeededMessage } from '../analytics/fixtures';

const NOW = Date.UTC(2026, 4, 4, 10, 0, 0);

async function trackedMessage(app: TestApp, html: string, mode: Mode = 'test'): Promise<{ message: SeededMessage; html: string; raw: Buffer }> {
  const message = await insertMessage(app.db, {
    accountId: await defaultAccountId(app.db), createdAt: NOW, toEmail: 'jane.doe@example.org', tags: ['welcome'], mode,
  });
  const raw = await new MailComposer({ from: 'app@sender.example', to: message.toEmail, subject: 'Hi', text: 'hi', html }).compile().build();
  const instrumented = await instrumentMessage(raw, {
    messageId: message.id, accountId: message.accountId, trackOpens: true, trackClicks: true, listUnsubscribe: true,
    recipient: message.toEmail, publicUrl: app.http.url, key: trackingKey(app.dataDir),
  });
  return { message, html: (await parseMail(instrumented)).html as string, raw: instrumented };
}

const get = (url: string, headers: Record<string, string> = {}) => fetch(url, { redirect: 'manual', headers });
const events = (app: TestApp, type: string) => app.db('events').where({ type }).orderBy('id');

async function withApp(fn: (app: TestApp, clock: FakeClock) => Promise<void>): Promise<void> {
  const clock = new FakeClock(NOW);
  const app = await startTestApp({}, { clock });
  try {
    await fn(app, clock);
  } finally {
    await app.stop();
  }
}

test('fetching the pixel and a tracked link over HTTP records opens and clicks and redirects to the original URL', () =>
  withApp(async (app, clock) => {
    const { message, html } = await trackedMessage(app, '<p>Hello</p><a href="https://shop.example/offer?id=7&amp;ref=mail">Offer</a></body>');
    const pixel = /<img src="([^"]+)"/.exec(html)?.[1] as string;
    const link = /<a href="([^"]+)"/.exec(html)?.[1] as string;
    assert.ok(pixel.startsWith(`${app.http.url}/t/o/`) && link.startsWith(`${app.http.url}/t/c/`));

    const open = await get(pixel, { 'user-agent': 'Thunderbird/128' });
    assert.equal(open.status, 200);
    assert.equal(open.headers.get('content-type'), 'image/gif');
    assert.match(open.headers.get('cache-control') ?? '', /no-store/);
    assert.equal(Buffer.from(await open.arrayBuffer()).subarray(0, 6).toString(), 'GIF89a');
    clock.advance(60_000);
    await get(pixel, { 'user-agent': 'Mozilla/5.0' }); // the privacy proxy's bare user agent

    const click = await get(link, { 'user-agent': 'Thunderbird/128' });
    assert.equal(click.status, 302);
    assert.equal(click.headers.get('location'), 'https://shop.example/offer?id=7&ref=mail');
    await get(link);

    const opens = (await events(app, 'message.opened')).map((e) => JSON.parse(e.data));
    assert.deepEqual(opens.map((d) => [d.message_id, d.unique, d.prefetched, d.user_agent]), [
      [message.id, true, false, 'Thunderbird/128'],
      [message.id, false, true, 'Mozilla/5.0'],
    ]);
    assert.deepEqual(opens[0].tags, ['welcome']);
    assert.equal(opens[0].sandbox, true);
    const clicks = (await events(app, 'message.clicked')).map((e) => JSON.parse(e.data));
    assert.deepEqual(clicks.map((d) => [d.url, d.unique]), [['https://shop.example/offer?id=7&ref=mail', true], ['https://shop.example/offer?id=7&ref=mail', false]]);

    const stats = await app.api.get('/v1/analytics/stats?from=2026-05-04&to=2026-05-04');
    assert.deepEqual(
      [stats.body.metrics.opened_total, stats.body.metrics.opened_unique, stats.body.metrics.clicked_total, stats.body.metrics.clicked_unique],
      [2, 1, 2, 1],
    );
  }));

test('forged, altered or misused tokens get 404, record nothing and never redirect', () =>
  withApp(async (app) => {
    const { html } = await trackedMessage(app, '<a href="https://shop.example/">Shop</a></body>');
    const link = /<a href="([^"]+)"/.exec(html)?.[1] as string;
    const pixel = /<img src="([^"]+)"/.exec(html)?.[1] as string;
    const token = link.slice(link.lastIndexOf('/') + 1);
    const payload = Buffer.from(token, 'base64url');
    const swapped = Buffer.concat([payload.subarray(0, payload.indexOf('https://')), Buffer.from('https://evil.example/'), payload.subarray(-12)]);
    const messageId = (await app.db('messages').first('id')).id as string;
    const candidates = [
      `${app.http.url}/t/c/${token.slice(0, -2)}${token.endsWith('AA') ? 'BB' : 'AA'}`, // altered MAC
      `${app.http.url}/t/c/${swapped.toString('base64url')}`, // another destination under the old MAC
      `${app.http.url}/t/c/${signToken(crypto.randomBytes(32), { kind: 'click', messageId, url: 'https://evil.example/' })}`, // wrong key
      `${app.http.url}/t/c/${pixel.slice(pixel.lastIndexOf('/') + 1)}`, // an open token used as a click token
      `${app.http.url}/t/o/${token}`, // a click token used as a pixel
      `${app.http.url}/t/c/not-a-token`,
      `${app.http.url}/u/${token}`,
    ];
    for (const url of candidates) {
      const res = await get(url);
      assert.equal(res.status, 404, url);
      assert.equal(res.headers.get('location'), null);
      assert.equal(((await res.json()) as { error: { code: string } }).error.code, 'not_found');
    }
    assert.equal((await events(app, 'message.opened')).length + (await events(app, 'message.clicked')).length, 0);
  }));

test('a signed link whose message is gone still redirects, and records nothing', () =>
  withApp(async (app) => {
    const token = signToken(trackingKey(app.dataDir), { kind: 'click', messageId: 'msg_gone', linkIndex: 0, url: 'https://shop.example/x' });
    const res = await get(`${app.http.url}/t/c/${token}`);
    assert.equal(res.status, 302);
    assert.equal(res.headers.get('location'), 'https://shop.example/x');
    assert.equal((await events(app, 'message.clicked')).length, 0);
  }));

test('one-click unsubscribe: GET shows a confirmation form, POST adds a live message\'s recipient to the suppression list', () =>
  withApp(async (app) => {
    const { message, raw } = await trackedMessage(app, '<p>news</p>', 'live');
    const url = /List-Unsubscribe:\s+<([^>]+)>/.exec(raw.toString())?.[1] as string;
    assert.ok(url.startsWith(`${app.http.url}/u/`));

    const page = await get(url);
    assert.equal(page.status, 200);
    assert.match(page.headers.get('content-type') ?? '', /text\/html/);
    assert.equal(page.headers.get('x-frame-options'), 'DENY');
    const body = await page.text();
    assert.match(body, /<form method="post">/);
    assert.match(body, /j\*\*\*@example\.org/);
    assert.doesNotMatch(body, /jane\.doe/, 'the full address is not shown');
    assert.equal((await app.api.get('/v1/suppressions/jane.doe@example.org')).status, 404, 'a GET changes nothing');

    for (let i = 0; i < 2; i++) {
      const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: 'List-Unsubscribe=One-Click' });
      assert.equal(res.status, 200);
    }
    const suppression = await app.api.get('/v1/suppressions/jane.doe@example.org');
    assert.equal(suppression.status, 200);
    assert.equal(suppression.body.reason, 'unsubscribe');
    assert.equal(suppression.body.source_message_id, message.id);
  }));

test('a POST to a sandbox message\'s unsubscribe link answers like a live one but leaves the account\'s suppression list alone', () =>
  withApp(async (app) => {
    const { raw } = await trackedMessage(app, '<p>news</p>', 'test');
    const url = /List-Unsubscribe:\s+<([^>]+)>/.exec(raw.toString())?.[1] as string;
    const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: 'List-Unsubscribe=One-Click' });
    assert.equal(res.status, 200);
    assert.match(await res.text(), /j\*\*\*@example\.org/);
    assert.equal((await app.api.get('/v1/suppressions/jane.doe@example.org')).status, 404, 'not suppressed for live mail');
    assert.equal(Number((await app.db('suppressions').count({ n: '*' }).first())?.n), 0);
  }));

test(`a replayed pixel is recorded at most ${MAX_EVENTS_PER_TYPE} times per message`, () =>
  withApp(async (app) => {
    const { html } = await trackedMessage(app, '<p>x</p>');
    const pixel = /<img src="([^"]+)"/.exec(html)?.[1] as string;
    for (let i = 0; i < MAX_EVENTS_PER_TYPE + 5; i++) assert.equal((await get(pixel)).status, 200);
    assert.equal((await events(app, 'message.opened')).length, MAX_EVENTS_PER_TYPE);
  }));
