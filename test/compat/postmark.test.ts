// The real `postmark` SDK against the /postmark layer: send, batch and template calls arrive DKIM-signed with what was sent;
// a bad address, an unverified domain and a wrong key get Postmark's errors; the layer also runs on its own port.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Errors, ServerClient } from 'postmark';
import { deliver, deliveredTo, PNG_BASE64, queuedEvent, SENDER_DOMAIN, startCompatWorld, storeTemplate, type CompatWorld } from './helpers';

const FROM = `App <app@${SENDER_DOMAIN}>`;
let cw: CompatWorld;
let client: ServerClient;
/** Postmark's client takes a host, not a URL; "host:port/prefix" works because it only prepends the scheme. */
const clientAt = (hostAndPath: string, key: string) => new ServerClient(key, { useHttps: false, requestHost: hostAndPath, timeout: 10 });

before(async () => {
  cw = await startCompatWorld({ compat: { postmark: { port: 0 } } });
  client = clientAt(`${new URL(cw.url).host}/postmark`, cw.liveKey);
});
after(() => cw.stop());

describe('Postmark SDK', () => {
  it('sendEmail: To/Cc, subject, bodies, headers, an inline attachment with its ContentID, Tag and Metadata in events', async () => {
    const sent = await client.sendEmail({
      From: FROM, To: 'a@dest.test, "Doe, Bea" <b@dest.test>', Cc: 'c@dest.test', Subject: 'Welcome aboard',
      HtmlBody: '<p>Hi <img src="cid:logo.png"></p>', TextBody: 'Hi there', ReplyTo: 'help@sender.test',
      Headers: [{ Name: 'X-Order', Value: '42' }], Tag: 'welcome', Metadata: { order: '42' }, TrackOpens: false, TrackLinks: 'None' as never,
      Attachments: [{ Name: 'logo.png', Content: PNG_BASE64, ContentType: 'image/png', ContentID: 'cid:logo.png' }],
      MessageStream: 'outbound',
    });
    assert.equal(sent.ErrorCode, 0);
    assert.equal(sent.Message, 'OK');
    assert.match(sent.MessageID, /^msg_/);
    assert.equal(sent.To, 'a@dest.test, "Doe, Bea" <b@dest.test>');
    assert.ok(!Number.isNaN(Date.parse(sent.SubmittedAt)));

    const all = await deliver(cw, 3);
    const copy = deliveredTo(all, 'b@dest.test');
    assert.deepEqual(copy.dkim, [`${SENDER_DOMAIN}:pass`]);
    assert.equal(copy.mail.subject, 'Welcome aboard');
    assert.deepEqual((copy.mail.to as { value: Array<{ address: string; name: string }> }).value.map((v) => [v.address, v.name]), [['a@dest.test', ''], ['b@dest.test', 'Doe, Bea']]);
    assert.equal((copy.mail.cc as { text: string }).text, 'c@dest.test');
    assert.equal(copy.mail.replyTo?.text, 'help@sender.test');
    assert.equal(copy.mail.text?.trim(), 'Hi there');
    // mailparser resolves cid: references to their inline part, so the image's data shows the link held.
    assert.ok(String(copy.mail.html).includes(`<img src="data:image/png;base64,${PNG_BASE64}">`), String(copy.mail.html));
    assert.equal(copy.mail.headers.get('x-order'), '42');
    const logo = copy.mail.attachments.find((a) => a.filename === 'logo.png');
    assert.equal(logo?.contentId, '<logo.png>');
    assert.equal(logo?.content.toString('base64'), PNG_BASE64);
    assert.ok(deliveredTo(all, 'c@dest.test'), 'the Cc copy arrives');

    const event = await queuedEvent(cw, sent.MessageID);
    assert.deepEqual(event.tags, ['welcome']);
    assert.deepEqual(event.metadata, { order: '42' });
  });

  it('sendEmailBatch answers each message: accepted ones arrive, an invalid one gets ErrorCode 300', async () => {
    const before = cw.sink.messages.length;
    const results = await client.sendEmailBatch([
      { From: FROM, To: 'd@dest.test', Subject: 'Batch one', TextBody: 'one' },
      { From: FROM, To: 'not-an-address', Subject: 'Batch two', TextBody: 'two' },
      { From: FROM, To: 'e@dest.test', Subject: 'Batch three', HtmlBody: '<b>three</b>' },
    ]);
    assert.deepEqual(results.map((r) => r.ErrorCode), [0, 300, 0]);
    assert.match(results[1].Message, /not-an-address/);
    const all = (await deliver(cw, before + 2)).slice(before);
    assert.equal(deliveredTo(all, 'd@dest.test').mail.subject, 'Batch one');
    assert.equal(deliveredTo(all, 'e@dest.test').mail.subject, 'Batch three');
    assert.ok(all.every((d) => d.dkim[0] === `${SENDER_DOMAIN}:pass`));
  });

  it('sendEmailWithTemplate (by alias) and sendEmailBatchWithTemplates (by id) render Pigeon stored templates', async () => {
    const id = await storeTemplate(cw, 'welcome', { subject: 'Hello {{name}}', text: 'Dear {{name}}, welcome.' });
    const before = cw.sink.messages.length;
    const one = await client.sendEmailWithTemplate({ From: FROM, To: 'f@dest.test', TemplateAlias: 'welcome', TemplateModel: { name: 'Fay' } });
    assert.equal(one.ErrorCode, 0);
    const many = await client.sendEmailBatchWithTemplates([
      { From: FROM, To: 'g@dest.test', TemplateId: id as unknown as number, TemplateModel: { name: 'Gus' } },
      { From: FROM, To: 'h@dest.test', TemplateAlias: 'no-such-template', TemplateModel: {} },
    ]);
    assert.deepEqual(many.map((r) => r.ErrorCode), [0, 1101]);
    const all = (await deliver(cw, before + 2)).slice(before);
    assert.equal(deliveredTo(all, 'f@dest.test').mail.subject, 'Hello Fay');
    assert.equal(deliveredTo(all, 'g@dest.test').mail.text?.trim(), 'Dear Gus, welcome.');
  });

  it('errors in Postmark\'s shape: bad address (300), unverified domain (400), wrong key (401, code 10), refused field', async () => {
    const stored = await cw.world.app.db('messages').count({ n: '*' }).first();
    const attempt = (p: Promise<unknown>) => p.then(() => assert.fail('expected an error'), (e: unknown) => e as InstanceType<typeof Errors.PostmarkError>);

    const bad = await attempt(client.sendEmail({ From: FROM, To: 'nobody', Subject: 's', TextBody: 't' }));
    assert.ok(bad instanceof Errors.ApiInputError, String(bad));
    assert.equal(bad.statusCode, 422);
    assert.equal(bad.code, 300);

    const unverified = await attempt(client.sendEmail({ From: 'x@unverified.test', To: 'a@dest.test', Subject: 's', TextBody: 't' }));
    assert.equal(unverified.statusCode, 422);
    assert.equal(unverified.code, 400);
    assert.match(unverified.message, /unverified\.test is not a verified sending domain/);

    const wrongKey = await attempt(clientAt(`${new URL(cw.url).host}/postmark`, 'svc_live_wrongwrongwrongwrongwrongwrongwrong').sendEmail({ From: FROM, To: 'a@dest.test', Subject: 's', TextBody: 't' }));
    assert.ok(wrongKey instanceof Errors.InvalidAPIKeyError, String(wrongKey));
    assert.equal(wrongKey.statusCode, 401);
    assert.equal(wrongKey.code, 10);

    const textOnly = await attempt(client.sendEmail({ From: FROM, To: 'a@dest.test', Subject: 's', HtmlBody: '<a href="https://x.test">x</a>', TrackLinks: 'TextOnly' as never }));
    assert.equal(textOnly.code, 300);
    assert.match(textOnly.message, /TrackLinks/);

    const after = await cw.world.app.db('messages').count({ n: '*' }).first();
    assert.equal(after?.n, stored?.n, 'nothing was stored');
  });

  it('serves the same layer at the root of compat.postmark.port, for clients that take a host only', async () => {
    const listener = cw.world.app.listeners['compat.postmark'];
    assert.ok(listener, 'the listener runs');
    const own = clientAt(`127.0.0.1:${listener.port}`, cw.liveKey);
    const before = cw.sink.messages.length;
    const sent = await own.sendEmail({ From: FROM, To: 'own-port@dest.test', Subject: 'Via own port', TextBody: 'port' });
    assert.equal(sent.ErrorCode, 0);
    const all = (await deliver(cw, before + 1)).slice(before);
    assert.equal(deliveredTo(all, 'own-port@dest.test').mail.subject, 'Via own port');
  });
});

