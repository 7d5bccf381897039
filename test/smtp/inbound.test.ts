// The inbound listener turns DSNs and ARF reports about delivered mail into bounces, complaints and suppressions, and takes nothing else.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import nodemailer from 'nodemailer';
import { parseVerp } from '../../src/delivery';
import { getSuppression } from '../../src/suppressions/store';
import { createKey } from '../support/app';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver';
import { ids, RawSmtp, refusal, submissionClient } from './helpers';
import { arfReport, gmailDsn, postfixDsn } from './reports';
import { eventsOf, SENDER_DOMAIN, startRelayWorld, type RelayWorld } from './world';

const FBL = 'fbl@mx.pigeon.test';

interface Delivered {
  id: string;
  verp: string;
  raw: string;
}

describe('inbound bounces and complaints', () => {
  let world: RelayWorld;
  let inbound: nodemailer.Transporter;
  let receiver: WebhookReceiver;
  const delivered = new Map<string, Delivered>();
  const report = (to: string, raw: string) => inbound.sendMail({ envelope: { from: '', to }, raw });
  const status = async (id: string) => (await world.app.db('messages').where({ id }).first()).status;
  const eventCount = async () => Number((await world.app.db('events').count({ n: '*' }).first())?.n);

  before(async () => {
    world = await startRelayWorld({ feedbackAddress: FBL });
    receiver = await startWebhookReceiver();
    // live mail's events reach only a webhook made with a live key
    const hook = await world.app.api.withKey(await createKey(world.app, 'live', ['webhooks:manage'])).post('/v1/webhooks', { url: receiver.url, events: ['message.bounced', 'message.complained'] });
    assert.equal(hook.status, 201, hook.text);
    inbound = nodemailer.createTransport({ host: '127.0.0.1', port: world.app.inboundPort, secure: false, tls: { rejectUnauthorized: false }, pool: true, maxConnections: 1 });
    const client = submissionClient(world.app.submissionPort, world.liveKey);
    const info = await client.sendMail({
      from: `Shop <orders@${SENDER_DOMAIN}>`, to: ['alice@dest.test', 'bob@dest.test', 'carol@dest.test', 'dan@dest.test'],
      subject: 'Weekly offers', text: 'Offers!',
    });
    client.close();
    assert.equal(ids(info.response).length, 4);
    await world.mta.runOnce();
    for (const m of await world.sink.waitFor(4)) {
      const id = parseVerp(world.app.config, m.mailFrom);
      assert.ok(id);
      delivered.set(m.rcptTo[0], { id, verp: m.mailFrom, raw: m.raw.toString('latin1') });
    }
  });
  after(async () => {
    inbound.close();
    await receiver.close();
    await world.stop();
  });

  test('a Postfix bounce to the VERP address → message.bounced hard, status bounced, suppression; a repeat counts once', async () => {
    const alice = delivered.get('alice@dest.test')!;
    const dsn = postfixDsn({ verp: alice.verp, rcpt: 'alice@dest.test', original: alice.raw });
    const info = await report(alice.verp, dsn);
    assert.match(info.response, /^250 2\.0\.0 Ok/);
    assert.equal(await status(alice.id), 'bounced');
    const bounced = (await eventsOf(world.app, alice.id)).filter((e) => e.type === 'message.bounced');
    assert.equal(bounced.length, 1);
    assert.deepEqual(
      { type: bounced[0].data.type, code: bounced[0].data.code, enhanced: bounced[0].data.enhanced_code, category: bounced[0].data.category },
      { type: 'hard', code: 550, enhanced: '5.1.1', category: 'invalid_recipient' },
    );
    assert.match(String(bounced[0].data.diagnostic), /Recipient address rejected: User unknown in local recipient table/);
    assert.equal(bounced[0].data.to, 'alice@dest.test');
    const suppression = await getSuppression(world.app.db, world.app.accountId, 'alice@dest.test');
    assert.equal(suppression?.reason, 'hard_bounce');
    assert.equal(suppression?.sourceMessageId, alice.id);
    const [hook] = await receiver.waitFor(1);
    const envelope = hook.json() as { event: string; data: Record<string, unknown> };
    assert.deepEqual([envelope.event, envelope.data.message_id, envelope.data.type], ['message.bounced', alice.id, 'hard'], 'the webhook hears of it');

    await report(alice.verp, dsn);
    assert.equal((await eventsOf(world.app, alice.id)).filter((e) => e.type === 'message.bounced').length, 1);
  });

  test('a Gmail delay notice is no bounce: no event, status and suppressions unchanged, noted in last_response; its failure notice is a hard bounce', async () => {
    const bob = delivered.get('bob@dest.test')!;
    const info = await report(bob.verp, gmailDsn({ verp: bob.verp, rcpt: 'bob@dest.test', original: bob.raw, delayed: true }));
    assert.match(info.response, /^250 /);
    assert.deepEqual((await eventsOf(world.app, bob.id)).filter((e) => e.type === 'message.bounced'), []);
    const row = await world.app.db('messages').where({ id: bob.id }).first();
    assert.equal(row.status, 'delivered');
    assert.match(row.last_response, /^Delayed further on: 4\.4\.1 421 4\.4\.1 Connection timed out/);
    assert.equal(await getSuppression(world.app.db, world.app.accountId, 'bob@dest.test'), undefined);

    await report(bob.verp, gmailDsn({ verp: bob.verp, rcpt: 'bob@dest.test', original: bob.raw }));
    const events = (await eventsOf(world.app, bob.id)).filter((e) => e.type === 'message.bounced');
    assert.deepEqual(events.map((e) => [e.data.type, e.data.enhanced_code, e.data.code]), [['hard', '5.1.1', 550]]);
    assert.match(String(events[0].data.diagnostic), /The email account that you tried to reach does not exist/);
    assert.equal(await status(bob.id), 'bounced');
    assert.equal((await getSuppression(world.app.db, world.app.accountId, 'bob@dest.test'))?.reason, 'hard_bounce');
  });

  test('an ARF report to the feedback address whose returned original carries the copy\'s VERP Return-Path → message.complained and suppression of that copy only', async () => {
    const carol = delivered.get('carol@dest.test')!;
    const dan = delivered.get('dan@dest.test')!;
    assert.equal(carol.raw.match(/^Message-ID: (.*)$/im)?.[1], dan.raw.match(/^Message-ID: (.*)$/im)?.[1], 'copies of one send share the Message-ID');
    const original = `Return-Path: <${carol.verp}>\r\n${carol.raw}`;
    await report(FBL, arfReport({ to: FBL, rcpt: 'redacted@fbl.mailbox.test', original }));
    const complained = (await eventsOf(world.app, carol.id)).filter((e) => e.type === 'message.complained');
    assert.equal(complained.length, 1);
    assert.equal(complained[0].data.feedback_type, 'abuse');
    assert.equal((await getSuppression(world.app.db, world.app.accountId, 'carol@dest.test'))?.reason, 'complaint');
    assert.equal((await eventsOf(world.app, dan.id)).filter((e) => e.type === 'message.complained').length, 0, 'the other copy is untouched');
    assert.equal(await status(carol.id), 'delivered');
  });

  test('an ARF report sent to a VERP address complains about that message', async () => {
    const dan = delivered.get('dan@dest.test')!;
    await report(dan.verp, arfReport({ to: dan.verp, rcpt: 'dan@dest.test', original: dan.raw }));
    assert.equal((await eventsOf(world.app, dan.id)).filter((e) => e.type === 'message.complained').length, 1);
    assert.equal((await getSuppression(world.app.db, world.app.accountId, 'dan@dest.test'))?.reason, 'complaint');
  });

  test('mail for any other address gets 550 5.1.1: no relay, no backscatter, no forged tokens', async () => {
    const dan = delivered.get('dan@dest.test')!;
    const forged = dan.verp.replace(/-[0-9a-f]{16}@/, '-0123456789abcdef@');
    const raw = await RawSmtp.connect(world.app.inboundPort);
    assert.match(await raw.command('EHLO bounce.dest.test'), /^250/);
    assert.match(await raw.command('MAIL FROM:<>'), /^250/);
    for (const rcpt of ['postmaster@mx.pigeon.test', 'someone@dest.test', forged, dan.verp.replace('mx.pigeon.test', 'other.test')]) {
      assert.equal(await raw.command(`RCPT TO:<${rcpt}>`), '550 5.1.1 No such recipient here', rcpt);
    }
    assert.match(await raw.command(`RCPT TO:<${dan.verp.toUpperCase().replace('B+MSG_', 'b+msg_')}>`), /^250/, 'VERP is case-insensitive');
    assert.match(await raw.command(`RCPT TO:<${FBL.toUpperCase()}>`), /^250/);
    assert.match(await raw.command('AUTH PLAIN AGFwaWtleQB4'), /^50[02]/, 'no AUTH on the inbound port');
    raw.close();
    const r = await refusal(inbound.sendMail({ envelope: { from: 'spammer@evil.test', to: 'anyone@dest.test' }, raw: 'Subject: hi\r\n\r\nrelay me\r\n' }));
    assert.equal(r.code, 550);
  });

  test('garbage and reports that match nothing are accepted and dropped with a warning, and the listener keeps working', async () => {
    const before = await eventCount();
    const dan = delivered.get('dan@dest.test')!;
    const forgedReturnPath = postfixDsn({ verp: dan.verp.replace(/-[0-9a-f]{16}@/, '-ffffffffffffffff@'), rcpt: 'dan@dest.test', original: dan.raw });
    const garbage = [
      Buffer.from([0, 1, 2, 255, 254, 13, 10, 46, 46, 13, 10, 0x80, 0x81]).toString('latin1') + '\r\n',
      'Subject: Out of office\r\nContent-Type: text/plain\r\n\r\nI am away until Monday.\r\n',
      'Content-Type: multipart/report; report-type=delivery-status; boundary="x"\r\n\r\n--x\r\nContent-Type: message/delivery-status\r\n\r\nnonsense\r\n--x--\r\n',
      'Content-Type: multipart/report; report-type=feedback-report; boundary="y"\r\n\r\n--y\r\nContent-Type: text/plain\r\n\r\nno report part\r\n',
      forgedReturnPath,
      arfReport({ to: FBL, rcpt: 'nobody@dest.test', original: 'Message-ID: <unknown@nowhere.test>\r\n\r\nx\r\n' }),
    ];
    const logsBefore = world.app.logs.length;
    for (const raw of garbage) {
      const info = await report(FBL, raw);
      assert.match(info.response, /^250 /);
    }
    const dropped = world.app.logs.slice(logsBefore).map((l) => JSON.parse(l)).filter((l) => l.msg === 'inbound: report processed');
    assert.equal(dropped.length, garbage.length);
    for (const line of dropped) {
      assert.equal(line.level, 40, 'logged as a warning');
      assert.equal(line.remoteAddress, '127.0.0.1');
      assert.match(line.results[0], /^dropped: /);
    }
    assert.equal(await eventCount(), before);
    const info = await report(dan.verp, postfixDsn({ verp: dan.verp, rcpt: 'dan@dest.test', original: dan.raw, status: '4.4.7', diagnostic: '450 4.4.7 gave up' }));
    assert.match(info.response, /^250 /, 'still answering after the garbage');
    const last = (await eventsOf(world.app, dan.id)).at(-1);
    assert.deepEqual([last?.type, last?.data.type, last?.data.category], ['message.bounced', 'soft', 'expired'], 'a 4.x.x failure is final but soft');
    assert.equal(await status(dan.id), 'bounced');
  });
});
