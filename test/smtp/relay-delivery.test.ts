// A message relayed over SMTP goes all the way: queued, signed, delivered to the recipient's MX with the X-Pigeon options honoured and gone.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { parseVerp } from '../../src/delivery';
import { verifyDkim } from '../support/mail';
import { ids, submissionClient, type Transport } from './helpers';
import { eventsOf, SENDER_DOMAIN, startRelayWorld, type RelayWorld } from './world';

describe('relayed mail, end to end', () => {
  let world: RelayWorld;
  let live: Transport;
  let sandbox: Transport;
  before(async () => {
    world = await startRelayWorld();
    live = submissionClient(world.app.submissionPort, world.liveKey, { pool: true, maxConnections: 1 });
    sandbox = submissionClient(world.app.submissionPort, world.testKey, { pool: true, maxConnections: 1 });
  });
  after(async () => {
    live.close();
    sandbox.close();
    await world.stop();
  });

  test('is delivered to the MX DKIM-signed, with a VERP return-path, tags and metadata in its events and no X-Pigeon header left', async () => {
    const info = await live.sendMail({
      from: `Shop <orders@${SENDER_DOMAIN}>`, to: ['alice@dest.test', 'bob@dest.test'], subject: 'Your receipt', text: 'Thanks!',
      headers: { 'X-Pigeon-Tags': 'receipt', 'X-Pigeon-Metadata': '{"order":"7"}', 'X-Pigeon-Track-Clicks': 'false' },
    });
    const queued = ids(info.response);
    assert.equal(queued.length, 2);
    await world.mta.runOnce();
    const received = await world.sink.waitFor(2);
    assert.deepEqual(received.map((m) => m.rcptTo[0]).sort(), ['alice@dest.test', 'bob@dest.test']);
    for (const m of received) {
      const text = m.raw.toString('latin1');
      assert.doesNotMatch(text, /X-Pigeon-/i);
      assert.match(text, /^Subject: Your receipt$/m);
      const [dkim] = await verifyDkim(m.raw, world.dns.address);
      assert.equal(dkim.result, 'pass', dkim.info);
      assert.equal(dkim.signingDomain, SENDER_DOMAIN);
      const id = parseVerp(world.app.config, m.mailFrom);
      assert.ok(id && queued.includes(id), `the return-path ${m.mailFrom} names one of the relayed messages`);
    }
    for (const id of queued) {
      const events = await eventsOf(world.app, id);
      assert.deepEqual(events.map((e) => e.type), ['message.queued', 'message.sent', 'message.delivered']);
      for (const e of events) {
        assert.deepEqual(e.data.tags, ['receipt']);
        assert.deepEqual(e.data.metadata, { order: '7' });
        assert.equal(e.data.sandbox, undefined);
      }
    }
  });

  test('X-Pigeon-Send-At holds the message until its time', async () => {
    const before = world.sink.messages.length;
    const at = new Date(world.clock.now() + 2 * 3_600_000).toISOString();
    const info = await live.sendMail({
      from: `orders@${SENDER_DOMAIN}`, to: 'carol@dest.test', subject: 'Later', text: 'Scheduled', headers: { 'X-Pigeon-Send-At': at },
    });
    const [id] = ids(info.response);
    await world.mta.runOnce();
    assert.equal(world.sink.messages.length, before);
    assert.equal((await world.app.db('messages').where({ id }).first()).status, 'scheduled');
    world.clock.advance(2 * 3_600_000);
    await world.mta.runOnce();
    const [arrived] = (await world.sink.waitFor(before + 1)).slice(before);
    assert.deepEqual(arrived.rcptTo, ['carol@dest.test']);
    assert.equal((await world.app.db('messages').where({ id }).first()).status, 'delivered');
  });

  test('a sandbox key walks the sandbox lifecycle: signed, never sent, simulator outcomes, events marked sandbox, no usage', async () => {
    const before = world.sink.connections;
    const usageBefore = await world.app.db('usage_counters').sum({ n: 'messages' }).first();
    const info = await sandbox.sendMail({
      envelope: { from: `app@${SENDER_DOMAIN}`, to: ['dave@dest.test', 'bounce@simulator.invalid', 'complaint@simulator.invalid'] },
      raw: `From: app@${SENDER_DOMAIN}\r\nTo: dave@dest.test\r\nSubject: Sandbox\r\nDate: Mon, 05 Jan 2026 09:00:00 +0000\r\n\r\nTest\r\n`,
    });
    const [dave, bounce, complaint] = ids(info.response);
    await world.mta.runOnce();
    const status = async (id: string) => (await world.app.db('messages').where({ id }).first()).status;
    assert.deepEqual([await status(dave), await status(bounce), await status(complaint)], ['delivered', 'bounced', 'delivered']);
    assert.deepEqual((await eventsOf(world.app, dave)).map((e) => e.type), ['message.queued', 'message.sent', 'message.delivered']);
    const bounced = (await eventsOf(world.app, bounce)).at(-1);
    assert.equal(bounced?.type, 'message.bounced');
    assert.equal(bounced?.data.type, 'hard');
    assert.equal((await eventsOf(world.app, complaint)).at(-1)?.type, 'message.complained');
    for (const id of [dave, bounce, complaint]) for (const e of await eventsOf(world.app, id)) assert.equal(e.data.sandbox, true);
    const row = await world.app.db('messages').where({ id: dave }).first();
    assert.match(row.dkim, /^d=\S+ s=\S+ a=rsa-sha256/, 'signed, though sandbox mail goes nowhere');
    assert.equal(world.sink.connections, before, 'sandbox mail never leaves the machine');
    assert.deepEqual(await world.app.db('usage_counters').sum({ n: 'messages' }).first(), usageBefore);
  });
});
