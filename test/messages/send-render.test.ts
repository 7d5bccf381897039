import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { simpleParser } from 'mailparser';
import { FakeClock } from '../../src/clock';
import { createKey, startTestApp, TestApp } from '../support/app';
import { simpleSend, pauseDelivery } from './helpers';

const clock = new FakeClock(Date.UTC(2026, 0, 5, 9, 30, 0));
let app: TestApp;
before(async () => {
  app = await startTestApp({ hostname: 'mx.pigeon.test' }, { clock });
  await pauseDelivery(app); // these tests read what the accept path wrote, before any delivery
});
after(() => app.stop());

type AddressList = { value: Array<{ address: string; name: string }> };

async function rawOf(messageId: string): Promise<Buffer> {
  const row = await app.db('messages').where({ id: messageId }).first('content_id');
  return (await app.db('message_contents').where({ id: row.content_id }).first()).raw as Buffer;
}

async function sendOk(body: Record<string, unknown>) {
  const res = await app.api.post('/v1/messages/send', body);
  assert.equal(res.status, 202, res.text);
  return res.body.data as Array<{ id: string; to: string; status: string }>;
}

test('substitutions render one copy per recipient, html escaped, text and subject not', async () => {
  const data = await sendOk({
    from: 'Shop <shop@example.com>',
    to: [
      { email: 'ann@example.org', name: 'Ann', substitutions: { name: 'Ann & <Co>', code: 'A1' } },
      { email: 'bob@example.org', substitutions: { code: 'B2' } },
    ],
    subject: 'Hi {{name}} — {{code}}',
    html: '<p>Hello {{name}}, code {{code}}</p>{{#each items}}<li>{{this}}</li>{{/each}}',
    text: 'Hello {{name}}, code {{code}}',
    template_data: { name: 'friend', items: ['<b>x</b>'] },
  });
  assert.deepEqual(data.map((d) => d.to), ['ann@example.org', 'bob@example.org']);
  const [ann, bob] = [await simpleParser(await rawOf(data[0].id)), await simpleParser(await rawOf(data[1].id))];
  assert.equal(ann.subject, 'Hi Ann & <Co> — A1');
  assert.equal(ann.text?.trim(), 'Hello Ann & <Co>, code A1');
  assert.match(ann.html as string, /<p>Hello Ann &amp; &lt;Co&gt;, code A1<\/p><li>&lt;b&gt;x&lt;\/b&gt;<\/li>/);
  assert.deepEqual((ann.to as { value: Array<{ address: string }> }).value.map((v) => v.address), ['ann@example.org']);
  assert.equal(bob.subject, 'Hi friend — B2', 'template_data fills what substitutions leave out');
  assert.deepEqual((bob.to as { value: Array<{ address: string }> }).value.map((v) => v.address), ['bob@example.org']);
  const contents = await app.db('messages').whereIn('id', data.map((d) => d.id)).distinct('content_id');
  assert.equal(contents.length, 2, 'each substituted copy has its own content');
});

test('without substitutions to, cc and bcc copies share one MIME that lists to and cc and hides bcc', async () => {
  const data = await sendOk(simpleSend({
    to: ['a@example.org', { email: 'b@example.org', name: 'Bee' }],
    cc: ['c@example.net'],
    bcc: ['hidden@example.net'],
  }));
  assert.equal(data.length, 4);
  const rows = await app.db('messages').whereIn('id', data.map((d) => d.id)).orderBy('id');
  assert.equal(new Set(rows.map((r) => r.content_id)).size, 1);
  assert.deepEqual(rows.map((r) => r.rcpt_type), ['to', 'to', 'cc', 'bcc']);
  const raw = await rawOf(data[0].id);
  assert.doesNotMatch(raw.toString(), /hidden@example\.net/);
  const mail = await simpleParser(raw);
  assert.deepEqual((mail.to as AddressList).value, [{ address: 'a@example.org', name: '' }, { address: 'b@example.org', name: 'Bee' }]);
  assert.deepEqual((mail.cc as AddressList).value, [{ address: 'c@example.net', name: '' }]);
  assert.equal(mail.bcc, undefined);
});

