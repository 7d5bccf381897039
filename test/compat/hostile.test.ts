// Hostile and malformed input on the compatibility layers: answered in the provider's shape, bounded, nothing stored;
// a sandbox key sends in test mode; another account's send is not found.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { startTestApp, type TestApp } from '../support/app';
import { counts, otherAccount, pauseDelivery } from '../messages/helpers';
import { substitute } from '../../src/compat/sendgrid/translate';
import { makeUser, signedIn } from '../support/console';

let app: TestApp;
before(async () => {
  app = await startTestApp({ limits: { maxMessageBytes: 64 * 1024 } });
  await pauseDelivery(app);
});
after(() => app.stop());

async function call(path: string, body: string | undefined, headers: Record<string, string>, method = 'POST') {
  const res = await fetch(app.http.url + path, { method, body, headers });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined, text };
}
const pm = (body: string, extra: Record<string, string> = {}) => call('/postmark/email', body, { 'x-postmark-server-token': app.key, 'content-type': 'application/json', ...extra });
const rs = (path: string, body?: string, method = 'POST') => call(`/resend${path}`, body, { authorization: `Bearer ${app.key}`, 'content-type': 'application/json' }, method);
const sg = (body: string) => call('/sendgrid/v3/mail/send', body, { authorization: `Bearer ${app.key}`, 'content-type': 'application/json' });

describe('compatibility layers under hostile input', () => {
  it('malformed JSON, a wrong content type, a missing key and an oversized body get the provider\'s shape and store nothing', async () => {
    const stored = await counts(app);
    const broken = await pm('{"From": ');
    assert.deepEqual([broken.status, broken.body.ErrorCode], [422, 402]);
    const notJson = await call('/postmark/email', 'From=x', { 'x-postmark-server-token': app.key, 'content-type': 'application/x-www-form-urlencoded' });
    assert.deepEqual([notJson.status, notJson.body.ErrorCode], [422, 409]);
    const noKey = await call('/postmark/email', '{}', { 'content-type': 'application/json' });
    assert.deepEqual([noKey.status, noKey.body.ErrorCode], [401, 10]);
    const huge = await sg(JSON.stringify({ personalizations: [{ to: [{ email: 'a@example.org' }] }], from: { email: 'a@example.com' }, subject: 's', content: [{ type: 'text/plain', value: 'x'.repeat(400 * 1024) }] }));
    assert.equal(huge.status, 413);
    assert.ok(Array.isArray(huge.body.errors));
    const resendBroken = await rs('/emails', '[1,');
    assert.equal(resendBroken.body.name, 'validation_error');
    for (const r of [broken, notJson, noKey, huge, resendBroken]) assert.ok(!/at \w+ \(|node_modules|\.ts:/.test(r.text), 'no stack trace leaks');
    assert.deepEqual(await counts(app), stored);
  });

  it('batch bounds: Postmark 500 (ErrorCode 410), Resend 100; unknown fields are refused, not dropped', async () => {
    const one = { From: 'a@example.com', To: 'b@example.org', Subject: 's', TextBody: 't' };
    const tooMany = await call('/postmark/email/batch', JSON.stringify(Array.from({ length: 501 }, () => one)), { 'x-postmark-server-token': app.key, 'content-type': 'application/json' });
    assert.deepEqual([tooMany.status, tooMany.body.ErrorCode], [422, 410]);
    const resendMany = await rs('/emails/batch', JSON.stringify(Array.from({ length: 101 }, () => ({ from: 'a@example.com', to: 'b@example.org', subject: 's', text: 't' }))));
    assert.equal(resendMany.status, 422);
    const stream = await pm(JSON.stringify({ ...one, MessageStream: 'broadcasts' }));
    assert.deepEqual([stream.status, stream.body.ErrorCode], [422, 1235], 'MessageStream names an IP pool');
    const longList = await pm(JSON.stringify({ ...one, To: 'a@example.org,'.repeat(6000) }));
    assert.equal(longList.body.ErrorCode, 300);
    const manySubs = await sg(JSON.stringify({
      from: { email: 'a@example.com' }, subject: 's', content: [{ type: 'text/plain', value: 'x'.repeat(50 * 1024) }],
      personalizations: Array.from({ length: 8 }, (_, i) => ({ to: [{ email: `p${i}@example.org` }], substitutions: { x: 'y' } })),
    }));
    assert.equal(manySubs.status, 413, 'substituted copies are bounded in total');
    const unknown = await pm(JSON.stringify({ ...one, LinkTracking: 'x' }));
    assert.equal(unknown.body.ErrorCode, 300);
    assert.match(unknown.body.Message, /LinkTracking/);
  });

  it('a sandbox key sends in test mode through every layer', async () => {
    const postmark = await pm(JSON.stringify({ From: 'a@example.com', To: 'pm@example.org', Subject: 's', TextBody: 't' }));
    const resend = await rs('/emails', JSON.stringify({ from: 'a@example.com', to: 'rs@example.org', subject: 's', text: 't' }));
    const sendgrid = await sg(JSON.stringify({ personalizations: [{ to: [{ email: 'sg@example.org' }] }], from: { email: 'a@example.com' }, subject: 's', content: [{ type: 'text/plain', value: 't' }] }));
    assert.deepEqual([postmark.status, resend.status, sendgrid.status], [200, 200, 202]);
    const rows = await app.db('messages').whereIn('to_email', ['pm@example.org', 'rs@example.org', 'sg@example.org']).select('mode');
    assert.deepEqual(rows.map((r: { mode: string }) => r.mode), ['test', 'test', 'test']);

    const other = await otherAccount(app);
    const foreign = await call(`/resend/emails/${resend.body.id}`, undefined, { authorization: `Bearer ${other.key}` }, 'GET');
    assert.equal(foreign.status, 404);
    assert.equal(foreign.body.name, 'not_found');
    const cancel = await call(`/resend/emails/${resend.body.id}/cancel`, undefined, { authorization: `Bearer ${other.key}` });
    assert.equal(cancel.status, 404);
  });

  it('SendGrid substitutions are literal and bounded: a short key with a long value cannot grow the text past the limit', () => {
    assert.equal(substitute('Hi -n-, -n-!', { '-n-': 'Ann' }, 100, 'p'), 'Hi Ann, Ann!');
    assert.equal(substitute('{{x}} stays', { '': 'never' }, 100, 'p'), '{{x}} stays');
    assert.throws(() => substitute('a'.repeat(1000), { a: 'b'.repeat(1000) }, 10_000, 'p'), /longer than 10000/);
  });

  it('a console session cookie (with its CSRF token) is no key on the SendGrid and Resend layers, which read the same Bearer header as /v1', async () => {
    await makeUser(app, 'compat-admin@example.com', 'admin');
    const session = await signedIn(app, 'compat-admin@example.com');
    const headers = { cookie: session.cookie, 'x-csrf-token': session.csrf, 'content-type': 'application/json' };
    const stored = await counts(app);
    const viaSendgrid = await call('/sendgrid/v3/mail/send', JSON.stringify({ personalizations: [{ to: [{ email: 'a@example.org' }] }], from: { email: 'app@example.com' }, subject: 's', content: [{ type: 'text/plain', value: 'x' }] }), headers);
    assert.equal(viaSendgrid.status, 401, viaSendgrid.text);
    const viaResend = await call('/resend/emails', JSON.stringify({ from: 'app@example.com', to: 'a@example.org', subject: 's', text: 'x' }), headers);
    assert.equal(viaResend.status, 401, viaResend.text);
    assert.deepEqual(await counts(app), stored);
  });
});
