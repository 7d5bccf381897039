// Deferrals follow the retry schedule (fake clock) until the queue lifetime; 5xx replies bounce by the rules.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { startSmtpSink, type SinkOptions, type SmtpSink } from '../support/smtp-sink';
import { attemptsOf, eventsOf, holdQueue, sendMessage, messageRow, pointMx, startWorld, type World } from './world';

const MINUTE = 60_000;

async function scenario(reply: SinkOptions['reply'], body: (world: World, sink: SmtpSink) => Promise<void>): Promise<void> {
  const sink = await startSmtpSink({ host: '127.0.0.2', reply });
  const world = await startWorld({ port: sink.port });
  try {
    pointMx(world.dns, 'dest.test', [{ name: 'mx.dest.test', address: '127.0.0.2' }]);
    await body(world, sink);
  } finally {
    await world.stop();
    await sink.close();
  }
}

/** Moves the clock to the message's next attempt and runs the MTA; returns the wait in ms. */
async function nextAttempt(world: World, id: string): Promise<number> {
  const due = Number((await messageRow(world, id)).next_attempt_at);
  const wait = due - world.clock.now();
  world.clock.set(due);
  await world.mta.runOnce();
  return wait;
}

const within = (actual: number, expected: number, label: string) =>
  assert.ok(actual >= expected * 0.9 && actual <= expected * 1.1, `${label}: ${actual} ms is not ${expected} ms ± 10 %`);

describe('retries and bounces', () => {
  it('defers on 451 twice, retrying after 1 and 5 minutes, then delivers', async () => {
    const reply: SinkOptions['reply'] = (ctx) => (ctx.stage === 'rcpt' && ctx.attempt <= 2 ? { code: 451, message: '4.7.1 greylisted, come back later' } : undefined);
    await scenario(reply, async (world, sink) => {
      const id = await sendMessage(world, { to: 'grey@dest.test' });
      await world.mta.runOnce();
      let row = await messageRow(world, id);
      assert.equal(row.status, 'deferred');
      assert.match(row.last_response, /^451 4\.7\.1 greylisted/);

      world.clock.advance(30_000);
      await world.mta.runOnce();
      assert.equal(sink.unaccepted.length + sink.messages.length, 0);
      assert.equal((await attemptsOf(world, id)).length, 1, 'nothing happens before the retry is due');

      within(30_000 + (await nextAttempt(world, id)), MINUTE, 'first retry');
      assert.equal((await messageRow(world, id)).status, 'deferred');
      within(await nextAttempt(world, id), 5 * MINUTE, 'second retry');
      await sink.waitFor(1);
      row = await messageRow(world, id);
      assert.equal(row.status, 'delivered');
      const attempts = await attemptsOf(world, id);
      assert.deepEqual(attempts.map((a: { outcome: string }) => a.outcome), ['deferred', 'deferred', 'delivered']);
      assert.deepEqual(attempts.map((a: { smtp_code: number }) => a.smtp_code), [451, 451, 250]);
      assert.equal(attempts[0].enhanced_code, '4.7.1');
      assert.deepEqual((await eventsOf(world, id)).map((e) => e.type), ['message.deferred', 'message.deferred', 'message.sent', 'message.delivered']);
    });
  });

  it('keeps deferring on 4xx until the 72 h queue lifetime ends in a soft bounce', async () => {
    const reply: SinkOptions['reply'] = (ctx) => (ctx.stage === 'rcpt' ? { code: 452, message: '4.2.2 mailbox over quota' } : undefined);
    await scenario(reply, async (world) => {
      const accepted = world.clock.now();
      const id = await sendMessage(world, { to: 'full@dest.test' });
      await world.mta.runOnce();
      const waits: number[] = [];
      while ((await messageRow(world, id)).status === 'deferred') waits.push(await nextAttempt(world, id));

      [1, 5, 15, 30, 60, 120, 240, 240].forEach((minutes, i) => within(waits[i], minutes * MINUTE, `retry ${i + 1}`));
      assert.equal(world.clock.now(), accepted + 72 * 60 * MINUTE, 'the last attempt happens when the lifetime ends');
      const row = await messageRow(world, id);
      assert.equal(row.status, 'bounced');
      assert.equal(row.attempts, waits.length + 1);
      const [bounce] = (await eventsOf(world, id)).filter((e) => e.type === 'message.bounced');
      assert.equal(bounce.data.type, 'soft');
      assert.equal(bounce.data.category, 'expired');
      assert.equal(bounce.data.code, 452);
      assert.match(String(bounce.data.diagnostic), /72 h.*452 4\.2\.2 mailbox over quota/);
      assert.equal(await world.app.db('suppressions').where({ email: 'full@dest.test' }).first(), undefined, 'a soft bounce suppresses nothing');
    });
  });

  it('bounces hard on 550 5.1.1, suppresses the address, and the next send to it ends suppressed', async () => {
    const reply: SinkOptions['reply'] = (ctx) => (ctx.stage === 'rcpt' && ctx.rcpt === 'gone@dest.test' ? { code: 550, message: '5.1.1 <gone@dest.test>: user unknown' } : undefined);
    await scenario(reply, async (world, sink) => {
      const id = await sendMessage(world, { to: 'gone@dest.test' });
      await world.mta.runOnce();
      assert.equal((await messageRow(world, id)).status, 'bounced');
      const [bounce] = (await eventsOf(world, id)).filter((e) => e.type === 'message.bounced');
      assert.deepEqual(
        [bounce.data.type, bounce.data.code, bounce.data.enhanced_code, bounce.data.category],
        ['hard', 550, '5.1.1', 'invalid_recipient'],
      );
      assert.equal(bounce.data.diagnostic, '550 5.1.1 <gone@dest.test>: user unknown');
      const suppression = await world.app.db('suppressions').where({ email: 'gone@dest.test' }).first();
      assert.equal(suppression.reason, 'hard_bounce');
      assert.equal(suppression.source_message_id, id);

      const connections = sink.connections;
      const billed = async () => {
        await world.app.deps.writer.flushCounters(); // summed in memory on PostgreSQL (database.counterFlushMs)
        return Number((await world.app.db('usage_counters').sum({ n: 'messages' }).first())?.n ?? 0);
      };
      holdQueue(world); // the count at accept is read before the MTA takes the send (and refunds it)
      const billedBefore = await billed();
      const again = await sendMessage(world, { to: 'Gone@dest.test' });
      assert.equal(await billed(), billedBefore + 1, 'a live send counts at accept');
      await world.mta.runOnce();
      const row = await messageRow(world, again);
      assert.equal(row.status, 'suppressed');
      assert.equal(await billed(), billedBefore, 'a suppressed send is never billed');
      assert.equal(row.next_attempt_at, null);
      assert.equal(sink.connections, connections, 'a suppressed address is never connected for');
      assert.deepEqual(await eventsOf(world, again), []);
    });
  });

  it('bounces soft on 552 5.2.2 (mailbox full) without suppressing', async () => {
    const reply: SinkOptions['reply'] = (ctx) => (ctx.stage === 'rcpt' ? { code: 552, message: '5.2.2 mailbox full' } : undefined);
    await scenario(reply, async (world) => {
      const id = await sendMessage(world, { to: 'stuffed@dest.test' });
      await world.mta.runOnce();
      const [bounce] = (await eventsOf(world, id)).filter((e) => e.type === 'message.bounced');
      assert.deepEqual([bounce.data.type, bounce.data.category], ['soft', 'mailbox_full']);
      assert.equal(await world.app.db('suppressions').where({ email: 'stuffed@dest.test' }).first(), undefined);
    });
  });
});