test('html, text, an attachment and an inline image parse back as mixed > alternative > related', async () => {
  const png = Buffer.from('89504e470d0a1a0a0000000d4948445200000001', 'hex');
  const [msg] = await sendOk(simpleSend({
    subject: 'Grüße aus Köln',
    html: '<p>See <img src="cid:logo@pigeon"></p>',
    text: 'See the logo',
    attachments: [
      { filename: 'report.pdf', content: Buffer.from('%PDF-1.4 test').toString('base64'), content_type: 'application/pdf' },
      { filename: 'logo.png', content: png.toString('base64'), content_type: 'image/png', content_id: 'logo@pigeon' },
    ],
    headers: { 'X-Campaign': 'winter', 'List-Id': '<news.example.com>' },
    reply_to: 'Support <support@example.com>',
  }));
  const raw = await rawOf(msg.id);
  const mail = await simpleParser(raw);
  assert.match(String(mail.headers.get('content-type') && (mail.headers.get('content-type') as { value: string }).value), /^multipart\/mixed$/);
  const types = [...raw.toString().matchAll(/^Content-Type: ([\w/-]+)/gm)].map((m) => m[1]);
  assert.deepEqual(types, ['multipart/mixed', 'multipart/alternative', 'text/plain', 'multipart/related', 'text/html', 'image/png', 'application/pdf']);
  assert.equal(mail.subject, 'Grüße aus Köln');
  assert.equal(mail.text?.trim(), 'See the logo');
  assert.equal(mail.headers.get('mime-version'), '1.0');
  assert.equal(mail.headers.get('x-campaign'), 'winter');
  assert.deepEqual((mail.replyTo as AddressList).value, [{ address: 'support@example.com', name: 'Support' }]);
  const pdf = mail.attachments.find((a) => a.filename === 'report.pdf');
  const logo = mail.attachments.find((a) => a.filename === 'logo.png');
  assert.equal(pdf?.contentDisposition, 'attachment');
  assert.equal(pdf?.content.toString(), '%PDF-1.4 test');
  assert.equal(logo?.contentDisposition, 'inline');
  assert.equal(logo?.cid, 'logo@pigeon');
  assert.deepEqual(logo?.content, png);
});

test('Message-ID is on the configured hostname and Date comes from the clock', async () => {
  const [msg] = await sendOk(simpleSend());
  const mail = await simpleParser(await rawOf(msg.id));
  assert.equal(mail.messageId, `<${msg.id}@mx.pigeon.test>`);
  assert.equal(mail.date?.getTime(), clock.now());
  const row = await app.db('messages').where({ id: msg.id }).first();
  assert.equal(row.message_id_header, `${msg.id}@mx.pigeon.test`);
});

test('IDN domains are accepted and stored and written as punycode', async () => {
  const [msg] = await sendOk(simpleSend({ from: 'Jörg <jorg@bücher.example>', to: ['kunde@Münich.Example'] }));
  assert.equal(msg.to, 'kunde@xn--mnich-kva.example');
  const row = await app.db('messages').where({ id: msg.id }).first();
  assert.equal(row.recipient_domain, 'xn--mnich-kva.example');
  assert.equal(row.sending_domain, 'xn--bcher-kva.example');
  const raw = await rawOf(msg.id);
  assert.match(raw.toString(), /^From: =\?UTF-8\?Q\?J=C3=B6rg\?= <jorg@xn--bcher-kva\.example>$/m);
  assert.match(raw.toString(), /^To: kunde@xn--mnich-kva\.example$/m);
  assert.equal((await simpleParser(raw)).from?.value[0].name, 'Jörg');
});

test('templates cannot reach prototypes or helpers that are not built in', async () => {
  const [msg] = await sendOk(simpleSend({
    text: '[{{constructor}}][{{__proto__}}][{{lookup this "constructor"}}][{{name.constructor.name}}][{{#with obj}}{{toString}}{{/with}}]',
    template_data: { name: 'x', obj: {} },
  }));
  const mail = await simpleParser(await rawOf(msg.id));
  assert.equal(mail.text?.trim(), '[][][][][]');
});

