// Attacks on the inbound listener: forged complaints, replayed delay notices, oversized reports, floods.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import nodemailer from 'nodemailer';
import { parseVerp } from '../../src/delivery';
import { DELAY_NOTE_INTERVAL_MS } from '../../src/smtp/inbound-outcomes';
import { getSuppression } from '../../src/suppressions/store';
import { RawSmtp, submissionClient } from './helpers';
import { arfReport, postfixDsn } from './reports';
import { eventsOf, SENDER_DOMAIN, startRelayWorld, type RelayWorld } from './world';

const FBL = 'fbl@mx.pigeon.test';

interface Copy {
  id: string;
  verp: string;
  raw: string;
}

describe('inbound attacks', () => {
  let world: RelayWorld;
  let inbound: nodemailer.Transporter;
  const report = (to: string, raw: string) => inbound.sendMail({ envelope: { from: '', to }, raw });
  const complaints = async (id: string) => (await eventsOf(world.app, id)).filter((e) => e.type === 'message.complained').length;
  const suppressed = async (email: string) => (await getSuppression(world.app.db, world.app.accountId, email))?.reason;
  const reportLines = (from: number) => world.app.logs.slice(from).map((l) => JSON.parse(l)).filter((l) => l.msg === 'inbound: report processed');

  /** Sends one message through the relay and returns its delivered copies by recipient. */
  async function sendAndDeliver(rcpts: { to: string[]; cc?: string[]; bcc?: string[] }): Promise<Map<string, Copy>> {
    const already = world.sink.messages.length;
    const client = submissionClient(world.app.submissionPort, world.liveKey);
    await client.sendMail({ from: `Shop <orders@${SENDER_DOMAIN}>`, subject: 'Offers', text: 'Offers!', ...rcpts });
    client.close();
    const count = rcpts.to.length + (rcpts.cc?.length ?? 0) + (rcpts.bcc?.length ?? 0);
    await world.mta.runOnce();
    const copies = new Map<string, Copy>();
    for (const m of (await world.sink.waitFor(already + count)).slice(already)) {
      copies.set(m.rcptTo[0], { id: parseVerp(world.app.config, m.mailFrom)!, verp: m.mailFrom, raw: m.raw.toString('latin1') });
    }
    return copies;
  }

  before(async () => {
    // replaying 200 reports from one address is the point of one test here, so the per-address rate is out of the way
    world = await startRelayWorld({ feedbackAddress: FBL, inbound: { messagesPerMinutePerClient: 10_000 } });
    inbound = nodemailer.createTransport({ host: '127.0.0.1', port: world.app.inboundPort, secure: false, tls: { rejectUnauthorized: false }, pool: true, maxConnections: 4 });
  });
  after(async () => {
    inbound.close();
    await world.stop();
  });

  test('a forged ARF report naming another recipient\'s Message-ID suppresses nobody', async () => {
    const copies = await sendAndDeliver({ to: ['mallory@dest.test', 'victim@dest.test', 'other@dest.test'] });
    const mallory = copies.get('mallory@dest.test')!;
    const logsBefore = world.app.logs.length;
    for (const rcpt of ['victim@dest.test', 'other@dest.test']) {
      // Mallory returns her own copy (same Message-ID as the others) without its Return-Path and names someone else
      const info = await report(FBL, arfReport({ to: FBL, rcpt, original: mallory.raw }));
      assert.match(info.response, /^250 /, 'accepted, so the sender does not retry');
    }
    for (const [rcpt, copy] of copies) {
      assert.equal(await complaints(copy.id), 0, rcpt);
      assert.equal(await suppressed(rcpt), undefined, rcpt);
    }
    const lines = reportLines(logsBefore);
    assert.equal(lines.length, 2);
    for (const line of lines) {
      assert.equal(line.level, 40, 'a warning');
      assert.equal(line.remoteAddress, '127.0.0.1');
      assert.match(line.results[0], /^dropped: feedback report names no message of ours by a valid VERP address \(Message-ID <.+> alone does not identify a copy\)/);
    }
  });

  test('a complaint for one copy of a send suppresses only that copy\'s recipient', async () => {
    const copies = await sendAndDeliver({ to: ['ann@dest.test'], cc: ['ben@dest.test'], bcc: ['cat@dest.test'] });
    const [ann, ben, cat] = ['ann@dest.test', 'ben@dest.test', 'cat@dest.test'].map((r) => copies.get(r)!);
    const messageId = (raw: string) => raw.match(/^Message-ID: (.*)$/im)?.[1];
    assert.equal(messageId(ann.raw), messageId(cat.raw), 'to, cc and bcc copies share the Message-ID');
    // Ann complains about her copy, once by its VERP Return-Path and once to its VERP address, naming the others as recipients
    await report(FBL, arfReport({ to: FBL, rcpt: 'ben@dest.test', original: `Return-Path: <${ann.verp}>\r\n${ann.raw}` }));
    await report(ann.verp, arfReport({ to: ann.verp, rcpt: 'cat@dest.test', original: ann.raw }));
    // and by the shared Message-ID alone, for each of the others
    for (const rcpt of ['ben@dest.test', 'cat@dest.test']) await report(FBL, arfReport({ to: FBL, rcpt, original: ann.raw }));
    // a bounce to Ann's VERP address about the other copies' recipients is not about Ann's copy either
    const twoBlocks = postfixDsn({ verp: ann.verp, rcpt: 'ben@dest.test', original: ann.raw })
      .replace('Final-Recipient: rfc822; ben@dest.test', 'Final-Recipient: rfc822; cat@dest.test\r\nAction: failed\r\nStatus: 5.1.1\r\n\r\nFinal-Recipient: rfc822; ben@dest.test');
    await report(ann.verp, twoBlocks);

    assert.equal(await complaints(ann.id), 1);
    assert.equal(await suppressed('ann@dest.test'), 'complaint');
    for (const other of [ben, cat]) {
      assert.deepEqual(await eventsOf(world.app, other.id).then((es) => es.map((e) => e.type)), ['message.queued', 'message.sent', 'message.delivered']);
    }
    assert.equal(await suppressed('ben@dest.test'), undefined);
    assert.equal(await suppressed('cat@dest.test'), undefined);
  });

  test('200 replayed delay DSNs for one VERP address act at most once (and none after the message has bounced)', async () => {
    const copy = (await sendAndDeliver({ to: ['slow@dest.test'] })).get('slow@dest.test')!;
    const delay = postfixDsn({ verp: copy.verp, rcpt: 'slow@dest.test', original: copy.raw, action: 'delayed', status: '4.4.1', diagnostic: '451 4.4.1 try later' });
    const replay = async (times: number) => {
      const from = world.app.logs.length;
      const infos = await Promise.all(Array.from({ length: times }, () => report(copy.verp, delay)));
      assert.ok(infos.every((i) => /^250 /.test(i.response)));
      return reportLines(from).map((l) => l.results[0].replace(`${copy.id}: `, ''));
    };
    const row = () => world.app.db('messages').where({ id: copy.id }).first();

    const first = await replay(200);
    assert.equal(first.filter((r) => r === 'recorded delay notice (not a bounce)').length, 1, first.slice(0, 3).join('\n'));
    assert.equal(first.filter((r) => r === 'ignored (too_soon) delay notice (not a bounce)').length, 199);
    assert.deepEqual((await eventsOf(world.app, copy.id)).map((e) => e.type), ['message.queued', 'message.sent', 'message.delivered'], 'no message.bounced');
    assert.equal((await row()).status, 'delivered');
    assert.match((await row()).last_response, /^Delayed further on: 4\.4\.1 451 4\.4\.1 try later/);

    world.clock.advance(DELAY_NOTE_INTERVAL_MS);
    assert.deepEqual(await replay(3).then((r) => r.filter((x) => x.startsWith('recorded')).length), 1, 'one more after the interval');

    await report(copy.verp, postfixDsn({ verp: copy.verp, rcpt: 'slow@dest.test', original: copy.raw }));
    assert.equal((await row()).status, 'bounced');
    world.clock.advance(DELAY_NOTE_INTERVAL_MS);
    assert.deepEqual(await replay(5), Array(5).fill('ignored (not_sent) delay notice (not a bounce)'));
    assert.match((await row()).last_response, /User unknown/, 'the final bounce stays the last word');
    assert.equal((await eventsOf(world.app, copy.id)).filter((e) => e.type === 'message.bounced').length, 1);
  });

  test('a 12 MB report is refused at SIZE and the event loop keeps turning', async () => {
    const copy = (await sendAndDeliver({ to: ['big@dest.test'] })).get('big@dest.test')!;
    const twelveMb = 12 * 1024 * 1024;
    const lag = monitorEventLoopDelay({ resolution: 10 });
    lag.enable();
    const raw = await RawSmtp.connect(world.app.inboundPort);
    assert.match(await raw.command('EHLO bounce.dest.test'), /^250[- ]SIZE/m, 'SIZE is advertised');
    assert.match(await raw.command(`MAIL FROM:<> SIZE=${twelveMb}`), /^552 5\.3\.4 /);
    // a sender that does not declare the size is refused at the end of its data, which is counted, not kept
    assert.match(await raw.command('MAIL FROM:<>'), /^250/);
    assert.match(await raw.command(`RCPT TO:<${copy.verp}>`), /^250/);
    assert.match(await raw.command('DATA'), /^354/);
    const head = postfixDsn({ verp: copy.verp, rcpt: 'big@dest.test', original: copy.raw }).replace(/--[^\r\n]*--\r\n$/, '');
    raw.write(head);
    const filler = Buffer.from(`${'A'.repeat(76)}\r\n`.repeat(13_000));
    for (let sent = 0; sent < twelveMb; sent += filler.length) {
      if (!raw.socket.write(filler)) await new Promise((resolve) => raw.socket.once('drain', resolve));
    }
    assert.match(await raw.command('.'), /^552 5\.3\.4 /);
    raw.close();
    lag.disable();
    assert.ok(lag.max < 1e9, `the event loop stalled for ${Math.round(lag.max / 1e6)} ms`);
    assert.equal((await world.app.db('messages').where({ id: copy.id }).first()).status, 'delivered', 'nothing of it was acted on');
    assert.equal((await world.app.api.get('/healthz')).status, 200);
  });
});

