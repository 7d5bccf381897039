// The real `resend` SDK against the /resend layer: send, batch, template, get, reschedule and cancel;
// a bad address, an unverified domain and a wrong key get Resend's errors; Idempotency-Key is honoured.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Resend } from 'resend';
import { createKey } from '../support/app';
import { deliver, deliveredTo, PNG_BASE64, queuedEvent, SENDER_DOMAIN, startCompatWorld, storeTemplate, type CompatWorld } from './helpers';

const FROM = `App <app@${SENDER_DOMAIN}>`;
let cw: CompatWorld;
let resend: Resend;
const clientWith = (key: string) => new Resend(key, { baseUrl: `${cw.url}/resend` });

before(async () => {
  cw = await startCompatWorld();
  resend = clientWith(cw.liveKey);
});
after(() => cw.stop());

const messageCount = async () => Number((await cw.world.app.db('messages').count({ n: '*' }).first())?.n);

describe('Resend SDK', () => {
  it('emails.send: to/cc, subject, bodies, headers, an inline attachment with its content id, tags in events', async () => {
    const { data, error } = await resend.emails.send({
      from: FROM, to: ['a@dest.test', 'Bo <b@dest.test>'], cc: 'c@dest.test', subject: 'Receipt',
      html: '<p>Paid <img src="cid:logo"></p>', text: 'Paid', replyTo: 'help@sender.test', headers: { 'X-Invoice': 'INV-7' },
      attachments: [{ filename: 'logo.png', content: Buffer.from(PNG_BASE64, 'base64'), contentType: 'image/png', contentId: 'logo' }],
      tags: [{ name: 'category', value: 'receipt' }],
    });
    assert.equal(error, null, JSON.stringify(error));
    assert.match(data!.id, /^bat_/);

    const all = await deliver(cw, 3);
    const copy = deliveredTo(all, 'b@dest.test');
    assert.deepEqual(copy.dkim, [`${SENDER_DOMAIN}:pass`]);
    assert.equal(copy.mail.subject, 'Receipt');
    assert.deepEqual((copy.mail.to as { value: Array<{ address: string; name: string }> }).value.map((v) => [v.address, v.name]), [['a@dest.test', ''], ['b@dest.test', 'Bo']]);
    assert.equal((copy.mail.cc as { text: string }).text, 'c@dest.test');
    assert.equal(copy.mail.text?.trim(), 'Paid');
    assert.ok(String(copy.mail.html).includes('data:image/png;base64,'), 'the cid reference resolves to the inline part');
    assert.equal(copy.mail.headers.get('x-invoice'), 'INV-7');
    assert.equal(copy.mail.attachments[0].contentId, '<logo>');

    const got = await resend.emails.get(data!.id);
    assert.equal(got.error, null);
    assert.deepEqual(got.data!.to, ['a@dest.test', 'Bo <b@dest.test>']);
    assert.deepEqual(got.data!.cc, ['c@dest.test']);
    assert.equal(got.data!.subject, 'Receipt');
    assert.deepEqual(got.data!.tags, [{ name: 'category', value: 'receipt' }]);
    const copies = await cw.world.app.db('messages').where({ batch_id: data!.id }).select('id');
    assert.deepEqual((await queuedEvent(cw, copies[0].id)).metadata, { category: 'receipt' });
  });

  it('batch.send: strict refuses the whole batch for one bad item; permissive sends the rest and lists the error', async () => {
    const stored = await messageCount();
    const items = [
      { from: FROM, to: 'd@dest.test', subject: 'One', text: 'one' },
      { from: FROM, to: 'not-an-address', subject: 'Two', text: 'two' },
    ];
    const strict = await resend.batch.send(items);
    assert.equal(strict.data, null);
    assert.equal(strict.error?.name, 'validation_error');
    assert.equal(await messageCount(), stored, 'strict: nothing sent');

    const permissive = await resend.batch.send(items, { batchValidation: 'permissive' });
    assert.equal(permissive.error, null, JSON.stringify(permissive.error));
    assert.equal(permissive.data!.data.length, 1);
    const errors = (permissive.data as unknown as { errors: Array<{ index: number; message: string }> }).errors;
    assert.equal(errors[0].index, 1);
    const before = cw.sink.messages.length;
    const ok = await resend.batch.send([items[0], { from: FROM, to: 'e@dest.test', subject: 'Three', text: 'three' }]);
    assert.equal(ok.data!.data.length, 2);
    const all = (await deliver(cw, before + 3)).slice(before);
    assert.equal(deliveredTo(all, 'e@dest.test').mail.subject, 'Three');
  });

  it('a stored template by id with variables', async () => {
    const id = await storeTemplate(cw, 'resend-welcome', { subject: 'Hi {{name}}', html: '<p>Hello {{name}}</p>' });
    const before = cw.sink.messages.length;
    const { error } = await resend.emails.send({ from: FROM, to: 'f@dest.test', template: { id, variables: { name: 'Flo' } } } as never);
    assert.equal(error, null, JSON.stringify(error));
    const [copy] = (await deliver(cw, before + 1)).slice(before);
    assert.equal(copy.mail.subject, 'Hi Flo');
    assert.match(String(copy.mail.html), /Hello Flo/);
  });

  it('scheduledAt: update reschedules, cancel cancels, and Idempotency-Key replays the first answer', async () => {
    const at = new Date(cw.world.clock.now() + 3600_000).toISOString();
    const first = await resend.emails.send({ from: FROM, to: 'g@dest.test', subject: 'Later', text: 'later', scheduledAt: at }, { idempotencyKey: 'order-77' });
    const again = await resend.emails.send({ from: FROM, to: 'g@dest.test', subject: 'Later', text: 'later', scheduledAt: at }, { idempotencyKey: 'order-77' });
    assert.equal(again.data!.id, first.data!.id);
    const reused = await resend.emails.send({ from: FROM, to: 'g@dest.test', subject: 'Other', text: 'x' }, { idempotencyKey: 'order-77' });
    assert.equal(reused.error?.name, 'invalid_idempotent_request');

    const id = first.data!.id;
    assert.equal((await resend.emails.get(id)).data!.last_event, 'scheduled');
    const later = new Date(cw.world.clock.now() + 7200_000).toISOString();
    const moved = await resend.emails.update({ id, scheduledAt: later });
    assert.equal(moved.error, null, JSON.stringify(moved.error));
    assert.equal((await resend.emails.get(id)).data!.scheduled_at, later);
    const cancelled = await resend.emails.cancel(id);
    assert.equal(cancelled.error, null);
    assert.equal((await resend.emails.get(id)).data!.last_event, 'canceled');
    const twice = await resend.emails.cancel(id);
    assert.equal(twice.error?.statusCode, 409);
    const missing = await resend.emails.get('bat_nothing');
    assert.equal(missing.error?.name, 'not_found');
  });

  it('errors in Resend\'s shape: bad address (422), unverified domain (403), wrong key (403), refused field', async () => {
    const stored = await messageCount();
    const bad = await resend.emails.send({ from: FROM, to: 'nobody', subject: 's', text: 't' });
    assert.equal(bad.error?.statusCode, 422);
    assert.equal(bad.error?.name, 'validation_error');
    const unverified = await resend.emails.send({ from: 'x@unverified.test', to: 'a@dest.test', subject: 's', text: 't' });
    assert.equal(unverified.error?.statusCode, 403);
    assert.match(unverified.error!.message, /unverified\.test is not a verified sending domain/);
    const wrong = await clientWith('svc_live_wrongwrongwrongwrongwrongwrongwrong').emails.send({ from: FROM, to: 'a@dest.test', subject: 's', text: 't' });
    assert.equal(wrong.error?.statusCode, 403);
    assert.equal(wrong.error?.name, 'invalid_api_key');
    const byUrl = await resend.emails.send({ from: FROM, to: 'a@dest.test', subject: 's', text: 't', attachments: [{ filename: 'x.pdf', path: 'http://127.0.0.1/x.pdf' }] });
    assert.equal(byUrl.error?.statusCode, 422);
    assert.match(byUrl.error!.message, /attachments\[0\]\.path/);
    const readOnly = clientWith(await createKey(cw.world.app, 'live', ['messages:read']));
    const restricted = await readOnly.emails.send({ from: FROM, to: 'a@dest.test', subject: 's', text: 't' });
    assert.equal(restricted.error?.name, 'restricted_api_key');
    assert.equal(await messageCount(), stored, 'nothing was stored');
  });
});
