// A live message goes out through the MTA to a loopback MX and arrives signed, from its pool address, with a VERP return-path.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { startSmtpSink } from '../support/smtp-sink';
import { verifyDkim } from '../support/mail';
import { parseVerp } from '../../src/delivery/verp';
import { attemptsOf, eventsOf, messageRow, pointMx, sendBatch, sendMessage, startWorld } from './world';

describe('delivery end to end', () => {
  it('delivers a message whose DKIM signature verifies on the received bytes, with the VERP return-path in the envelope', async () => {
    const sink = await startSmtpSink({ host: '127.0.0.1' });
    const world = await startWorld({ port: sink.port });
    try {
      pointMx(world.dns, 'dest.test', [{ name: 'mx.dest.test', address: '127.0.0.1' }]);
      const id = await sendMessage(world, { to: 'alice@dest.test', subject: 'Signed and sealed' });
      await world.mta.runOnce();

      const [received] = await sink.waitFor(1);
      assert.deepEqual(received.rcptTo, ['alice@dest.test']);
      assert.equal(received.clientHostname, 'out1.pigeon.test');
      assert.match(received.mailFrom, /^b\+msg_[0-9a-z]{26}-[0-9a-f]{16}@mta\.pigeon\.test$/);
      assert.equal(parseVerp(world.app.config, received.mailFrom), id);
      const [dkim] = await verifyDkim(received.raw, world.dns.address);
      assert.equal(dkim.result, 'pass', dkim.info);
      assert.equal(dkim.signingDomain, 'sender.test');

      const row = await messageRow(world, id);
      assert.equal(row.status, 'delivered');
      assert.equal(row.next_attempt_at, null);
      assert.equal(row.lease_owner, null);
      assert.equal(Number(row.delivered_at), world.clock.now());
      const [attempt] = await attemptsOf(world, id);
      assert.equal(attempt.outcome, 'delivered');
      assert.equal(attempt.mx_host, 'mx.dest.test');
      assert.equal(attempt.source_ip, '127.0.0.1');
      assert.equal(attempt.smtp_code, 250);
      const events = await eventsOf(world, id);
      assert.deepEqual(events.map((e) => e.type), ['message.sent', 'message.delivered']);
      assert.equal(events[0].data.mx_host, 'mx.dest.test');
      assert.equal(events[1].data.to, 'alice@dest.test');
      assert.equal(events[1].data.delivered_at, new Date(world.clock.now()).toISOString());
      assert.equal(events[1].data.sandbox, undefined);
      assert.equal(row.dkim, `d=sender.test s=${world.selector} a=rsa-sha256`);
      // Delivered at the first attempt: no retry will need the signed bytes, so they are not written back.
      const content = await world.app.db('message_contents').where({ id: row.content_id }).first();
      assert.equal(Boolean(content.signed), false);
    } finally {
      await world.stop();
      await sink.close();
    }
  });

  it('signs content shared by several recipients once, and every copy carries the same signature', async () => {
    const sink = await startSmtpSink({ host: '127.0.0.1' });
    const world = await startWorld({ port: sink.port });
    try {
      pointMx(world.dns, 'dest.test', [{ name: 'mx.dest.test', address: '127.0.0.1' }]);
      const ids = await sendBatch(world, { to: ['a@dest.test', 'b@dest.test', 'c@dest.test'] });
      const contents = new Set(await Promise.all(ids.map(async (id) => (await messageRow(world, id)).content_id)));
      assert.equal(contents.size, 1, 'the copies of one send share their content');
      await world.mta.runOnce();
      const received = await sink.waitFor(3);
      const signatures = received.map((m) => /^DKIM-Signature:[^]*?\r\n(?=\S)/m.exec(m.raw.toString())?.[0]);
      assert.equal(new Set(signatures).size, 1);
      for (const m of received) assert.equal((await verifyDkim(m.raw, world.dns.address))[0].result, 'pass');
    } finally {
      await world.stop();
      await sink.close();
    }
  });

  it('never claims a cancelled message and honours send_at', async () => {
    const sink = await startSmtpSink({ host: '127.0.0.1' });
    const world = await startWorld({ port: sink.port });
    try {
      pointMx(world.dns, 'dest.test', [{ name: 'mx.dest.test', address: '127.0.0.1' }]);
      const later = await sendMessage(world, { to: 'later@dest.test', sendAt: world.clock.now() + 3_600_000 });
      const cancelled = await sendMessage(world, { to: 'cancelled@dest.test', sendAt: world.clock.now() + 60_000 });
      await world.app.db('messages').where({ id: cancelled }).update({ status: 'cancelled', next_attempt_at: null });
      await world.mta.runOnce();
      assert.equal((await messageRow(world, later)).status, 'scheduled');

      world.clock.advance(3_600_000);
      await world.mta.runOnce();
      await sink.waitFor(1);
      assert.deepEqual(sink.messages.map((m) => m.rcptTo[0]), ['later@dest.test']);
      assert.equal((await messageRow(world, later)).status, 'delivered');
      assert.equal((await messageRow(world, cancelled)).status, 'cancelled');
    } finally {
      await world.stop();
      await sink.close();
    }
  });
});
