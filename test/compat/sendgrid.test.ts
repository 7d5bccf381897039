// The real `@sendgrid/mail` SDK against the /sendgrid layer: personalizations, substitutions, dynamic templates,
// categories and custom_args in events; a bad address, an unverified domain and a wrong key get SendGrid's errors.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { MailService } from '@sendgrid/mail';
import { deliver, deliveredTo, PNG_BASE64, queuedEvent, SENDER_DOMAIN, startCompatWorld, storeTemplate, type CompatWorld } from './helpers';

const FROM = { email: `app@${SENDER_DOMAIN}`, name: 'App' };
let cw: CompatWorld;
let sg: MailService;

/** The SDK's client takes a base URL with a path; setApiKey resets it to SendGrid's host, so it is set after. */
function clientWith(key: string): MailService {
  const service = new (MailService as unknown as new () => MailService)();
  service.setApiKey(key);
  (service as unknown as { client: { setDefaultRequest(k: string, v: string): void } }).client.setDefaultRequest('baseUrl', `${cw.url}/sendgrid`);
  return service;
}

type SgError = Error & { code: number; response: { body: { errors: Array<{ message: string; field: string | null }> } } };
const failure = (p: Promise<unknown>) => p.then(() => assert.fail('expected an error'), (e: unknown) => e as SgError);
const messageCount = async () => Number((await cw.world.app.db('messages').count({ n: '*' }).first())?.n);

before(async () => {
  cw = await startCompatWorld();
  sg = clientWith(cw.liveKey);
});
after(() => cw.stop());

describe('SendGrid SDK', () => {
  it('send: to/cc, subject, bodies, headers, an inline attachment, categories and custom_args in events; 202 with X-Message-Id', async () => {
    const [res] = await sg.send({
      from: FROM, to: ['a@dest.test', { email: 'b@dest.test', name: 'Bee' }], cc: 'c@dest.test', replyTo: 'help@sender.test',
      subject: 'Your order', text: 'Order shipped', html: '<p>Order shipped <img src="cid:logo"></p>',
      headers: { 'X-Order': '99' }, categories: ['shipping'], customArgs: { order: '99' },
      attachments: [{ content: PNG_BASE64, filename: 'logo.png', type: 'image/png', disposition: 'inline', contentId: 'logo' }],
    });
    assert.equal(res.statusCode, 202);
    const messageId = String(res.headers['x-message-id']);
    assert.match(messageId, /^msg_/);

    const all = await deliver(cw, 3);
    const copy = deliveredTo(all, 'b@dest.test');
    assert.deepEqual(copy.dkim, [`${SENDER_DOMAIN}:pass`]);
    assert.equal(copy.mail.subject, 'Your order');
    assert.deepEqual((copy.mail.to as { value: Array<{ address: string; name: string }> }).value.map((v) => [v.address, v.name]), [['a@dest.test', ''], ['b@dest.test', 'Bee']]);
    assert.equal((copy.mail.cc as { text: string }).text, 'c@dest.test');
    assert.equal(copy.mail.text?.trim(), 'Order shipped');
    assert.ok(String(copy.mail.html).includes('data:image/png;base64,'), 'the cid reference resolves to the inline part');
    assert.equal(copy.mail.headers.get('x-order'), '99');
    assert.equal(copy.mail.attachments[0].contentId, '<logo>');
    const event = await queuedEvent(cw, messageId);
    assert.deepEqual(event.tags, ['shipping']);
    assert.deepEqual(event.metadata, { order: '99' });
  });

  it('sendMultiple: one personalization per recipient, each with its own substitutions, committed together', async () => {
    const before = cw.sink.messages.length;
    const [res] = await sg.sendMultiple({
      from: FROM, to: ['d@dest.test', 'e@dest.test'], subject: 'Hi {{name}}', text: 'Dear {{name}}',
      substitutions: { name: 'friend' },
    });
    assert.equal(res.statusCode, 202);
    const all = (await deliver(cw, before + 2)).slice(before);
    const d = deliveredTo(all, 'd@dest.test');
    assert.equal(d.mail.subject, 'Hi friend');
    assert.equal((d.mail.to as { text: string }).text, 'd@dest.test', 'each personalization is its own message');

    const personal = await sg.send({
      from: FROM, subject: 'For {{who}}', text: 'Hello {{who}}',
      personalizations: [{ to: 'f@dest.test', substitutions: { who: 'Fen' } }, { to: 'g@dest.test', substitutions: { who: 'Gil' } }],
    } as never);
    assert.equal(personal[0].statusCode, 202);
    const more = (await deliver(cw, before + 4)).slice(before);
    assert.equal(deliveredTo(more, 'g@dest.test').mail.text?.trim(), 'Hello Gil');
  });

  it('a dynamic template: template_id "d-<name>" with dynamic_template_data', async () => {
    await storeTemplate(cw, 'receipt', { subject: 'Receipt for {{customer.name}}', text: 'Total: {{total}}' });
    const before = cw.sink.messages.length;
    const [res] = await sg.send({ from: FROM, to: 'h@dest.test', templateId: 'd-receipt', dynamicTemplateData: { customer: { name: 'Hal' }, total: '12.50' } });
    assert.equal(res.statusCode, 202);
    const [copy] = (await deliver(cw, before + 1)).slice(before);
    assert.equal(copy.mail.subject, 'Receipt for Hal');
    assert.equal(copy.mail.text?.trim(), 'Total: 12.50');
  });

  it('errors in SendGrid\'s shape: bad address (400), unverified domain (403), wrong key (401), refused field; nothing stored', async () => {
    const stored = await messageCount();
    const bad = await failure(sg.send({ from: FROM, to: 'nobody', subject: 's', text: 't' }));
    assert.equal(bad.code, 400);
    assert.ok(bad.response.body.errors[0].field?.startsWith('to'), JSON.stringify(bad.response.body));

    const unverified = await failure(sg.send({ from: 'x@unverified.test', to: 'a@dest.test', subject: 's', text: 't' }));
    assert.equal(unverified.code, 403);
    assert.match(unverified.response.body.errors[0].message, /unverified\.test is not a verified sending domain/);

    const wrong = await failure(clientWith('svc_live_wrongwrongwrongwrongwrongwrongwrong').send({ from: FROM, to: 'a@dest.test', subject: 's', text: 't' }));
    assert.equal(wrong.code, 401);
    assert.equal(wrong.response.body.errors[0].field, null);

    const oneBad = await failure(sg.send({ from: FROM, subject: 's', text: 't', personalizations: [{ to: 'ok@dest.test' }, { to: 'bad' }] } as never));
    assert.equal(oneBad.code, 400);
    assert.match(String(oneBad.response.body.errors[0].field), /^personalizations\[1\]\./);

    const asm = await failure(sg.send({ from: FROM, to: 'a@dest.test', subject: 's', text: 't', asm: { groupId: 1 } }));
    assert.equal(asm.code, 400);
    assert.equal(asm.response.body.errors[0].field, 'asm');
    assert.equal(await messageCount(), stored, 'nothing was stored (personalizations are all or nothing)');
  });
});