describe('inbound rate limits per sender address', () => {
  let world: RelayWorld;
  before(async () => {
    world = await startRelayWorld({ feedbackAddress: FBL, inbound: { messagesPerMinutePerClient: 3, connectionsPerMinutePerClient: 4 } });
  });
  after(() => world.stop());

  const mailFrom = async (raw: RawSmtp) => {
    const reply = await raw.command('MAIL FROM:<>');
    await raw.command('RSET');
    return reply;
  };

  test('a sender over the per-IP report rate gets 450', async () => {
    const raw = await RawSmtp.connect(world.app.inboundPort, '127.0.0.2');
    await raw.command('EHLO flood.test');
    for (let i = 0; i < 3; i++) assert.match(await mailFrom(raw), /^250/);
    assert.match(await mailFrom(raw), /^450 4\.7\.1 Too many reports from 127\.0\.0\.2 this minute; try again in 60 s/);
    const neighbour = await RawSmtp.connect(world.app.inboundPort, '127.0.0.3');
    await neighbour.command('EHLO mx.neighbour.test');
    assert.match(await mailFrom(neighbour), /^250/, 'other senders are not throttled');
    neighbour.close();
    world.clock.advance(60_000);
    assert.match(await mailFrom(raw), /^250/, 'a new minute, a new allowance');
    raw.close();
  });

  test('a sender opening connections over the per-IP connection rate gets 421', async () => {
    const opened: RawSmtp[] = [];
    for (let i = 0; i < 4; i++) {
      const raw = await RawSmtp.connect(world.app.inboundPort, '127.0.0.4');
      assert.match(raw.greeting, /^220 /);
      raw.close();
      opened.push(raw);
    }
    const refused = await RawSmtp.connect(world.app.inboundPort, '127.0.0.4');
    assert.match(refused.greeting, /^421 4\.7\.0 Too many connections from 127\.0\.0\.4 this minute/);
    refused.close();
    const other = await RawSmtp.connect(world.app.inboundPort, '127.0.0.5');
    assert.match(other.greeting, /^220 /);
    other.close();
  });
});
