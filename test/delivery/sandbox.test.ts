// Sandbox (test keys): signed like live mail, never leaves the machine; simulator addresses produce every outcome.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { startSmtpSink, type SmtpSink } from '../support/smtp-sink';
import { attemptsOf, eventsOf, sendMessage, messageRow, pointMx, startWorld, type World } from './world';

async function sandbox(body: (world: World, sink: SmtpSink) => Promise<void>): Promise<void> {
  const sink = await startSmtpSink({ host: '127.0.0.1' });
  const world = await startWorld({ port: sink.port });
  try {
    // Even a resolvable recipient domain with a listening MX must never see sandbox mail.
    pointMx(world.dns, 'dest.test', [{ name: 'mx.dest.test', address: '127.0.0.1' }]);
    await body(world, sink);
    assert.equal(sink.connections, 0, 'sandbox mail never leaves the machine');
  } finally {
    await world.stop();
    await sink.close();
  }
}

/** Runs the MTA at each retry until the message leaves the queue. */
async function untilSettled(world: World, id: string): Promise<string[]> {
  const statuses: string[] = [];
  for (;;) {
    await world.mta.runOnce();
    const row = await messageRow(world, id);
    // The running MTA's own timer (real time) may have claimed the retry since: let that run finish first.
    if (row.status === 'sending') continue;
    statuses.push(row.status);
    if (row.next_attempt_at === null) return statuses;
    world.clock.set(Number(row.next_attempt_at));
  }
}

describe('sandbox', () => {
  it('walks an ordinary message through sent and delivered, signed, with events marked sandbox', async () => {
    await sandbox(async (world) => {
      const id = await sendMessage(world, { to: 'alice@dest.test', mode: 'test' });
      await world.mta.runOnce();
      const row = await messageRow(world, id);
      assert.equal(row.status, 'delivered');
      assert.ok(row.sent_at && row.delivered_at);
      const events = await eventsOf(world, id);
      assert.deepEqual(events.map((e) => e.type), ['message.sent', 'message.delivered']);
      for (const e of events) assert.equal(e.data.sandbox, true);
      assert.equal(row.dkim, `d=sender.test s=${world.selector} a=rsa-sha256`);
      assert.equal((await attemptsOf(world, id))[0].mx_host, 'sandbox.pigeon.invalid');
    });
  });

  it('sends a message from a domain without a key unsigned, and says so', async () => {
    await sandbox(async (world) => {
      const id = await sendMessage(world, { to: 'alice@dest.test', mode: 'test', from: 'app@keyless.test' });
      await world.mta.runOnce();
      const row = await messageRow(world, id);
      assert.equal(row.status, 'delivered');
      assert.equal(row.dkim, 'unsigned: no DKIM key for keyless.test');
      assert.ok(world.app.logs.some((l) => l.includes('no DKIM key for the From domain') && l.includes(id)));
    });
  });

  it('bounce@simulator.invalid bounces hard and suppresses the address', async () => {
    await sandbox(async (world) => {
      const id = await sendMessage(world, { to: 'bounce@simulator.invalid', mode: 'test' });
      assert.deepEqual(await untilSettled(world, id), ['bounced']);
      const [bounce] = await eventsOf(world, id);
      assert.equal(bounce.type, 'message.bounced');
      assert.deepEqual([bounce.data.type, bounce.data.code, bounce.data.enhanced_code, bounce.data.category, bounce.data.sandbox], ['hard', 550, '5.1.1', 'invalid_recipient', true]);
      assert.equal((await world.app.db('suppressions').where({ email: 'bounce@simulator.invalid' }).first()).reason, 'hard_bounce');
    });
  });

  it('soft-bounce@simulator.invalid is deferred, then bounces soft', async () => {
    await sandbox(async (world) => {
      const accepted = world.clock.now();
      const id = await sendMessage(world, { to: 'soft-bounce@simulator.invalid', mode: 'test' });
      assert.deepEqual(await untilSettled(world, id), ['deferred', 'bounced']);
      assert.ok(world.clock.now() - accepted <= 1_100, 'sandbox retries come after seconds, not minutes');
      const events = await eventsOf(world, id);
      assert.deepEqual(events.map((e) => [e.type, e.data.type, e.data.category]), [['message.deferred', undefined, undefined], ['message.bounced', 'soft', 'mailbox_full']]);
      assert.equal(events[0].data.sandbox, true);
      assert.equal(await world.app.db('suppressions').where({ email: 'soft-bounce@simulator.invalid' }).first(), undefined);
    });
  });

  it('complaint@simulator.invalid is delivered, then complained about, and suppressed', async () => {
    await sandbox(async (world) => {
      const id = await sendMessage(world, { to: 'complaint@simulator.invalid', mode: 'test' });
      assert.deepEqual(await untilSettled(world, id), ['delivered']);
      const events = await eventsOf(world, id);
      assert.deepEqual(events.map((e) => e.type), ['message.sent', 'message.delivered', 'message.complained']);
      assert.equal(events[2].data.feedback_type, 'abuse');
      assert.equal((await world.app.db('suppressions').where({ email: 'complaint@simulator.invalid' }).first()).reason, 'complaint');
    });
  });

  it('delay@simulator.invalid is deferred twice, then delivered', async () => {
    await sandbox(async (world) => {
      const id = await sendMessage(world, { to: 'delay@simulator.invalid', mode: 'test' });
      assert.deepEqual(await untilSettled(world, id), ['deferred', 'deferred', 'delivered']);
      assert.deepEqual((await attemptsOf(world, id)).map((a: { smtp_code: number }) => a.smtp_code), [451, 451, 250]);
      assert.deepEqual((await eventsOf(world, id)).map((e) => e.type), ['message.deferred', 'message.deferred', 'message.sent', 'message.delivered']);
    });
  });

  it('a +tag keeps the simulator behaviour, so repeated tests are not stopped by the first suppression', async () => {
    await sandbox(async (world) => {
      const first = await sendMessage(world, { to: 'bounce+1@simulator.invalid', mode: 'test' });
      const second = await sendMessage(world, { to: 'bounce+2@simulator.invalid', mode: 'test' });
      await world.mta.runOnce();
      assert.equal((await messageRow(world, first)).status, 'bounced');
      assert.equal((await messageRow(world, second)).status, 'bounced');
      const again = await sendMessage(world, { to: 'bounce+1@simulator.invalid', mode: 'test' });
      await world.mta.runOnce();
      assert.equal((await messageRow(world, again)).status, 'suppressed');
    });
  });
});