describe('Postmark requests as Python\'s postmarker sends them', () => {
  it('null for unset fields and a trailing slash on /email/withTemplate/ are accepted, on the layer\'s own port', async () => {
    const listener = cw.world.app.listeners['compat.postmark'];
    const post = (path: string, body: unknown) => fetch(`http://127.0.0.1:${listener.port}${path}`, {
      method: 'POST', body: JSON.stringify(body),
      headers: { 'X-Postmark-Server-Token': cw.liveKey, 'Content-Type': 'application/json', Accept: 'application/json' },
    });
    const before = cw.sink.messages.length;
    const unset = { Cc: null, Bcc: null, Tag: null, ReplyTo: null, Headers: [], TrackOpens: null, TrackLinks: 'None', Attachments: [], Metadata: null };
    const plain = await post('/email', { From: FROM, To: 'py1@dest.test', Subject: 'From Python', TextBody: 'py', HtmlBody: null, ...unset });
    assert.equal(plain.status, 200, await plain.clone().text());
    assert.equal(((await plain.json()) as { ErrorCode: number }).ErrorCode, 0);
    const templated = await post('/email/withTemplate/', {
      TemplateId: null, TemplateAlias: 'welcome', TemplateModel: { name: 'Py' }, From: FROM, To: 'py2@dest.test', Subject: null, InlineCss: true, ...unset,
    });
    assert.equal(templated.status, 200, await templated.clone().text());
    const all = (await deliver(cw, before + 2)).slice(before);
    assert.equal(deliveredTo(all, 'py2@dest.test').mail.subject, 'Hello Py');
  });
});