test('a stored template is used with template_id, and broken templates are refused when stored', async () => {
  // Writing templates needs a live key; the sandbox bootstrap key still sends with them and reads them.
  const live = app.api.withKey(await createKey(app, 'live', ['messages:send']));
  const created = await live.post('/v1/templates', { name: 'welcome', subject: 'Welcome {{name}}', html: '<h1>{{name}}</h1>', text: 'Welcome {{name}}' });
  assert.equal(created.status, 201, created.text);
  assert.match(created.body.id, /^tpl_/);
  const [msg] = await sendOk({ from: 'shop@example.com', to: ['t@example.org'], template_id: created.body.id, template_data: { name: '<Tom>' } });
  const mail = await simpleParser(await rawOf(msg.id));
  assert.equal(mail.subject, 'Welcome <Tom>');
  assert.match(mail.html as string, /<h1>&lt;Tom&gt;<\/h1>/);

  const dup = await live.post('/v1/templates', { name: 'welcome', subject: 's', text: 't' });
  assert.equal(dup.status, 409);
  const broken = await live.post('/v1/templates', { name: 'broken', subject: 'ok', html: '{{#each}}' });
  assert.equal(broken.status, 422);
  assert.equal(broken.body.error.param, 'html');
  const noBody = await live.post('/v1/templates', { name: 'nobody', subject: 'ok' });
  assert.equal(noBody.status, 422);

  const list = await app.api.get('/v1/templates');
  assert.deepEqual(list.body.data.map((t: { name: string }) => t.name), ['welcome']);
  assert.equal((await app.api.get(`/v1/templates/${created.body.id}`)).body.subject, 'Welcome {{name}}');
  assert.equal((await live.delete(`/v1/templates/${created.body.id}`)).status, 200);
  assert.equal((await app.api.get(`/v1/templates/${created.body.id}`)).status, 404);
  const gone = await app.api.post('/v1/messages/send', { from: 'shop@example.com', to: ['t@example.org'], template_id: created.body.id });
  assert.equal(gone.status, 422);
  assert.equal(gone.body.error.code, 'template_not_found');
});

test('send_at in the future schedules; in the past it sends at once', async () => {
  const later = new Date(clock.now() + 3600_000).toISOString().replace('Z', '+00:00');
  const [scheduled] = await sendOk(simpleSend({ send_at: later }));
  assert.equal(scheduled.status, 'scheduled');
  const row = await app.db('messages').where({ id: scheduled.id }).first();
  assert.equal(Number(row.next_attempt_at), clock.now() + 3600_000);
  const [now] = await sendOk(simpleSend({ send_at: new Date(clock.now() - 60_000).toISOString() }));
  assert.equal(now.status, 'queued');
  const nowRow = await app.db('messages').where({ id: now.id }).first();
  assert.equal(Number(nowRow.next_attempt_at), clock.now());
  const offset = await sendOk(simpleSend({ send_at: '2026-01-05T12:30:00+02:00' })); // 10:30Z, one hour ahead
  assert.equal(offset[0].status, 'scheduled');
});

test('each accepted message gets one message.queued event in the same write', async () => {
  const data = await sendOk(simpleSend({ to: ['e1@example.org', 'e2@example.org'], tags: ['welcome'], metadata: { user: '42' } }));
  for (const d of data) {
    const events = await app.db('events').where({ message_id: d.id });
    assert.equal(events.length, 1);
    assert.equal(events[0].type, 'message.queued');
    const payload = JSON.parse(events[0].data);
    assert.deepEqual(payload, {
      message_id: d.id, to: d.to, from: 'sender@example.com', queued_at: new Date(clock.now()).toISOString(), send_at: null,
      tags: ['welcome'], metadata: { user: '42' }, sandbox: true,
    });
  }
});

test('a message of nearly 10 MB with a base64 attachment fits the default limits', async () => {
  const big = await startTestApp();
  try {
    const file = Buffer.alloc(7 * 1024 * 1024, 'pigeon ');
    const res = await big.api.post('/v1/messages/send', simpleSend({ attachments: [{ filename: 'big.txt', content: file.toString('base64'), content_type: 'text/plain' }] }));
    assert.equal(res.status, 202, res.text.slice(0, 300));
    const content = await big.db('message_contents').first('size');
    assert.ok(Number(content.size) > 9 * 1024 * 1024 && Number(content.size) <= 10 * 1024 * 1024, String(content.size));
  } finally {
    await big.stop();
  }
});
